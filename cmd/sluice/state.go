package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/runner"
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

// dumpFlags are the flags of `sluice state dump`.
type dumpFlags struct {
	dataDir, config, addr, token string
	tables                       []string
	prefix                       string
	keyGroup                     int
	limit                        int
	pageSize                     int
	timeout                      time.Duration
}

// query is the state.Query of one table's pages.
func (f *dumpFlags) query(table string) state.Query {
	return state.Query{Table: table, Prefix: []byte(f.prefix), KeyGroup: f.keyGroup, Limit: f.pageSize}
}

func newStateDumpCmd() *cobra.Command {
	var f dumpFlags
	cmd := &cobra.Command{
		Use:   "dump [-c PIPELINE | --data-dir DIR | --addr HOST:PORT] [--table T]... [--prefix P] [--key-group N]",
		Short: "Print committed state as JSON Lines: one {table, key, value, key_group} object per line",
		Long: `Print the committed state of a pipeline as JSON Lines, one object per key:
{"table": "counts", "key": "word", "value": "42", "key_group": 3}. Keys and values
that are not valid UTF-8 appear base64-encoded as key_base64 and value_base64.
A namespaced key (window or join state) adds "namespace" and "user" fields;
"key" is then its routing key. Entries come by table, then key group, then key.

While the pipeline runs, its data directory is locked and the state is read
from the host's HTTP API (GET /api/v1/state), page by page: -c PIPELINE gives
the address (http.addr) and the data directory holding the token; --addr
names the host directly. A stopped pipeline's data directory is opened
read-only, also on a read-only file system, and its committed source
positions are printed to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataDir, "data-dir", "", "the pipeline's data directory (default: data_dir of -c PIPELINE)")
	fl.StringVarP(&f.config, "config", "c", "", "the pipeline's file, for its data directory and HTTP address")
	fl.StringVar(&f.addr, "addr", "", "read from the running host's HTTP API at this address (default when the pipeline runs: http.addr of -c PIPELINE, else "+pipeline.DefaultHTTPAddr+")")
	fl.StringVar(&f.token, "token", "", "the API token, needed under http.auth: all (default: $"+runner.TokenEnv+", else DATA-DIR/"+runner.TokenFile+")")
	fl.StringSliceVar(&f.tables, "table", nil, "dump only these tables (repeatable)")
	fl.StringVar(&f.prefix, "prefix", "", "dump only the keys that start with this")
	fl.IntVar(&f.keyGroup, "key-group", -1, "dump only the keys of this key group")
	fl.IntVar(&f.limit, "limit", 0, "print at most this many entries (0: all)")
	fl.IntVar(&f.pageSize, "page-size", 1000, "entries read per page, 1.."+strconv.Itoa(state.MaxQueryLimit))
	fl.DurationVar(&f.timeout, "timeout", time.Minute, "how long to wait for each page from the host")
	return cmd
}

// run dumps from the API or the data directory, whichever applies.
func (f *dumpFlags) run(ctx context.Context, stdout, stderr io.Writer) error {
	if f.pageSize < 1 || f.pageSize > state.MaxQueryLimit {
		return &usageError{fmt.Sprintf("state dump: --page-size %d out of range 1..%d", f.pageSize, state.MaxQueryLimit)}
	}
	if f.limit < 0 {
		return &usageError{fmt.Sprintf("state dump: --limit %d: want 0 (all) or more", f.limit)}
	}
	if f.keyGroup < -1 {
		return &usageError{fmt.Sprintf("state dump: --key-group %d: want a key group, 0 or more", f.keyGroup)}
	}
	configAddr := ""
	if f.config != "" {
		p, err := pipeline.Load(f.config)
		if err != nil {
			return err
		}
		configAddr = p.HTTP.Addr
		if f.dataDir == "" {
			f.dataDir = p.DataDir
		}
	}
	w := bufio.NewWriter(stdout)
	out := &dumpWriter{enc: json.NewEncoder(w), left: f.limit}
	if f.addr != "" {
		if err := f.fromAPI(ctx, out); err != nil {
			return err
		}
		return w.Flush()
	}
	if f.dataDir == "" {
		return &usageError{"state dump: --data-dir is required (the pipeline's data_dir, by default .sluice/<pipeline> beside the pipeline file), or -c PIPELINE, or --addr HOST:PORT of a running host"}
	}
	r, err := state.OpenReadOnly(filepath.Join(f.dataDir, "state"))
	if errors.Is(err, state.ErrLocked) {
		// The pipeline runs: ask it.
		switch {
		case configAddr == "":
			f.addr = pipeline.DefaultHTTPAddr
		case configAddr == "off":
			return fmt.Errorf("state dump: %w; the pipeline's http api is off (http.addr: off): stop the pipeline, or give --addr of its API", err)
		case strings.HasSuffix(configAddr, ":0"):
			return fmt.Errorf("state dump: %w; the pipeline's http.addr %s picks a port at start: give --addr with the port it logged", err, configAddr)
		default:
			f.addr = configAddr
		}
		if err := f.fromAPI(ctx, out); err != nil {
			return fmt.Errorf("%w (the data directory %s is locked by a running pipeline, so its API was asked)", err, f.dataDir)
		}
		return w.Flush()
	}
	if err != nil {
		return err
	}
	defer r.Close()
	if err := f.fromReader(r, out); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	sources, sinks := splitPositions(r.Positions())
	for _, src := range slices.Sorted(maps.Keys(sources)) {
		fmt.Fprintf(stderr, "source %s position = %d\n", src, sources[src])
	}
	for _, snk := range slices.Sorted(maps.Keys(sinks)) {
		fmt.Fprintf(stderr, "sink %s offset = %d\n", snk, sinks[snk])
	}
	return nil
}

// errDumpDone stops a dump that printed --limit entries.
var errDumpDone = errors.New("limit reached")

// dumpWriter prints entries until left (when the limit is set) runs out.
type dumpWriter struct {
	enc  *json.Encoder
	left int // entries still to print; 0 with no --limit means all
}

// write prints e; it returns errDumpDone once the limit is reached.
func (d *dumpWriter) write(e api.StateEntry, limited bool) error {
	if err := d.enc.Encode(e); err != nil {
		return err
	}
	if limited {
		d.left--
		if d.left == 0 {
			return errDumpDone
		}
	}
	return nil
}

// fromReader dumps a stopped data directory.
func (f *dumpFlags) fromReader(r *state.Reader, out *dumpWriter) error {
	all := r.Tables()
	tables := f.tables
	if len(tables) == 0 {
		tables = all
	}
	for _, t := range tables {
		if !slices.Contains(all, t) {
			return fmt.Errorf("state dump: no table %q in %s (tables: %v)", t, f.dataDir, all)
		}
	}
	if f.keyGroup >= r.KeyGroups() {
		return fmt.Errorf("state dump: --key-group %d: %s has key groups 0..%d", f.keyGroup, f.dataDir, r.KeyGroups()-1)
	}
	return f.dumpPages(tables, out, func(q state.Query) ([]api.StateEntry, string, error) {
		p, err := r.Read(q)
		if err != nil {
			return nil, "", err
		}
		entries := make([]api.StateEntry, len(p.Entries))
		for i, e := range p.Entries {
			entries[i] = api.NewStateEntry(e)
		}
		return entries, p.Next, nil
	})
}

// dumpPages writes the entries of each table, page by page as page reads
// them, until the last page or the --limit.
func (f *dumpFlags) dumpPages(tables []string, out *dumpWriter, page func(state.Query) ([]api.StateEntry, string, error)) error {
	for _, t := range tables {
		q := f.query(t)
		for {
			entries, next, err := page(q)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if err := out.write(e, f.limit > 0); errors.Is(err, errDumpDone) {
					return nil
				} else if err != nil {
					return err
				}
			}
			if next == "" {
				break
			}
			q.After = next
		}
	}
	return nil
}

// fromAPI dumps the state of the host at f.addr, page by page.
func (f *dumpFlags) fromAPI(ctx context.Context, out *dumpWriter) error {
	if f.token == "" {
		f.token = os.Getenv(runner.TokenEnv)
	}
	if f.token == "" && f.dataDir != "" {
		if tok, err := runner.ReadToken(f.dataDir); err == nil {
			f.token = tok
		}
	}
	c := &api.Client{Addr: f.addr, Token: f.token}
	tables := f.tables
	if len(tables) == 0 {
		tables = []string{""}
	}
	return f.dumpPages(tables, out, func(q state.Query) ([]api.StateEntry, string, error) {
		p, err := f.page(ctx, c, q)
		return p.Entries, p.Next, err
	})
}

// page asks the host for one page of q.
func (f *dumpFlags) page(ctx context.Context, c *api.Client, q state.Query) (api.StatePage, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	p, err := c.State(ctx, q)
	var se *api.StatusError
	switch {
	case errors.As(err, &se):
		msg := se.Message
		if se.Code == http.StatusUnauthorized && f.token == "" {
			msg += " (give --token, $" + runner.TokenEnv + ", --data-dir DIR or -c PIPELINE)"
		}
		return p, fmt.Errorf("state dump: the host at %s answered %s: %s", f.addr, se.Status, msg)
	case err != nil:
		return p, fmt.Errorf("state dump: %w", err)
	}
	return p, nil
}
