package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

const small = `name: x
sources:
  - name: in
    type: file
    path: in.jsonl
operators:
  - name: m
    plugin: m.wasm
    kind: map
sinks:
  - name: out
    type: file
    path: out.jsonl
`

// parseErr parses y and returns its error, which must be a *Error.
func parseErr(t *testing.T, y string) string {
	t.Helper()
	_, err := Parse("p.yaml", "/pipes", []byte(y))
	if err == nil {
		t.Fatalf("no error for\n%s", y)
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Errorf("error %T is not a *pipeline.Error: %v", err, err)
	}
	return err.Error()
}

// A YAML syntax error is reported at the line where the file stops
// parsing, not where the block holding it starts, with the mapping it is
// in.
func TestSyntaxErrorLines(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"indented less than its siblings", "    kind: map", "   kind: map",
			`p.yaml:9: operators[0]: did not find expected '-' indicator (is this line indented like the keys it belongs with?)`},
		{"indented between the list and its keys", "    kind: map", " kind: map",
			`p.yaml:9: operators[0]: did not find expected key (is this line indented like the keys it belongs with?)`},
		{"indented too far", "    kind: map", "      kind: map",
			`p.yaml:9: operators[0]: mapping values are not allowed in this context (is this line indented too far`},
		{"a sink key indented wrong", "    path: out.jsonl", "   path: out.jsonl",
			`p.yaml:13: sinks[0]: did not find expected '-' indicator`},
		{"an unclosed list", "sources:\n", "sources: [\n", "p.yaml:2: did not find expected node content"},
	} {
		if !strings.Contains(small, tc.old) {
			t.Fatalf("%s: no %q", tc.name, tc.old)
		}
		if got := parseErr(t, strings.Replace(small, tc.old, tc.new, 1)); !strings.Contains(got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// A value of the wrong type names its key.
func TestTypeErrorsNameTheirKey(t *testing.T) {
	gen := "    type: generator\n"
	for _, tc := range []struct{ old, new, want string }{
		{"    type: file\n    path: in.jsonl\n", gen + "    count: many\n", `p.yaml:5: sources[0].count: "many" is not a whole number of 0 or more`},
		{"    type: file\n    path: in.jsonl\n", gen + "    rate: fast\n", `p.yaml:5: sources[0].rate: "fast" is not a number`},
		{"    kind: map\n", "    kind: map\n    parallelism: two\n", `p.yaml:10: operators[0].parallelism: "two" is not a whole number`},
		{"    kind: map\n", "    kind: map\n    limits: {memory_pages: 99999999999}\n", `p.yaml:10: operators[0].limits.memory_pages: 99999999999 is out of range (want 0 to 4294967295)`},
		{"    kind: map\n", "    kind: map\n    limits: {call_timeout: soon}\n", `p.yaml:10: operators[0].limits.call_timeout: "soon" is not a duration`},
		{"    kind: map\n", "    kind: map\n    grants: {clock: maybe}\n", `p.yaml:10: operators[0].grants.clock: "maybe" is not true or false`},
		{"    kind: map\n", "    kind: map\n    state: counts\n", `p.yaml:10: operators[0].state: want a list, not "counts"`},
		{"    kind: map\n", "    kind: map\n    limits: 5\n", `p.yaml:10: operators[0].limits: want a mapping of keys (memory_pages, call_timeout`},
		{"    plugin: m.wasm\n", "    plugin: [a, b]\n", `p.yaml:8: operators[0].plugin: want a single value, not a list`},
	} {
		if got := parseErr(t, strings.Replace(small, tc.old, tc.new, 1)); !strings.Contains(got, tc.want) {
			t.Errorf("\n got %s\nwant %s", got, tc.want)
		}
	}
}

// An unknown key is refused with the nearest known key, and with every
// key of its mapping, read from the struct tags.
func TestUnknownKeys(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"    kind: map\n", "    kind: map\n    retrys: 2\n", `p.yaml:10: operators[0].retrys: unknown key "retrys" in an operator: did you mean "retries"?`},
		{"    kind: map\n", "    kind: map\n    quarantineAfter: 2\n", `did you mean "quarantine_after"?`},
		{"    kind: map\n", "    kind: map\n    kidn: map\n", `did you mean "kind"?`},
		{"    kind: map\n", "    kind: map\n    max_record_bytes: 1KiB\n", `operators[0].max_record_bytes: unknown key "max_record_bytes" in an operator: it belongs under limits (limits: {max_record_bytes: ...})`},
		{"    kind: map\n", "    kind: map\n    limits: {max_record_byte: 1}\n", `operators[0].limits.max_record_byte: unknown key "max_record_byte" in limits: did you mean "max_record_bytes"?`},
		{"    path: in.jsonl\n", "    path: in.jsonl\n    formt: json\n", `sources[0].formt: unknown key "formt" in a file source: did you mean "format"? (known: name, type, path, format, key_field, time_field, time_unit, max_line_bytes, watermark)`},
		{"name: x\n", "name: x\nbatchs: {size: 1}\n", `p.yaml:2: batchs: unknown key "batchs" in the pipeline: did you mean "batch"?`},
		{"name: x\n", "name: x\nzzz: 1\n", `unknown key "zzz" in the pipeline (known: name, nats, data_dir, state, batch, sources, operators, sinks, dead_letter, late, http, on_error, cluster, control, compile_cache)`},
		{"    kind: map\n", "    kind: map\n    kind: filter\n", `p.yaml:10: operators[0].kind: kind is given twice (first at line 9)`},
	} {
		if got := parseErr(t, strings.Replace(small, tc.old, tc.new, 1)); !strings.Contains(got, tc.want) {
			t.Errorf("\n got %s\nwant %s", got, tc.want)
		}
	}
	// The list of an operator's keys is every yaml tag of Operator.
	got := parseErr(t, strings.Replace(small, "    kind: map\n", "    kind: map\n    zzz: 1\n", 1))
	for f := range reflect.TypeFor[Operator]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "-" && !strings.Contains(got, " "+name+",") && !strings.Contains(got, " "+name+")") {
			t.Errorf("the known keys of an operator lack %s: %s", name, got)
		}
	}
	for _, k := range []string{"retries", "quarantine_after", "rollback_batches", "grants", "adaptive"} {
		if !strings.Contains(got, k) {
			t.Errorf("the known keys of an operator lack %s", k)
		}
	}
}

