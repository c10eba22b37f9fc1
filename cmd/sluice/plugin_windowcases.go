package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/runner"
	gsdk "github.com/sluicehq/sluice/sdk/go/sluice"
)

// Case files of window and join functions (kinds aggregate, window and
// join) cannot be single guest calls, records in and records out: what the
// guest is given depends on the windows, the watermark and, for a session,
// the merges. Each case runs instead as a small pipeline in the real host,
// the case's records read from files, the operator configured with the
// file's (or the case's) window, join and watermark keys as a pipeline
// file writes them, and every result, dead letter and late record
// compared with the case's, once the input has ended and every window has
// fired.

// windowCasesHelp documents the case files of window and join functions.
const windowCasesHelp = `Window and join functions (kind aggregate, window or join) are tested with the
same files, each case run as a small pipeline in the real host: the records
are read in order (a join's left and right from two inputs), the windows fire
as the watermark passes them and the rest when the input ends, and the case
lists every result, dead letter and late record:

  kind: aggregate          # aggregate | window | join; default: the module's
  window: {type: tumbling, size: 1m}   # as an operator's window in a pipeline
  join: {type: inner}      # join: as an operator's join in a pipeline
  watermark: {out_of_orderness: 5s}    # each input's, as a source's; default:
                           # none (times never decrease)
  config: {min: 3}         # the operator's config (not config_json)
  cases:
    - name: counts a minute
      window: ...          # overrides the file's window (join, watermark too)
      in:                  # aggregate, window: the records, in order
        - {key: a, value: "1", time: 1000000000}
      left: [...]          # join: the first input's records
      right: [...]         # join: the second input's
      out:                 # every result, in any order (compared sorted)
        - {key: a, value: "1,1", time: 59999999999}
      dead:                # every dead letter: its record and its reason,
                           # whole (message) or in part (contains)
        - {key: a, value: x, time: 5, contains: "not a decimal"}
      late:                # every record that came after its window closed
        - {key: a, value: "2", time: 1000000000}

A record's time is its event time: one without (time 0) is dead-lettered by
an event-time window or a join. Results carry the window's end - 1 as their
time (an interval join's, the later record's), and an early or late firing's
results the header Sluice-Firing (early or late). A firing an aggregate
rejects is dead-lettered as a record of its key and accumulator (value_base64)
at the window's end - 1, and a pair a join function rejects as the join's
default result (the JSON object of key, left, right and window).

A join reads its two inputs side by side, in an order the host does not fix:
write each side in time order, so that its results do not depend on it. A
case's window: null drops the file's window (for an interval join's case in a
file of window joins); config_error works as for the other kinds.`

// deadRecord is an expected dead letter: a record and its reason, in
// full (message) or in part (contains).
type deadRecord struct {
	record   `yaml:",inline"`
	Message  *string `yaml:"message"`
	Contains *string `yaml:"contains"`
}

// windowFields are the case file keys of window and join functions only;
// keyedFields those of the other kinds only.
var (
	windowFields = []string{"window", "join", "watermark", "left", "right", "dead", "late"}
	keyedFields  = []string{"tables", "state", "final", "batches", "rejects", "config_json"}
)

