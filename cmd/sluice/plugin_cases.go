package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	gsdk "github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

// casesHelp documents the test case files of `sluice plugin test`.
const casesHelp = `Test cases are YAML files in DIR/testdata (*.yaml), run in name order:

  kind: map                # map | filter | flatmap | keyed (window and join
                           # functions: below); default the kind
                           # the module declares (custom section sluice.kinds),
                           # else keyed when tables are declared, flatmap otherwise
  tables: [counts]         # keyed: state tables, the first the default
  config: {min: 3}         # the operator's config, as in a pipeline file
  config_json: '{"a":1}'   # or the exact JSON bytes (one of the two)
  state:                   # keyed: state before each case's first batch
    counts: {the: "2"}     # table: {key: value}
  cases:
    - name: counts words   # each case runs in a fresh instance
      config: ...          # overrides the file's config (config_json too)
      config_error: "min"  # the config must be refused, with this text
      state: ...           # more state, over the file's
      in:                  # one batch: its input records
        - {key: the, value: the, time: 5, headers: {h: v}}
      out:                 # every output, in order (none when absent)
        - {origin: 0, key: the, value: "3", time: 5}
      rejects:             # every dead-lettered input (none when absent)
        - {origin: 1, message: "exact text"}  # or contains: "part"
      batches:             # or several batches, each with in, out, rejects
        - {in: [...], out: [...]}
      final:               # keyed: state after the last batch, for these
        counts: {the: "3", gone: null}        # keys; null means absent

A record has key (or key_base64), value (or value_base64), time
(nanoseconds since the Unix epoch) and headers (name: value, in order;
headers_base64 for values that are bytes, not text, after them);
outputs also have origin, the index of the input record they came from.
Every case runs the compiled module in the real host, with the host's
rules: a rejected record leaves no output and no state, and a record whose
call traps or fails is dead-lettered with the host's error as its message
(use contains).`

// caseFile is one testdata/*.yaml file.
type caseFile struct {
	Kind       string     `yaml:"kind"`
	Window     yaml.Node  `yaml:"window"`    // window functions: as in a pipeline
	Join       yaml.Node  `yaml:"join"`      // join functions: as in a pipeline
	Watermark  yaml.Node  `yaml:"watermark"` // each input's, as a source's
	Tables     []string   `yaml:"tables"`
	Config     yaml.Node  `yaml:"config"` // Kind 0 when absent
	ConfigJSON *string    `yaml:"config_json"`
	State      stateSpec  `yaml:"state"`
	Cases      []testCase `yaml:"cases"`
}

// stateSpec is table -> key -> value; a nil value is an absent key.
type stateSpec map[string]map[string]*string

type testCase struct {
	Name        string      `yaml:"name"`
	Config      yaml.Node   `yaml:"config"` // Kind 0 when absent
	ConfigJSON  *string     `yaml:"config_json"`
	ConfigError *string     `yaml:"config_error"`
	State       stateSpec   `yaml:"state"`
	In          []record    `yaml:"in"`
	Out         []record    `yaml:"out"`
	Rejects     []rejection `yaml:"rejects"`
	Batches     []batch     `yaml:"batches"`
	Final       stateSpec   `yaml:"final"`
	// A window or join function's case (plugin_windowcases.go).
	Window    yaml.Node    `yaml:"window"`
	Join      yaml.Node    `yaml:"join"`
	Watermark yaml.Node    `yaml:"watermark"`
	Left      []record     `yaml:"left"`
	Right     []record     `yaml:"right"`
	Dead      []deadRecord `yaml:"dead"`
	Late      []record     `yaml:"late"`
	line      int
}

type batch struct {
	In      []record    `yaml:"in"`
	Out     []record    `yaml:"out"`
	Rejects []rejection `yaml:"rejects"`
}