// A key of another source or sink type is refused, not ignored.
func TestKeysOfAnotherType(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"    path: in.jsonl\n", "    path: in.jsonl\n    rate: 100\n", `p.yaml:6: sources[0].rate: rate is a key of generator sources, not of a file source (its keys: name, type, path, format, key_field, time_field, time_unit, max_line_bytes, watermark)`},
		{"    path: in.jsonl\n", "    path: in.jsonl\n    subject: events\n", `p.yaml:6: sources[0].subject: subject is a key of nats and jetstream sources, not of a file source`},
		{"    type: file\n    path: in.jsonl\n", "    type: generator\n    path: in.jsonl\n", `p.yaml:5: sources[0].path: path is a key of file sources, not of a generator source`},
		{"    type: file\n    path: in.jsonl\n", "    type: stdin\n    path: in.jsonl\n", `p.yaml:5: sources[0].path: path is a key of file sources, not of a stdin source`},
		{"    type: file\n    path: in.jsonl\n", "    type: nats\n    subject: s\n    queue: q\n    stream: S\n", `p.yaml:7: sources[0].stream: stream is a key of jetstream sources, not of a nats source`},
		{"    path: out.jsonl\n", "    path: out.jsonl\n    subject: x\n", `p.yaml:14: sinks[0].subject: subject is a key of nats and jetstream sinks, not of a file sink (its keys: name, inputs, type, path, format)`},
		{"    type: file\n    path: out.jsonl\n", "    type: stdout\n    path: out.jsonl\n", `sinks[0].path: path is a key of file sinks, not of a stdout sink`},
	} {
		if !strings.Contains(small, tc.old) {
			t.Fatalf("no %q", tc.old)
		}
		if got := parseErr(t, strings.Replace(small, tc.old, tc.new, 1)); !strings.Contains(got, tc.want) {
			t.Errorf("\n got %s\nwant %s", got, tc.want)
		}
	}
}