// checkWindowed refuses the keys of a case file that do not apply to its
// kind, and window and join cases that cannot run.
func (f *caseFile) checkWindowed(kind plugin.Kind) error {
	windowed := kind.Windowed()
	for i := -1; i < len(f.Cases); i++ {
		where, set := "the file", f.keysSet(nil)
		if i >= 0 {
			where, set = fmt.Sprintf("line %d", f.Cases[i].line), f.keysSet(&f.Cases[i])
		}
		other, explain := windowFields, "apply to window and join functions only (kinds aggregate, window and join)"
		if windowed {
			other, explain = keyedFields, "apply to the other kinds (a window function's case lists in, out, dead and late; see 'sluice help plugin test')"
		}
		var wrong []string
		for _, name := range other {
			if set[name] {
				wrong = append(wrong, name)
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("%s: kind %s: %s %s", where, kind, strings.Join(wrong, ", "), explain)
		}
	}
	if !windowed {
		return nil
	}
	join := kind == plugin.KindJoin
	for i := range f.Cases {
		c := &f.Cases[i]
		window := f.Window.Kind != 0 || c.Window.Kind != 0
		switch {
		case join && len(c.In) > 0:
			return fmt.Errorf("line %d: a join's case gives its inputs' records as left and right, not in", c.line)
		case !join && (len(c.Left) > 0 || len(c.Right) > 0):
			return fmt.Errorf("line %d: kind %s: left and right are a join's inputs; this kind reads in", c.line, kind)
		case !join && !window:
			return fmt.Errorf("line %d: kind %s needs a window (window: in the file or the case, as in a pipeline file)", c.line, kind)
		case join && !window && f.Join.Kind == 0 && c.Join.Kind == 0:
			return fmt.Errorf("line %d: a join needs a window, or an interval (join: {interval: {lower: ..., upper: ...}}), as in a pipeline file", c.line)
		}
	}
	return nil
}

// keysSet returns which keys the file (c nil) or case c sets, of those
// that apply to some kinds only.
func (f *caseFile) keysSet(c *testCase) map[string]bool {
	if c == nil {
		return map[string]bool{"window": f.Window.Kind != 0, "join": f.Join.Kind != 0, "watermark": f.Watermark.Kind != 0,
			"tables": len(f.Tables) > 0, "state": len(f.State) > 0, "config_json": f.ConfigJSON != nil}
	}
	return map[string]bool{"window": c.Window.Kind != 0, "join": c.Join.Kind != 0, "watermark": c.Watermark.Kind != 0,
		"left": len(c.Left) > 0, "right": len(c.Right) > 0, "dead": len(c.Dead) > 0, "late": len(c.Late) > 0,
		"state": len(c.State) > 0, "final": len(c.Final) > 0, "batches": len(c.Batches) > 0, "rejects": len(c.Rejects) > 0,
		"config_json": c.ConfigJSON != nil}
}

// runWindowCases runs the cases of f, a window or join function's, whose
// names match filter, each as a pipeline in the host with the module wasm
// as its operator, writing one line per case, and the differences of a
// failed one, to w.
func runWindowCases(ctx context.Context, w io.Writer, path string, f *caseFile, kind plugin.Kind, name string, wasm []byte, filter *regexp.Regexp) (caseRun, error) {
	var run caseRun
	dir, err := os.MkdirTemp("", "sluice-plugin-test-")
	if err != nil {
		return run, err
	}
	defer os.RemoveAll(dir)
	module := filepath.Join(dir, name)
	if err := os.WriteFile(module, wasm, 0o644); err != nil {
		return run, err
	}
	for i, c := range f.selected(filter) {
		label := c.label(i)
		problems, err := runWindowCase(ctx, filepath.Join(dir, fmt.Sprintf("case-%d", i+1)), module, kind, f, c)
		if err != nil {
			return run, fmt.Errorf("%s:%d: %s: %w", path, c.line, label, err)
		}
		run.report(w, label, path, c.line, problems)
	}
	return run, nil
}

// report counts a case that ran and writes its line, and its problems.
func (r *caseRun) report(w io.Writer, label, path string, line int, problems []string) {
	if len(problems) == 0 {
		r.passed++
		fmt.Fprintf(w, "ok    %s\n", label)
		return
	}
	r.failed++
	fmt.Fprintf(w, "FAIL  %s (%s:%d)\n", label, path, line)
	for _, p := range problems {
		fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(p, "\n", "\n      "))
	}
}