// record is a record as a case file writes it.
type record struct {
	Origin      *int      `yaml:"origin"`
	Key         *string   `yaml:"key"`
	KeyBase64   *string   `yaml:"key_base64"`
	Value       *string   `yaml:"value"`
	ValueBase64 *string   `yaml:"value_base64"`
	Time        int64     `yaml:"time"`
	Headers     yaml.Node `yaml:"headers"`
	// HeadersBase64 are headers whose values are bytes, not text, in
	// base64; they come after Headers.
	HeadersBase64 yaml.Node `yaml:"headers_base64"`
}

type rejection struct {
	Origin   int     `yaml:"origin"`
	Message  *string `yaml:"message"`
	Contains *string `yaml:"contains"`
}

// caseRecord is a record decoded from a case file, or an output to compare
// with one. Origin is -1 for an input.
type caseRecord struct {
	Origin  int
	Key     []byte
	Value   []byte
	Time    int64
	Headers []gsdk.Header
}

// loadCaseFile reads and checks a case file.
func loadCaseFile(path string) (*caseFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f caseFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Line numbers of the cases, for messages.
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 {
		m := doc.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "cases" {
				for j, c := range m.Content[i+1].Content {
					if j < len(f.Cases) {
						f.Cases[j].line = c.Line
					}
				}
			}
		}
	}
	if len(f.Cases) == 0 {
		return nil, fmt.Errorf("%s: no cases", path)
	}
	return &f, nil
}

// kind returns the operator kind the file tests, of a module that
// declares the kinds declared (plugin.DeclaredKinds).
func (f *caseFile) kind(declared []plugin.Kind) (plugin.Kind, error) {
	if f.Kind == "" {
		switch {
		case len(declared) == 1 && declared[0].Windowed():
			return declared[0], nil
		case len(declared) == 1 && !declared[0].Transactional() && declared[0].Stateful() == (len(f.Tables) > 0):
			return declared[0], nil
		case len(f.Tables) > 0:
			return plugin.KindKeyed, nil
		}
		return plugin.KindFlatMap, nil
	}
	k, err := plugin.ParseKind(f.Kind)
	if err != nil {
		return "", fmt.Errorf("kind: %w", err)
	}
	if k.Transactional() {
		return "", errors.New("kind: transactional operators are tested with hosttest.LoadTxnWasm and txnop, not with case files")
	}
	if k.Windowed() {
		return k, nil
	}
	if k.Stateful() != (len(f.Tables) > 0) {
		return "", fmt.Errorf("kind %s: a keyed operator, and only a keyed operator, declares tables", k)
	}
	return k, nil
}

// configJSON returns the configuration bytes of node or raw (nil: none).
func configJSON(node *yaml.Node, raw *string) ([]byte, error) {
	switch {
	case node.Kind != 0 && raw != nil:
		return nil, errors.New("config and config_json are exclusive")
	case raw != nil:
		return []byte(*raw), nil
	case node.Kind == 0:
		return nil, nil
	}
	var v any
	if err := node.Decode(&v); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		return nil, fmt.Errorf("config cannot be passed to the plugin as JSON: %w", err)
	}
	return b, nil
}

// jsonable turns YAML's decoded maps into JSON-encodable ones.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonable(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonable(e)
		}
	}
	return v
}