func TestParseJSONAndStreams(t *testing.T) {
	y := strings.Replace(small, "    path: in.jsonl\n", "    path: in.jsonl\n    format: json\n    key_field: /user/id\n    time_field: ts\n", 1) +
		"  - {name: term, type: stdout, format: json}\n"
	p, err := Parse("p.yaml", "/pipes", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Sources[0]
	if s.Format != FormatJSON || s.KeyField != "/user/id" || s.TimeField != "ts" || s.TimeUnit != "ms" || s.MaxLineBytes != DefaultMaxLineBytes {
		t.Errorf("source %+v: want format json, the fields, time unit ms and a line cap of 1 MiB", s)
	}
	if p.Sinks[0].Format != FormatJSONL || p.Sinks[1].Format != FormatJSON || p.Sinks[1].Type != "stdout" {
		t.Errorf("sinks %+v", p.Sinks)
	}
	y = strings.Replace(small, "    type: file\n    path: in.jsonl\n", "    type: stdin\n    format: lines\n", 1)
	y = strings.Replace(y, "    kind: map\n", "    kind: map\n    limits: {max_record_bytes: 4MiB}\n", 1)
	if p, err = Parse("p.yaml", "/pipes", []byte(y)); err != nil {
		t.Fatal(err)
	}
	if s := p.Sources[0]; s.Type != "stdin" || s.Path != "" || s.MaxLineBytes != 4<<20 {
		t.Errorf("stdin source %+v: want no path, and the first operator's max_record_bytes as the line cap", s)
	}
	y = strings.Replace(small, "    path: in.jsonl\n", "    path: in.jsonl\n    max_line_bytes: 64KiB\n", 1)
	if p, err = Parse("p.yaml", "/pipes", []byte(y)); err != nil || p.Sources[0].MaxLineBytes != 64<<10 {
		t.Errorf("max_line_bytes: %v, %+v", err, p)
	}
}

func TestParseJSONAndStreamErrors(t *testing.T) {
	src := func(keys string) string {
		return strings.Replace(small, "    path: in.jsonl\n", "    path: in.jsonl\n"+keys, 1)
	}
	for _, tc := range []struct{ yaml, want string }{
		{src("    key_field: /user/id\n"), "p.yaml:6: sources[0].key_field: key_field applies to format json (plain JSON lines), not jsonl"},
		{src("    format: lines\n    time_field: ts\n"), "p.yaml:7: sources[0].time_field: time_field applies to format json (plain JSON lines), not lines"},
		{src("    format: json\n    key_field: user..id\n"), `p.yaml:7: sources[0].key_field: "user..id": a dotted path has a name between each two dots`},
		{src("    format: json\n    key_field: \"\"\n"), "p.yaml:7: sources[0].key_field: empty: want a JSON pointer"},
		{src("    format: json\n    time_field: ts\n    time_unit: days\n"), `p.yaml:8: sources[0].time_unit: unknown time unit "days" (want ns, us, ms or s)`},
		{src("    format: json\n    time_unit: s\n"), "p.yaml:7: sources[0].time_unit: time_unit applies with time_field only"},
		{src("    format: xml\n"), `p.yaml:6: sources[0].format: unknown format "xml" (want jsonl: Sluice's record envelope; json: plain JSON, the line is the value; lines: the line is the value)`},
		{src("    max_line_bytes: lots\n"), `p.yaml:6: sources[0].max_line_bytes: "lots" is not a size`},
		{strings.Replace(small, "path: in.jsonl", `path: "-"`, 1), `p.yaml:5: sources[0].path: "-" is not read as standard input: write type: stdin (and no path)`},
		{strings.Replace(small, "path: out.jsonl", `path: "-"`, 1), `p.yaml:13: sinks[0].path: "-" is not standard output: write type: stdout (and no path)`},
		{strings.Replace(small, "    path: out.jsonl\n", "    path: out.jsonl\n    format: csv\n", 1), `p.yaml:14: sinks[0].format: unknown format "csv"`},
		{strings.Replace(small, "    type: file\n    path: in.jsonl\n", "    type: stdin\n  - name: in2\n    type: stdin\n", 1), `p.yaml:6: sources[1].type: source "in" reads standard input already: a pipeline has one stdin source`},
		{small + "  - {name: o1, type: stdout}\n  - {name: o2, type: stdout}\n", `p.yaml:15: sinks[2].type: sink "o1" writes standard output already: a pipeline has one stdout sink`},
		{strings.Replace(small, "    kind: map\n", "    kind: map\n    limits: {max_record_bytes: 32MiB}\n", 1), "p.yaml:10: operators[0].limits.max_record_bytes: max_record_bytes 33554432: at most 16MiB (16777216), the plugin ABI's bound on one record"},
	} {
		if got := parseErr(t, tc.yaml); !strings.Contains(got, tc.want) {
			t.Errorf("\n got %s\nwant %s", got, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"kind", "kidn", 1}, {"retrys", "retries", 2}, {"abc", "", 3}, {"rate", "rat", 1}, {"sluice", "sluice", 0}, {"ab", "ba", 1}} {
		if d := distance(tc.a, tc.b); d != tc.d {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// Every key a pipeline file may hold is documented, in the README's
// pipeline file reference or in docs/.
func TestEveryKeyIsDocumented(t *testing.T) {
	var docs strings.Builder
	for _, pat := range []string{"../../README.md", "../../docs/*.md"} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs.Write(b)
		}
	}
	text := docs.String()
	seen := map[reflect.Type]bool{}
	var visit func(typ reflect.Type, path string)
	visit = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || reflect.PointerTo(typ).Implements(unmarshalerType) {
			return
		}
		seen[typ] = true
		for _, k := range keysOf(typ) {
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(k.name) + `\b`).MatchString(text) {
				t.Errorf("the key %s%s is documented nowhere in README.md or docs/", path, k.name)
			}
			visit(k.typ, path+k.name+".")
		}
	}
	visit(reflect.TypeFor[Pipeline](), "")
}