// runWindowCase runs case c as a pipeline in dir and returns how its
// results, dead letters and late records differ from the case's. An error
// is a mistake in the case.
func runWindowCase(ctx context.Context, dir, module string, kind plugin.Kind, f *caseFile, c *testCase) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	node := func(file, override *yaml.Node) *yaml.Node {
		if override.Kind != 0 {
			return override
		}
		if file.Kind != 0 {
			return file
		}
		return nil
	}
	inputs := map[string][]record{"in": c.In}
	names := []string{"in"}
	if kind == plugin.KindJoin {
		inputs = map[string][]record{"left": c.Left, "right": c.Right}
		names = []string{"left", "right"}
	}
	var sources []map[string]any
	for _, name := range names {
		p := filepath.Join(dir, name+".jsonl")
		if err := writeRecords(ctx, p, name, inputs[name]); err != nil {
			return nil, err
		}
		src := map[string]any{"name": name, "type": "file", "path": p, "format": "jsonl"}
		if wm := node(&f.Watermark, &c.Watermark); wm != nil {
			src["watermark"] = wm
		}
		sources = append(sources, src)
	}
	op := map[string]any{"name": "op", "kind": string(kind), "plugin": module, "inputs": names, "parallelism": 1}
	if n := node(&f.Window, &c.Window); n != nil {
		op["window"] = n
	}
	if n := node(&f.Join, &c.Join); n != nil {
		op["join"] = n
	}
	if n := node(&f.Config, &c.Config); n != nil {
		op["config"] = n
	} else if c.ConfigError != nil {
		return nil, errors.New("config_error without a config")
	}
	text, err := yaml.Marshal(map[string]any{
		"name":        "plugin-test",
		"data_dir":    filepath.Join(dir, "data"),
		"http":        map[string]any{"addr": "off"},
		"sources":     sources,
		"operators":   []any{op},
		"sinks":       []any{map[string]any{"name": "out", "type": "file", "path": filepath.Join(dir, "out.jsonl"), "format": "jsonl"}},
		"dead_letter": map[string]any{"path": filepath.Join(dir, "dead.jsonl")},
		"late":        map[string]any{"path": filepath.Join(dir, "late.jsonl")},
	})
	if err != nil {
		return nil, err
	}
	p, err := pipeline.Parse("the case's pipeline", dir, text)
	if err != nil {
		return nil, caseKeysError(err, text, map[string]*yaml.Node{
			"operators[0].window": node(&f.Window, &c.Window), "operators[0].join": node(&f.Join, &c.Join),
			"operators[0].config": node(&f.Config, &c.Config), "watermark": node(&f.Watermark, &c.Watermark),
		})
	}
	err = runPipeline(ctx, p, dir)
	switch {
	case c.ConfigError != nil && err == nil:
		return []string{fmt.Sprintf("the configuration was accepted, want it refused with %q", *c.ConfigError)}, nil
	case c.ConfigError != nil && !strings.Contains(err.Error(), *c.ConfigError):
		return []string{fmt.Sprintf("the pipeline failed with %q, want the configuration refused with %q", err, *c.ConfigError)}, nil
	case c.ConfigError != nil:
		return nil, nil
	case err != nil:
		return []string{fmt.Sprintf("the pipeline failed: %v", err)}, nil
	}
	var problems []string
	for _, part := range []struct {
		what string
		file string
		want []record
		dead []deadRecord
	}{
		{what: "out", file: "out.jsonl", want: c.Out},
		{what: "dead", file: "dead.jsonl", dead: c.Dead},
		{what: "late", file: "late.jsonl", want: c.Late},
	} {
		got, err := readRecords(ctx, filepath.Join(dir, part.file))
		if err != nil {
			return nil, err
		}
		want := part.want
		if part.what == "dead" {
			want = make([]record, len(part.dead))
			for i := range part.dead {
				want[i] = part.dead[i].record
			}
		}
		p, err := diffResults(part.what, got, want, part.dead)
		if err != nil {
			return nil, err
		}
		problems = append(problems, p...)
	}
	return problems, nil
}

// caseKeysError rewrites the errors of the pipeline a case runs as, text,
// so that each error of a key the case file gave (nodes: by key path in
// the pipeline, a source's watermark by "watermark") names that key and
// its line in the case file. An error it cannot place comes with the
// pipeline's text.
func caseKeysError(err error, text []byte, nodes map[string]*yaml.Node) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var (
		out      []error
		said     []string
		unplaced bool
	)
	for _, e := range errs {
		var pe *pipeline.Error
		placed := false
		if errors.As(e, &pe) {
			path := pe.Path
			if i := strings.Index(path, "].watermark"); strings.HasPrefix(path, "sources[") && i > 0 {
				path = path[i+2:]
			}
			for prefix, n := range nodes {
				if n == nil || (path != prefix && !strings.HasPrefix(path, prefix+".")) {
					continue
				}
				msg := fmt.Sprintf("line %d: %s: %s", n.Line, strings.TrimPrefix(path, "operators[0]."), pe.Msg)
				if !slices.Contains(said, msg) { // a join's two sources say it twice
					said = append(said, msg)
					out = append(out, errors.New(msg))
				}
				placed = true
				break
			}
		}
		if !placed {
			out = append(out, e)
			unplaced = true
		}
	}
	if unplaced {
		out = append(out, fmt.Errorf("the pipeline the case runs as:\n%s", text))
	}
	return errors.Join(out...)
}

// runPipeline runs p, whose data directory is under dir, to its end.
func runPipeline(ctx context.Context, p *pipeline.Pipeline, dir string) error {
	h, err := runner.Start(ctx, p, runner.Options{DataDir: filepath.Join(dir, "data"), HTTPAddr: "off",
		Logger: slog.New(slog.DiscardHandler), Version: versionString()})
	if err != nil {
		return err
	}
	return h.Run(ctx)
}

// writeRecords writes a case's records to path as JSON Lines.
func writeRecords(ctx context.Context, path, input string, recs []record) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sink, err := file.NewWriterSink(f, file.WriterSinkConfig{Format: file.JSONL})
	if err != nil {
		return err
	}
	outs := make([]connectors.Out, len(recs))
	for i := range recs {
		r, err := recs[i].decode(false)
		if err != nil {
			return fmt.Errorf("%s %d: %w", input, i, err)
		}
		outs[i].Record = abi.Record{Key: r.Key, Value: r.Value, Time: r.Time, Headers: r.Headers}
	}
	if err := sink.Write(ctx, outs); err != nil {
		return err
	}
	if err := sink.Flush(ctx); err != nil {
		return err
	}
	return f.Close()
}

