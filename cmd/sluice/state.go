package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"unicode/utf8"

	"github.com/sluicehq/sluice/state"
	"github.com/spf13/cobra"
)

func newStateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Inspect a pipeline's committed state",
	}
	cmd.AddCommand(newStateDumpCmd())
	return cmd
}

// dumpLine is one line of `sluice state dump`. Keys and values that are
// valid UTF-8 are written as strings, others in base64 under *_base64.
type dumpLine struct {
	Table       string  `json:"table"`
	Key         string  `json:"key,omitempty"`
	KeyBase64   string  `json:"key_base64,omitempty"`
	Value       *string `json:"value,omitempty"` // nil only when ValueBase64 holds the value
	ValueBase64 string  `json:"value_base64,omitempty"`
}

func newStateDumpCmd() *cobra.Command {
	var dataDir string
	var tables []string
	cmd := &cobra.Command{
		Use:   "dump --data-dir DIR [--table T]...",
		Short: "Print committed state as JSON Lines: one {table, key, value} object per line, in key order",
		Long: `Print the committed state of a pipeline's data directory as JSON Lines, one
object per key: {"table": "counts", "key": "word", "value": "42"}. Keys and values
that are not valid UTF-8 appear base64-encoded as key_base64 and value_base64.

The data directory is locked while a pipeline runs on it: stop the pipeline
first. Committed source positions are printed to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				return &usageError{"state dump: --data-dir is required (the pipeline's data_dir, by default .sluice/<pipeline> beside the pipeline file)"}
			}
			r, err := state.OpenReadOnly(filepath.Join(dataDir, "state"))
			if err != nil {
				return err
			}
			defer r.Close()
			all := r.Tables()
			if len(tables) == 0 {
				tables = all
			}
			for _, t := range tables {
				if !slices.Contains(all, t) {
					return fmt.Errorf("state dump: no table %q in %s (tables: %v)", t, dataDir, all)
				}
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			enc := json.NewEncoder(w)
			for _, t := range tables {
				err := r.Scan(t, func(key, value []byte) error {
					l := dumpLine{Table: t}
					if utf8.Valid(key) {
						l.Key = string(key)
					} else {
						l.KeyBase64 = base64.StdEncoding.EncodeToString(key)
					}
					if utf8.Valid(value) {
						v := string(value)
						l.Value = &v
					} else {
						l.ValueBase64 = base64.StdEncoding.EncodeToString(value)
					}
					return enc.Encode(l)
				})
				if err != nil {
					return err
				}
			}
			sources, sinks := splitPositions(r.Positions())
			for _, src := range slices.Sorted(maps.Keys(sources)) {
				fmt.Fprintf(cmd.ErrOrStderr(), "source %s position = %d\n", src, sources[src])
			}
			for _, snk := range slices.Sorted(maps.Keys(sinks)) {
				fmt.Fprintf(cmd.ErrOrStderr(), "sink %s offset = %d\n", snk, sinks[snk])
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the pipeline's data directory")
	cmd.Flags().StringSliceVar(&tables, "table", nil, "dump only these tables (repeatable)")
	return cmd
}
