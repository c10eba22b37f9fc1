package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// transactional builds the executor's operator for a transactional
// pipeline operator: one plugin instance per scheduler worker (the Wasm
// Logic) under a txnop.Operator with the configured strategy. The Host
// keeps the txnop.Operator until exec.New takes it over.
func (h *Host) transactional(ctx context.Context, o *pipeline.Operator, pl *plugin.Plugin) (exec.Operator, error) {
	op, err := h.txnOperator(ctx, o, pl)
	if err != nil {
		return exec.Operator{}, err
	}
	workers := op.Workers()
	h.txnOps = append(h.txnOps, op)
	return exec.Operator{
		Name: o.Name, Inputs: o.Inputs, Kind: plugin.KindTransactional, Plugin: pl, Config: o.ConfigJSON, Parallelism: workers,
		StopOnError: o.OnError == pipeline.PolicyStop, MaxRecordBytes: int(o.Limits.MaxRecordBytes),
		Txn: &exec.Txn{Operator: op, Events: o.Punctuation.Events, Interval: time.Duration(o.Punctuation.Interval)},
	}, nil
}

// txnOperator makes the txnop.Operator that runs pl for the pipeline's
// transactional operator o: at start, and for a swap.
func (h *Host) txnOperator(ctx context.Context, o *pipeline.Operator, pl *plugin.Plugin) (*txnop.Operator, error) {
	workers := o.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	strategy, err := txn.ParseStrategy(o.Strategy)
	if err != nil {
		return nil, fmt.Errorf("%s: operator %q: %w", h.p.File, o.Name, err)
	}
	logic, err := txnop.NewWasm(ctx, pl, workers, o.ConfigJSON)
	if err != nil {
		return nil, fmt.Errorf("%s: operator %q: %w", h.p.File, o.Name, err)
	}
	op, err := txnop.New(txnop.Config{
		Name: o.Name, Tables: o.TableNames(), Strategy: strategy, Adaptive: o.Adaptive.Config(), Workers: workers, Logic: logic,
		Logger: h.log.With("operator", o.Name), ReadWindow: uint32(o.ReadWindow),
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: operator %q: %w", h.p.File, o.Name, err), logic.Close(ctx))
	}
	return op, nil
}

// initTables gives the transactional operators' tables their initial
// contents, at the pipeline's first start only: when no batch was ever
// committed (no source positions) and the table is empty. All tables are
// committed together, so a crash during initialisation leaves none of
// them half written. It returns the number of entries written.
func initTables(ctx context.Context, p *pipeline.Pipeline, store *state.Store) (int, error) {
	if len(store.Positions()) > 0 {
		return 0, nil
	}
	total := 0
	for i := range p.Operators {
		o := &p.Operators[i]
		if o.Kind != pipeline.KindTransactional {
			continue
		}
		for _, t := range o.Tables {
			if t.Init == nil {
				continue
			}
			tb := store.Table(t.Name)
			if tb.Len() > 0 {
				continue // initialised by a start that committed nothing else
			}
			n, err := initTable(ctx, t.Init, tb)
			if err != nil {
				return 0, fmt.Errorf("operator %q: table %q: init: %w", o.Name, t.Name, err)
			}
			total += n
		}
	}
	if total == 0 {
		return 0, nil
	}
	if err := store.Commit(nil); err != nil {
		return 0, fmt.Errorf("initial tables: %w", err)
	}
	return total, nil
}

// initTable writes one table's initial entries into memory (committed by
// the caller) and returns how many it wrote.
func initTable(ctx context.Context, in *pipeline.TableInit, tb *state.Table) (int, error) {
	n := 0
	put := func(key, value []byte) error {
		tb.Group(state.KeyGroup(key, tb.KeyGroups())).Put(key, value)
		n++
		if n%65536 == 0 {
			return ctx.Err()
		}
		return nil
	}
	if in.File != "" {
		err := readInitFile(in.File, tb.Name(), put)
		return n, err
	}
	g := in.Generator
	knobs, err := pipeline.Workload(g.App, g.Knobs)
	if err != nil {
		return 0, fmt.Errorf("generator: %w", err)
	}
	app, err := workload.New(g.App, knobs)
	if err != nil {
		return 0, fmt.Errorf("generator: %w", err)
	}
	want := -1
	for i, name := range app.Tables() {
		if name == g.Table {
			want = i
		}
	}
	if want < 0 {
		return 0, fmt.Errorf("generator: workload %s has no table %q (its tables: %q)", g.App, g.Table, app.Tables())
	}
	err = app.Initial(func(table int, key, value []byte) error {
		if table != want {
			return nil
		}
		return put(key, value)
	})
	return n, err
}

// initEntry is one line of an init file. Exactly one of Key and KeyBase64,
// and one of Value and ValueBase64, is set. Table, when set, names the
// table the line belongs to: the lines of `sluice state dump` carry it, so
// a dump initialises a table directly. KeyGroup, which a dump carries
// too, is ignored: a key's group follows from the key and the pipeline's
// key group count.
type initEntry struct {
	Table       *string `json:"table"`
	Key         *string `json:"key"`
	KeyBase64   *string `json:"key_base64"`
	Value       *string `json:"value"`
	ValueBase64 *string `json:"value_base64"`
	KeyGroup    *int    `json:"key_group"`
}

// readInitFile calls put with every entry of a JSON Lines init file for
// table, in file order (a key given twice keeps its last value); lines
// naming another table are skipped. A problem is reported as a
// *pipeline.Error naming the file and the line.
func readInitFile(path, table string, put func(key, value []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for line := 1; ; line++ {
		text, err := r.ReadBytes('\n')
		if len(text) > 0 {
			key, value, perr := parseInitLine(text, table)
			if perr != nil {
				return &pipeline.Error{File: path, Line: line, Msg: perr.Error()}
			}
			if key != nil || value != nil {
				if err := put(key, value); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
}

// parseInitLine decodes one line; a blank line, or one of another table,
// gives (nil, nil, nil).
func parseInitLine(text []byte, table string) (key, value []byte, err error) {
	text = bytes.TrimSpace(text)
	if len(text) == 0 {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	var e initEntry
	if err := dec.Decode(&e); err != nil {
		return nil, nil, fmt.Errorf(`not an entry {"key": "...", "value": "..."} (key_base64 and value_base64 for binary): %v`, err)
	}
	if dec.More() {
		return nil, nil, errors.New("more than one JSON value on the line")
	}
	if e.Table != nil && *e.Table != table {
		return nil, nil, nil
	}
	key, err = pick("key", e.Key, e.KeyBase64)
	if err != nil {
		return nil, nil, err
	}
	value, err = pick("value", e.Value, e.ValueBase64)
	if err != nil {
		return nil, nil, err
	}
	if key == nil {
		key = []byte{}
	}
	if value == nil {
		value = []byte{}
	}
	return key, value, nil
}

// pick returns the bytes of a field given as text (name) or as base64
// (name_base64): exactly one must be present.
func pick(name string, text, b64 *string) ([]byte, error) {
	b, ok, err := file.DecodeField(name, text, b64)
	if err == nil && !ok {
		err = fmt.Errorf("no %s (write %q or %q)", name, name, name+"_base64")
	}
	return b, err
}