// readRecords reads the JSON Lines file the pipeline wrote at path (none:
// no records).
func readRecords(ctx context.Context, path string) ([]caseRecord, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	src, err := file.NewSource(file.SourceConfig{Path: path, Format: file.JSONL})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := src.Open(ctx, 0); err != nil {
		return nil, err
	}
	var recs []caseRecord
	buf := make([]connectors.Message, 256)
	for {
		n, err := src.Read(ctx, buf)
		for _, m := range buf[:n] {
			if m.Err != nil {
				return nil, fmt.Errorf("%s line %d: %w", path, m.Position, m.Err)
			}
			r := m.Record
			recs = append(recs, caseRecord{Origin: -1, Key: r.Key, Value: r.Value, Time: r.Time, Headers: r.Headers})
		}
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// diffResults describes how the records a pipeline wrote to part (out,
// dead or late) differ from those wanted, both compared in order of time,
// key, value and headers. Results are compared with their headers; dead letters
// and late records by key, value and time, a dead letter's reason (the
// Sluice-Error header) with dead's message or contains.
func diffResults(part string, got []caseRecord, want []record, dead []deadRecord) ([]string, error) {
	wanted := make([]caseRecord, len(want))
	for i := range want {
		if want[i].Origin != nil {
			return nil, fmt.Errorf("%s %d: a window function's records have no origin (a result comes from a window, not from one input)", part, i)
		}
		r, err := want[i].decode(false)
		if err != nil {
			return nil, fmt.Errorf("%s %d: %w", part, i, err)
		}
		wanted[i] = r
	}
	reasons := make([]string, len(got))
	if part != "out" {
		for i := range got {
			reasons[i] = headerValue(got[i].Headers, exec.HeaderError)
			got[i].Headers = nil
		}
	}
	byTime := func(a, b caseRecord) int {
		if a.Time != b.Time {
			return cmp.Compare(a.Time, b.Time)
		}
		if c := bytes.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if c := bytes.Compare(a.Value, b.Value); c != 0 {
			return c
		}
		return cmp.Compare(a.String(), b.String()) // headers
	}
	gotIdx := sortedOrder(got, byTime)
	wantIdx := sortedOrder(wanted, byTime)
	var p []string
	for k := range max(len(got), len(wanted)) {
		g, w := "(none)", "(none)"
		if k < len(got) {
			g = got[gotIdx[k]].String()
		}
		if k < len(wanted) {
			w = wanted[wantIdx[k]].String()
		}
		if k >= len(got) || k >= len(wanted) || !got[gotIdx[k]].equal(wanted[wantIdx[k]]) {
			p = append(p, fmt.Sprintf("%s %d:\n  got  %s\n  want %s", part, k, g, w))
			break
		}
		if dead == nil {
			continue
		}
		d, reason := dead[wantIdx[k]], reasons[gotIdx[k]]
		switch {
		case d.Message != nil && reason != *d.Message:
			p = append(p, fmt.Sprintf("dead %d: %s dead-lettered with %q, want %q", k, g, reason, *d.Message))
		case d.Contains != nil && !strings.Contains(reason, *d.Contains):
			p = append(p, fmt.Sprintf("dead %d: %s dead-lettered with %q, want a reason containing %q", k, g, reason, *d.Contains))
		}
	}
	if len(p) == 0 {
		return nil, nil
	}
	var all strings.Builder
	fmt.Fprintf(&all, "the pipeline wrote %d record(s) to %s:\n%s:", len(got), part, part)
	if len(got) == 0 {
		all.WriteString(" []")
	}
	for _, i := range gotIdx {
		all.WriteString("\n  - " + got[i].String())
		if part == "dead" {
			all.WriteString("  # " + reasons[i])
		}
	}
	return append(p, all.String()), nil
}

// sortedOrder returns the indexes of recs in the order cmp sorts them.
func sortedOrder(recs []caseRecord, order func(a, b caseRecord) int) []int {
	idx := make([]int, len(recs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return order(recs[a], recs[b]) })
	return idx
}

// headerValue returns the value of header name, "" when there is none.
func headerValue(hs []gsdk.Header, name string) string {
	for _, h := range hs {
		if string(h.Name) == name {
			return string(h.Value)
		}
	}
	return ""
}