// decode turns a case file's record into a caseRecord; output says
// whether it is an expected output (which needs an origin).
func (r *record) decode(output bool) (caseRecord, error) {
	c := caseRecord{Origin: -1, Time: r.Time}
	if output {
		if r.Origin == nil {
			return c, errors.New("an output needs its origin (the index of its input record)")
		}
		c.Origin = *r.Origin
	} else if r.Origin != nil {
		return c, errors.New("an input record has no origin: its origin is its index")
	}
	var err error
	if c.Key, err = bytesOf("key", r.Key, r.KeyBase64); err != nil {
		return c, err
	}
	if c.Value, err = bytesOf("value", r.Value, r.ValueBase64); err != nil {
		return c, err
	}
	for _, hs := range []*yaml.Node{&r.Headers, &r.HeadersBase64} {
		switch hs.Kind {
		case 0:
			continue
		case yaml.MappingNode:
		default:
			return c, fmt.Errorf("line %d: headers must be a mapping of names to values", hs.Line)
		}
		for i := 0; i+1 < len(hs.Content); i += 2 {
			name, v := hs.Content[i].Value, []byte(hs.Content[i+1].Value)
			if hs == &r.HeadersBase64 {
				var err error
				if v, err = base64.StdEncoding.DecodeString(string(v)); err != nil {
					return c, fmt.Errorf("line %d: headers_base64 %s: %w", hs.Content[i+1].Line, name, err)
				}
			}
			c.Headers = append(c.Headers, gsdk.Header{Name: []byte(name), Value: v})
		}
	}
	return c, nil
}

// bytesOf returns the bytes of a field given as text or as base64, nil
// when neither is given.
func bytesOf(what string, text, b64 *string) ([]byte, error) {
	b, _, err := file.DecodeField(what, text, b64)
	return b, err
}

