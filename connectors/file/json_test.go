package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// Plain JSON lines are records whose value is the line, unchanged, with
// the key and the event time taken from members, written as JSON pointers
// or dotted paths.
func TestPlainJSONKeyAndTime(t *testing.T) {
	lines := []string{
		`{"user":{"id":"u1"},"ts":"2024-05-01T12:00:00.25Z","n":1}`,
		`{"user":{"id":42},"ts":1714564800000}`,
		``,
		` {"user": {"id": "u3"}, "ts": 1714564800000.5, "extra": [1, 2]} `,
		`{"ts":"1714564800001","user":{"id":true}}`,
	}
	path := writeFile(t, strings.Join(lines, "\n")+"\n")
	want := []struct {
		pos  uint64
		key  string
		time int64
	}{
		{1, "u1", time.Date(2024, 5, 1, 12, 0, 0, 250e6, time.UTC).UnixNano()},
		{2, "42", 1714564800000 * 1e6},
		{4, "u3", 1714564800000*1e6 + 500e3},
		{5, "true", 1714564800001 * 1e6},
	}
	for _, fields := range [][2]string{{"/user/id", "/ts"}, {"user.id", "ts"}} {
		got := readAll(t, SourceConfig{Path: path, Format: JSON, KeyField: fields[0], TimeField: fields[1]}, 0)
		if len(got) != len(want) {
			t.Fatalf("fields %v: read %d records, want %d (the blank line skipped)", fields, len(got), len(want))
		}
		for i, w := range want {
			m := got[i]
			if m.Err != nil {
				t.Fatalf("fields %v: line %d: %v", fields, w.pos, m.Err)
			}
			if m.Position != w.pos || string(m.Record.Key) != w.key || m.Record.Time != w.time {
				t.Errorf("fields %v: line %d: position %d, key %q, time %d; want %d, %q, %d", fields, w.pos, m.Position, m.Record.Key, m.Record.Time, w.pos, w.key, w.time)
			}
			if string(m.Record.Value) != lines[w.pos-1] {
				t.Errorf("fields %v: line %d: value %q, want the line unchanged", fields, w.pos, m.Record.Value)
			}
		}
	}
	// Without fields, a line is a record of any JSON value, with no key
	// and time 0.
	got := readAll(t, SourceConfig{Path: writeFile(t, "[1,2]\n\"text\"\n{\"a\":1}\n"), Format: JSON}, 0)
	if len(got) != 3 || got[0].Err != nil || string(got[1].Record.Value) != `"text"` || got[2].Record.Key != nil || got[2].Record.Time != 0 {
		t.Fatalf("plain JSON without fields: %+v", got)
	}
}

// Numeric times are read in the configured unit, milliseconds by default.
func TestPlainJSONTimeUnits(t *testing.T) {
	path := writeFile(t, `{"t":1700000000}`+"\n"+`{"t":1.5}`+"\n")
	for unit, want := range map[TimeUnit][2]int64{
		"":           {1700000000 * 1e6, 1500000},
		Nanoseconds:  {1700000000, 1},
		Microseconds: {1700000000 * 1e3, 1500},
		Milliseconds: {1700000000 * 1e6, 1500000},
		Seconds:      {1700000000 * 1e9, 1500000000},
	} {
		got := readAll(t, SourceConfig{Path: path, Format: JSON, TimeField: "t", TimeUnit: unit}, 0)
		if got[0].Err != nil || got[1].Err != nil || got[0].Record.Time != want[0] || got[1].Record.Time != want[1] {
			t.Errorf("unit %q: times %d, %d (errors %v, %v); want %d, %d", unit, got[0].Record.Time, got[1].Record.Time, got[0].Err, got[1].Err, want[0], want[1])
		}
	}
}

