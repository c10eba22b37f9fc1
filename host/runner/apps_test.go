package runner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/bench"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// TestExamplesParse keeps the pipelines of examples/ valid: one per
// benchmark application, each running the application's plugin as a
// transactional operator over the application's tables, fed by its
// events from the generator.
func TestExamplesParse(t *testing.T) {
	for _, app := range workload.Apps() {
		d, err := bench.TxnPluginDir(app)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pipeline.Load(filepath.Join("..", "..", "examples", d+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if s := p.Sources[0]; s.Mode != "txn" || s.App != app {
			t.Errorf("examples/%s.yaml: source %+v, want the generator of %s", d, s, app)
		}
		w := newWorkload(t, app, 0)
		o := p.Operators[0]
		var tables []string
		for _, tb := range o.Tables {
			tables = append(tables, tb.Name)
		}
		if o.Kind != pipeline.KindTransactional || filepath.Base(o.Plugin) != d+".wasm" || !slices.Equal(tables, w.Tables()) {
			t.Errorf("examples/%s.yaml: operator %s of kind %s, plugin %s, tables %v; want a transactional operator of %s.wasm over %v",
				d, o.Name, o.Kind, o.Plugin, tables, d, w.Tables())
		}
	}
}

// appPipeline is the pipeline of TestAppPipelines: application %[1]s's
// events from the generator, its plugin (%[2]s) over its tables (%[3]s,
// each initialised by the generator) with strategy %[4]s, outputs to a
// file.
const appPipeline = `
name: %[1]s
http: {addr: "off"}
dead_letter: {path: dead.jsonl}
sources:
  - name: events
    type: generator
    mode: txn
    app: %[1]s
    count: %[5]d
    knobs: {keys: %[6]d}
operators:
  - name: %[1]s
    plugin: %[2]s
    kind: transactional
    tables:
%[3]s
    punctuation: {events: 256}
    strategy: %[4]s
    workers: 2
sinks:
  - {name: out, type: file, path: out.jsonl}
`

// TestAppPipelines runs each of the five benchmark applications end to
// end from a pipeline file, as a user does: the generator's events, the
// application's WebAssembly plugin from plugins/, its tables initialised
// by the generator. Every event gives one output; each strategy's outputs
// and final state equal the serial strategy's; the state is not the
// initial one (the events changed it); the source position is committed.
func TestAppPipelines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the five transactional plugins to WebAssembly; skipped in -short mode")
	}
	ctx := context.Background()
	dirs := map[string]string{}
	for _, app := range workload.Apps() {
		d, err := bench.TxnPluginDir(app)
		if err != nil {
			t.Fatal(err)
		}
		dirs[app] = filepath.Join("..", "..", "plugins", d)
	}
	mods, err := wasmbuild.GoModules(ctx, dirs)
	if err != nil {
		t.Fatal(err)
	}
	const events, keys = 2000, 300
	for _, app := range workload.Apps() {
		t.Run(app, func(t *testing.T) {
			dir := t.TempDir()
			module := filepath.Join(dir, app+".wasm")
			if err := os.WriteFile(module, mods[app], 0o644); err != nil {
				t.Fatal(err)
			}
			w := newWorkload(t, app, keys)
			var tables strings.Builder
			initState := map[string]map[string]string{}
			for _, name := range w.Tables() {
				initState[name] = initial(t, app, keys, name)
				fmt.Fprintf(&tables, "      - {name: %s, init: {generator: {app: %s, keys: %d, table: %s}}}\n", name, app, keys, name)
			}
			var serialOut []byte
			var serialState map[string]map[string]string
			for _, strategy := range []string{"serial", "ns-op-eager", "bfs-chain-lazy"} {
				run := filepath.Join(dir, strategy)
				if err := os.Mkdir(run, 0o755); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(run, "pipeline.yaml")
				writeFile(t, path, fmt.Sprintf(appPipeline, app, module, strings.TrimRight(tables.String(), "\n"), strategy, events, keys))
				p, err := pipeline.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				h, err := Start(ctx, p, Options{DataDir: filepath.Join(run, "data"), Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatalf("%s: %v", strategy, err)
				}
				if err := h.Run(ctx); err != nil {
					t.Fatalf("%s: %v", strategy, err)
				}
				out, err := os.ReadFile(filepath.Join(run, "out.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				if n := bytes.Count(out, []byte("\n")); n != events {
					t.Errorf("%s: %d outputs from %d events", strategy, n, events)
				}
				s := openStore(t, filepath.Join(run, "data", "state"))
				got := map[string]map[string]string{}
				changed := false
				for _, name := range w.Tables() {
					got[name] = scan(t, s, name)
					if len(got[name]) == 0 {
						t.Errorf("%s: table %s is empty", strategy, name)
					}
					if !maps.Equal(got[name], initState[name]) {
						changed = true
					}
				}
				if pos := s.Positions()["events"]; pos != events {
					t.Errorf("%s: committed position %d, want %d", strategy, pos, events)
				}
				s.Close()
				if !changed {
					t.Errorf("%s: the events left every table as it was initialised", strategy)
				}
				if serialOut == nil {
					serialOut, serialState = out, got
					continue
				}
				if !bytes.Equal(out, serialOut) {
					t.Errorf("%s: outputs differ from the serial strategy's", strategy)
				}
				for name, want := range serialState {
					if !maps.Equal(got[name], want) {
						t.Errorf("%s: table %s differs from the serial strategy's", strategy, name)
					}
				}
			}
		})
	}
}