// String formats c as a one-line YAML flow mapping, as a case file writes
// it.
func (c caseRecord) String() string {
	var parts []string
	if c.Origin >= 0 {
		parts = append(parts, "origin: "+strconv.Itoa(c.Origin))
	}
	field := func(name string, b []byte) {
		switch {
		case len(b) == 0 && name == "key":
		case utf8.Valid(b):
			q, _ := json.Marshal(string(b))
			parts = append(parts, name+": "+string(q))
		default:
			parts = append(parts, name+"_base64: "+base64.StdEncoding.EncodeToString(b))
		}
	}
	field("key", c.Key)
	field("value", c.Value)
	if c.Time != 0 {
		parts = append(parts, "time: "+strconv.FormatInt(c.Time, 10))
	}
	var text, binary []string
	for _, h := range c.Headers {
		n, _ := json.Marshal(string(h.Name))
		if utf8.Valid(h.Value) {
			v, _ := json.Marshal(string(h.Value))
			text = append(text, string(n)+": "+string(v))
		} else {
			binary = append(binary, string(n)+": "+base64.StdEncoding.EncodeToString(h.Value))
		}
	}
	if len(text) > 0 {
		parts = append(parts, "headers: {"+strings.Join(text, ", ")+"}")
	}
	if len(binary) > 0 {
		parts = append(parts, "headers_base64: {"+strings.Join(binary, ", ")+"}")
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (c caseRecord) equal(o caseRecord) bool {
	return c.Origin == o.Origin && bytes.Equal(c.Key, o.Key) && bytes.Equal(c.Value, o.Value) && c.Time == o.Time &&
		slices.EqualFunc(c.Headers, o.Headers, func(a, b gsdk.Header) bool {
			return bytes.Equal(a.Name, b.Name) && bytes.Equal(a.Value, b.Value)
		})
}

// label names case i of its file: its name, or "case N".
func (c *testCase) label(i int) string {
	if c.Name == "" {
		return fmt.Sprintf("case %d", i+1)
	}
	return c.Name
}

// selected yields the cases of f, with their indexes, whose labels match
// filter (every case when filter is nil).
func (f *caseFile) selected(filter *regexp.Regexp) iter.Seq2[int, *testCase] {
	return func(yield func(int, *testCase) bool) {
		for i := range f.Cases {
			c := &f.Cases[i]
			if filter != nil && !filter.MatchString(c.label(i)) {
				continue
			}
			if !yield(i, c) {
				return
			}
		}
	}
}

// caseRun is what running the cases of one file found.
type caseRun struct {
	passed, failed int
}

// runCaseFile runs the cases of f (read from path) whose names match
// filter through the module wasm, loaded into the host as f's kind,
// writing one line per case, and the differences of a failed one, to w.
func runCaseFile(ctx context.Context, w io.Writer, path string, f *caseFile, name string, wasm []byte, filter *regexp.Regexp) (caseRun, error) {
	var run caseRun
	kind, err := f.kind(plugin.DeclaredKinds(wasm))
	if err == nil {
		err = f.checkWindowed(kind)
	}
	if err != nil {
		return run, fmt.Errorf("%s: %w", path, err)
	}
	if kind.Windowed() {
		return runWindowCases(ctx, w, path, f, kind, name, wasm, filter)
	}
	mod, err := hosttest.LoadWasm(ctx, name, wasm, kind)
	if err != nil {
		return run, err
	}
	defer func() { _ = mod.Close(context.WithoutCancel(ctx)) }()
	for i, c := range f.selected(filter) {
		label := c.label(i)
		problems, err := runCase(mod, f, c)
		if err != nil {
			return run, fmt.Errorf("%s:%d: %s: %w", path, c.line, label, err)
		}
		run.report(w, label, path, c.line, problems)
	}
	return run, nil
}

// runCase runs one case in a fresh harness and returns how the module's
// behaviour differs from the case's expectations. An error is a mistake in
// the case.
func runCase(mod *hosttest.WasmModule, f *caseFile, c *testCase) ([]string, error) {
	h := mod.New()
	defer h.Close()
	h.Declare(f.Tables...)
	for _, st := range []stateSpec{f.State, c.State} {
		if err := setState(h, f.Tables, st); err != nil {
			return nil, err
		}
	}
	config, err := configJSON(&f.Config, f.ConfigJSON)
	if err != nil {
		return nil, err
	}
	if c.Config.Kind != 0 || c.ConfigJSON != nil {
		if config, err = configJSON(&c.Config, c.ConfigJSON); err != nil {
			return nil, err
		}
	}
	batches := c.Batches
	if len(c.In) > 0 || len(c.Out) > 0 || len(c.Rejects) > 0 {
		if len(batches) > 0 {
			return nil, errors.New("a case has either in, out and rejects (one batch) or batches, not both")
		}
		batches = []batch{{In: c.In, Out: c.Out, Rejects: c.Rejects}}
	}
	var problems []string
	if config != nil {
		err := h.Configure(config)
		switch {
		case c.ConfigError != nil && err == nil:
			return []string{fmt.Sprintf("the configuration %s was accepted, want it refused with %q", config, *c.ConfigError)}, nil
		case c.ConfigError != nil && !strings.Contains(err.Error(), *c.ConfigError):
			return []string{fmt.Sprintf("the configuration was refused with %q, want %q", err, *c.ConfigError)}, nil
		case c.ConfigError != nil:
			return nil, nil
		case err != nil:
			return []string{fmt.Sprintf("configuring: %v", err)}, nil
		}
	} else if c.ConfigError != nil {
		return nil, errors.New("config_error without a config")
	}
	for b, bt := range batches {
		in := make([]gsdk.Record, len(bt.In))
		for i := range bt.In {
			r, err := bt.In[i].decode(false)
			if err != nil {
				return nil, fmt.Errorf("batch %d input %d: %w", b, i, err)
			}
			in[i] = gsdk.Record{Key: r.Key, Value: r.Value, Time: r.Time, Headers: r.Headers}
		}
		want := make([]caseRecord, len(bt.Out))
		for i := range bt.Out {
			if want[i], err = bt.Out[i].decode(true); err != nil {
				return nil, fmt.Errorf("batch %d output %d: %w", b, i, err)
			}
		}
		outs, rejects, err := h.Process(in...)
		if err != nil {
			problems = append(problems, fmt.Sprintf("batch %d: %v", b, err))
			break
		}
		got := make([]caseRecord, len(outs))
		for i, o := range outs {
			got[i] = caseRecord{Origin: o.Origin, Key: o.Key, Value: o.Value, Time: o.Time, Headers: o.Headers}
		}
		problems = append(problems, diffOutputs(b, got, want)...)
		problems = append(problems, diffRejects(b, rejects, bt.Rejects)...)
	}
	for _, table := range sortedKeys(c.Final) {
		if !slices.Contains(f.Tables, table) {
			return nil, fmt.Errorf("final: table %q is not declared (tables: %v)", table, f.Tables)
		}
		for _, key := range sortedKeys(c.Final[table]) {
			want := c.Final[table][key]
			v, ok := h.State(table, key)
			switch {
			case want == nil && ok:
				problems = append(problems, fmt.Sprintf("final state %s/%s: %q, want absent", table, key, v))
			case want != nil && !ok:
				problems = append(problems, fmt.Sprintf("final state %s/%s: absent, want %q", table, key, *want))
			case want != nil && string(v) != *want:
				problems = append(problems, fmt.Sprintf("final state %s/%s: %q, want %q", table, key, v, *want))
			}
		}
	}
	return problems, nil
}

func setState(h *hosttest.Harness, tables []string, st stateSpec) error {
	for _, table := range sortedKeys(st) {
		if !slices.Contains(tables, table) {
			return fmt.Errorf("state: table %q is not declared (tables: %v)", table, tables)
		}
		for key, v := range st[table] {
			if v == nil {
				h.SetState(table, key, nil)
				continue
			}
			h.SetState(table, key, []byte(*v))
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// diffOutputs describes how a batch's outputs differ from those wanted:
// the first differing output, and every output, as a case file would
// write them, for pasting.
func diffOutputs(b int, got, want []caseRecord) []string {
	if slices.EqualFunc(got, want, caseRecord.equal) {
		return nil
	}
	var p []string
	for i := range max(len(got), len(want)) {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i].String()
		}
		if i < len(want) {
			w = want[i].String()
		}
		if i >= len(got) || i >= len(want) || !got[i].equal(want[i]) {
			p = append(p, fmt.Sprintf("batch %d output %d:\n  got  %s\n  want %s", b, i, g, w))
			break
		}
	}
	var all strings.Builder
	fmt.Fprintf(&all, "batch %d: the module emitted %d record(s):\nout:", b, len(got))
	if len(got) == 0 {
		all.WriteString(" []")
	}
	for _, g := range got {
		all.WriteString("\n  - " + g.String())
	}
	return append(p, all.String())
}

// diffRejects describes how a batch's dead letters differ from those
// wanted.
func diffRejects(b int, got []sluicetest.Reject, want []rejection) []string {
	var p []string
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(want):
			p = append(p, fmt.Sprintf("batch %d: unexpected reject of input %d: %q", b, got[i].Origin, got[i].Message))
		case i >= len(got):
			p = append(p, fmt.Sprintf("batch %d: input %d was not rejected", b, want[i].Origin))
		case got[i].Origin != want[i].Origin:
			p = append(p, fmt.Sprintf("batch %d reject %d: input %d was rejected (%q), want input %d", b, i, got[i].Origin, got[i].Message, want[i].Origin))
		case want[i].Message != nil && got[i].Message != *want[i].Message:
			p = append(p, fmt.Sprintf("batch %d: input %d rejected with %q, want %q", b, got[i].Origin, got[i].Message, *want[i].Message))
		case want[i].Contains != nil && !strings.Contains(got[i].Message, *want[i].Contains):
			p = append(p, fmt.Sprintf("batch %d: input %d rejected with %q, want a message containing %q", b, got[i].Origin, got[i].Message, *want[i].Contains))
		}
	}
	return p
}

// caseFiles returns the case files of the plugin in dir, sorted.
func caseFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "testdata", "*.yaml"))
	if err != nil {
		return nil, err
	}
	more, _ := filepath.Glob(filepath.Join(dir, "testdata", "*.yml"))
	files = append(files, more...)
	slices.Sort(files)
	return files, nil
}