// A line whose key or time cannot be taken is a message with Err naming
// the file, the line and the field, and the raw line, for the dead letter.
func TestPlainJSONFieldErrors(t *testing.T) {
	lines := []string{
		`{"user":{"name":"x"},"ts":1}`,
		`{"user":{"id":"u"},"ts":"yesterday"}`,
		`{"user":{"id":"u"}}`,
		`{"user":{"id":{"a":1}},"ts":1}`,
		`{"user":"u","ts":1}`,
		`{"user":{"id":"u"},"ts":true}`,
		`{"user":{"id":"u"},"ts":1700000000000000000}`,
		`{"user":{"id":"u"},"ts":1`,
		`[{"user":1}]`,
		`{"user":{"id":null},"ts":1}`,
		`{"user":{"id":"ok"},"ts":2}`,
	}
	got := readAll(t, SourceConfig{Path: writeFile(t, strings.Join(lines, "\n")), Format: JSON, KeyField: "/user/id", TimeField: "/ts"}, 0)
	wantErr := []string{
		"input.jsonl:1: key_field /user/id is missing",
		`input.jsonl:2: time_field /ts: "yesterday" is not an RFC 3339 time (such as 2024-05-01T12:00:00Z) or a number of milliseconds since the Unix epoch`,
		"input.jsonl:3: time_field /ts is missing",
		"input.jsonl:4: key_field /user/id is an object: want a string or a number",
		"input.jsonl:5: key_field /user/id: /user is a string, not an object or array",
		"input.jsonl:6: time_field /ts is a boolean: want an RFC 3339 string or a number of milliseconds",
		"input.jsonl:7: time_field /ts: 1700000000000000000 milliseconds since the Unix epoch is out of range (is time_unit ms right?)",
		"input.jsonl:8: invalid JSON",
		"input.jsonl:9: key_field /user/id is missing",
		"input.jsonl:10: key_field /user/id is null: want a string or a number",
	}
	if len(got) != len(lines) {
		t.Fatalf("read %d messages, want %d", len(got), len(lines))
	}
	for i, m := range got {
		if i == len(wantErr) {
			if m.Err != nil || string(m.Record.Key) != "ok" || m.Record.Time != 2e6 {
				t.Errorf("a good line after the bad ones: %+v", m)
			}
			break
		}
		if m.Err == nil || !strings.Contains(m.Err.Error(), wantErr[i]) {
			t.Errorf("line %d: err %v, want one containing %q", i+1, m.Err, wantErr[i])
		}
		if !errors.Is(m.Err, connectors.ErrMalformed) {
			t.Errorf("line %d: err %v does not wrap ErrMalformed", i+1, m.Err)
		}
		if string(m.Record.Value) != lines[i] || m.Record.Key != nil {
			t.Errorf("line %d: record %+v, want the raw line alone", i+1, m.Record)
		}
	}
	got = readAll(t, SourceConfig{Path: writeFile(t, "{\"a\": oops}\n"), Format: JSON}, 0)
	if got[0].Err == nil || !strings.Contains(got[0].Err.Error(), "input.jsonl:1: invalid JSON: invalid character 'o'") {
		t.Errorf("a line that is not JSON, without fields: %v", got[0].Err)
	}
}

func TestParseField(t *testing.T) {
	for in, want := range map[string][]string{
		"/user/id":  {"user", "id"},
		"user.id":   {"user", "id"},
		"/a~1b/~0c": {"a/b", "~c"},
		"/":         {""},
		"items.0":   {"items", "0"},
		"id":        {"id"},
	} {
		f, err := ParseField(in)
		if err != nil || strings.Join(f.segs, "|") != strings.Join(want, "|") || f.String() != in {
			t.Errorf("ParseField(%q) = %q, %v; want %q", in, f.segs, err, want)
		}
	}
	for in, want := range map[string]string{
		"":      "empty: want a JSON pointer",
		"a..b":  "a name between each two dots",
		".a":    "a name between each two dots",
		"/a~2":  "must be written ~0",
		"user.": "a name between each two dots",
	} {
		if _, err := ParseField(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseField(%q) = %v, want an error containing %q", in, err, want)
		}
	}
	f, _ := ParseField("/a~1b/items/1")
	if v, err := f.lookup([]byte(`{"a/b": {"items": ["x", "y"]}}`)); err != nil || string(v) != `"y"` {
		t.Errorf("lookup through an escaped name and an array index = %s, %v", v, err)
	}
}

func TestSourceConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  SourceConfig
		want string
	}{
		{SourceConfig{Path: "in", KeyField: "/k"}, `KeyField applies to format "json" only, not "jsonl"`},
		{SourceConfig{Path: "in", Format: Lines, TimeField: "t"}, `TimeField applies to format "json" only, not "lines"`},
		{SourceConfig{Path: "in", Format: JSON, KeyField: "a..b"}, "file source in: KeyField:"},
		{SourceConfig{Path: "in", Format: JSON, TimeField: "t", TimeUnit: "days"}, `unknown time unit "days" (want ns, us, ms or s)`},
		{SourceConfig{Path: "in", Format: "xml"}, `unknown format "xml" (want "jsonl", "json" or "lines")`},
	} {
		if _, err := NewSource(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSource(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// A stream is read as it comes: Read returns the lines ready, waits for
// the next until the context is done, numbers the lines after the
// position Open was given (a stream cannot skip to it), and ends with the
// stream.
func TestStreamSource(t *testing.T) {
	pr, pw := io.Pipe()
	src, err := NewSource(SourceConfig{Reader: pr, Format: JSON, KeyField: "k", MaxLine: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Resumable() {
		t.Error("a stream source says it is resumable")
	}
	ctx := context.Background()
	if err := src.Open(ctx, 10); err != nil {
		t.Fatal(err)
	}
	buf := make([]connectors.Message, 8)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	if n, err := src.Read(short, buf); n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read with no line and a context that ends = %d, %v; want the context's error", n, err)
	}
	cancel()
	go func() {
		_, _ = io.WriteString(pw, `{"k":"a"}`+"\n\n"+`{"x":1}`+"\n"+`{"k":"a-very-long-key"}`+"\n")
		_, _ = io.WriteString(pw, `{"k":"b"}`)
		pw.Close()
	}()
	var got []connectors.Message
	for {
		n, err := src.Read(ctx, buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if n, err := src.Read(ctx, buf); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("Read after the end = %d, %v; want io.EOF again", n, err)
	}
	if len(got) != 4 {
		t.Fatalf("read %d messages, want 4: %+v", len(got), got)
	}
	for i, w := range []struct {
		pos uint64
		key string
		err string
	}{{11, "a", ""}, {13, "", "stdin:3: key_field k is missing"}, {14, "", "stdin:4: line of 23 bytes is over the limit of 16 bytes (max_line_bytes)"}, {15, "b", ""}} {
		m := got[i]
		if m.Position != w.pos || string(m.Record.Key) != w.key || (m.Err == nil) != (w.err == "") || m.Err != nil && !strings.Contains(m.Err.Error(), w.err) {
			t.Errorf("message %d: position %d, key %q, err %v; want %d, %q, %q", i, m.Position, m.Record.Key, m.Err, w.pos, w.key, w.err)
		}
	}
}

// Close ends a Read that waits for a stream's next line.
func TestStreamSourceClose(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	src, err := NewSource(SourceConfig{Reader: pr, Format: Lines})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Open(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := src.Read(context.Background(), make([]connectors.Message, 1))
		done <- err
	}()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, connectors.ErrClosed) {
		t.Fatalf("Read waiting when the source closed: %v, want ErrClosed", err)
	}
}

// A stream sink writes each format as the file sink does, and is not
// rewindable: a stream cannot be cut back.
func TestWriterSink(t *testing.T) {
	recs := []connectors.Out{
		{Record: abi.Record{Key: []byte("k"), Value: []byte(`{"a": 1}`), Time: 5}, ID: "p/s/1/0"},
		{Record: abi.Record{Value: []byte("[1,\n 2]")}, ID: "p/s/2/0"},
	}
	for _, tc := range []struct {
		cfg  WriterSinkConfig
		want string
	}{
		{WriterSinkConfig{}, `{"key":"k","value":"{\"a\": 1}","time":5}` + "\n" + `{"value":"[1,\n 2]"}` + "\n"},
		{WriterSinkConfig{WriteIDs: true}, `{"key":"k","value":"{\"a\": 1}","time":5,"id":"p/s/1/0"}` + "\n" + `{"value":"[1,\n 2]","id":"p/s/2/0"}` + "\n"},
		{WriterSinkConfig{Format: JSON}, `{"a": 1}` + "\n" + `[1,2]` + "\n"},
	} {
		var b bytes.Buffer
		s, err := NewWriterSink(&b, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := any(s).(connectors.Rewindable); ok {
			t.Fatal("a stream sink is Rewindable")
		}
		if err := s.Write(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
		if b.Len() != 0 {
			t.Errorf("%+v: wrote before Flush", tc.cfg)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%+v: wrote\n%s\nwant\n%s", tc.cfg, b.String(), tc.want)
		}
	}
	s, _ := NewWriterSink(io.Discard, WriterSinkConfig{Format: Lines})
	if err := s.Write(context.Background(), recs); err == nil || !strings.Contains(err.Error(), "stdout: record 1: a value with a line break") {
		t.Errorf("lines with a line break: %v", err)
	}
	s, _ = NewWriterSink(io.Discard, WriterSinkConfig{Format: JSON})
	if err := s.Write(context.Background(), []connectors.Out{{Record: abi.Record{Value: []byte("not json")}}}); err == nil || !strings.Contains(err.Error(), `format "json" writes values that are JSON`) {
		t.Errorf("json format with a value that is not: %v", err)
	}
}

// The scanner that finds a member in a line agrees with encoding/json, on
// any document and any path through it.
func TestLookupAgreesWithEncodingJSON(t *testing.T) {
	names := []string{"a", "b", "id", `q"uote`, "{", "[", "é", `back\slash`, "a/b", "~"}
	var value func(t *rapid.T, depth int) any
	value = func(t *rapid.T, depth int) any {
		kind := rapid.IntRange(0, 6).Draw(t, "kind")
		switch {
		case depth == 0:
			kind = 4 // a line is an object
		case depth >= 3:
			kind %= 4
		}
		switch kind {
		case 0:
			return rapid.SampledFrom([]string{"", "x", `"}]`, `\`, "{[", "é", "\n"}).Draw(t, "string")
		case 1:
			return rapid.Float64Range(-1e6, 1e6).Draw(t, "number")
		case 2:
			return rapid.Bool().Draw(t, "bool")
		case 3:
			return nil
		case 4, 5:
			m := map[string]any{}
			for range rapid.IntRange(0, 4).Draw(t, "members") {
				m[rapid.SampledFrom(names).Draw(t, "name")] = value(t, depth+1)
			}
			return m
		}
		a := make([]any, rapid.IntRange(0, 4).Draw(t, "elements"))
		for i := range a {
			a[i] = value(t, depth+1)
		}
		return a
	}
	rapid.Check(t, func(t *rapid.T) {
		doc := value(t, 0)
		var line []byte
		var err error
		if rapid.Bool().Draw(t, "indent") {
			line, err = json.MarshalIndent(doc, " ", "  ")
		} else {
			line, err = json.Marshal(doc)
		}
		if err != nil {
			t.Fatal(err)
		}
		// A path down to a random depth, through members and elements
		// that exist, and sometimes one that does not.
		var segs []string
		cur := doc
		for rapid.Bool().Draw(t, "deeper") {
			switch v := cur.(type) {
			case map[string]any:
				name := rapid.SampledFrom(names).Draw(t, "step")
				if len(v) > 0 && rapid.IntRange(0, 3).Draw(t, "existing") > 0 {
					name = rapid.SampledFrom(slices.Sorted(maps.Keys(v))).Draw(t, "member")
				}
				segs = append(segs, name)
				cur = v[name]
				if _, ok := v[name]; !ok {
					cur = missing{}
				}
			case []any:
				n := rapid.IntRange(0, 4).Draw(t, "index")
				segs = append(segs, strconv.Itoa(n))
				cur = missing{}
				if n < len(v) {
					cur = v[n]
				}
			}
			if _, ok := cur.(missing); ok {
				break
			}
			if _, ok := cur.(map[string]any); !ok {
				if _, ok := cur.([]any); !ok {
					break
				}
			}
		}
		if len(segs) == 0 {
			return
		}
		var p strings.Builder
		for _, s := range segs {
			p.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
		}
		f, err := ParseField(p.String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.lookup(line)
		if _, ok := cur.(missing); ok {
			if err == nil || err.Error() != "is missing" {
				t.Fatalf("lookup %s in %s = %s, %v; want it missing", p.String(), line, got, err)
			}
			return
		}
		want, _ := json.Marshal(cur)
		var compact bytes.Buffer
		if err != nil || json.Compact(&compact, got) != nil || compact.String() != string(want) {
			t.Fatalf("lookup %s in %s = %s, %v; want %s", p.String(), line, got, err, want)
		}
	})
}

// missing marks a path that leads nowhere.
type missing struct{}
