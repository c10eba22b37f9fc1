package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// fataler is what readAll needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// readAll opens path after `after` and reads it to the end.
func readAll(t fataler, cfg SourceConfig, after uint64) []connectors.Message {
	t.Helper()
	src, err := NewSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	if err := src.Open(ctx, after); err != nil {
		t.Fatal(err)
	}
	var out []connectors.Message
	buf := make([]connectors.Message, 3)
	for {
		n, err := src.Read(ctx, buf)
		if errors.Is(err, io.EOF) {
			if n != 0 {
				t.Fatalf("io.EOF with %d messages", n)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, buf[:n]...)
	}
	if n, err := src.Read(ctx, buf); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("Read after the end = %d, %v; want io.EOF again", n, err)
	}
	return out
}

func writeFile(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "input.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// normalize makes a record comparable after a round trip: empty slices
// become nil, headers are sorted by name.
func normalize(r abi.Record) abi.Record {
	if len(r.Key) == 0 {
		r.Key = nil
	}
	if len(r.Value) == 0 {
		r.Value = []byte{}
	}
	if len(r.Headers) == 0 {
		r.Headers = nil
	} else {
		r.Headers = slices.Clone(r.Headers)
		slices.SortStableFunc(r.Headers, func(a, b abi.Header) int { return strings.Compare(string(a.Name), string(b.Name)) })
	}
	return r
}

func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 30).Draw(t, "n")
		want := make([]connectors.Out, n)
		for i := range want {
			r := abi.Record{
				Key:   rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "key"),
				Value: rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "value"),
				Time:  rapid.Int64().Draw(t, "time"),
			}
			if rapid.Bool().Draw(t, "text") {
				r.Value = []byte(rapid.String().Draw(t, "text value"))
			}
			names := rapid.SliceOfNDistinct(rapid.StringN(1, 8, -1), 0, 4, rapid.ID[string]).Draw(t, "header names")
			for _, name := range names {
				v := []byte(rapid.String().Draw(t, "header value"))
				if rapid.Bool().Draw(t, "binary header") {
					v = rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "header bytes")
				}
				r.Headers = append(r.Headers, abi.Header{Name: []byte(name), Value: v})
			}
			want[i] = connectors.Out{Record: r, ID: fmt.Sprint(i)}
		}
		path := filepath.Join(os.TempDir(), fmt.Sprintf("sluice-file-rt-%d.jsonl", os.Getpid()))
		defer os.Remove(path)
		sink, err := NewSink(SinkConfig{Path: path, Truncate: true, WriteIDs: rapid.Bool().Draw(t, "ids")})
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.Write(context.Background(), want); err != nil {
			t.Fatal(err)
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
		got := readAll(t, SourceConfig{Path: path}, 0)
		if len(got) != n {
			t.Fatalf("read %d records, wrote %d", len(got), n)
		}
		for i, m := range got {
			if m.Err != nil {
				t.Fatalf("record %d: %v", i, m.Err)
			}
			if m.Position != uint64(i+1) {
				t.Fatalf("record %d at position %d", i, m.Position)
			}
			if g, w := normalize(m.Record), normalize(want[i].Record); !reflect.DeepEqual(g, w) {
				t.Fatalf("record %d:\n got %+v\nwant %+v", i, g, w)
			}
		}
	})
}

func TestBinaryValueIsWrittenAsBase64(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	sink, err := NewSink(SinkConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	recs := []connectors.Out{
		{Record: abi.Record{Key: []byte{0xff}, Value: []byte{0, 1, 2, 0xff}}},
		{Record: abi.Record{Value: []byte("tab\there \"quoted\" \u00e9"), Time: 5, Headers: []abi.Header{{Name: []byte("h"), Value: []byte("v")}}}},
	}
	if err := sink.Write(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"key_base64":"/w==","value_base64":"AAEC/w=="}` + "\n" +
		`{"value":"tab\there \"quoted\" é","time":5,"headers":{"h":"v"}}` + "\n"
	if string(data) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", data, want)
	}
}

func TestMalformedLinesNameFileAndLine(t *testing.T) {
	path := writeFile(t, strings.Join([]string{
		`{"value":"ok","time":"2023-11-14T22:13:20.5Z"}`,
		`{"value": oops}`,
		``,
		`{"key":"k"}`,
		`{"value":"a","value_base64":"YQ=="}`,
		`{"value":"a","time":1.5}`,
		`{"value":"a","colour":"red"}`,
		`{"value":"a"} {"value":"b"}`,
		`{"value":"a","time":"yesterday"}`,
		`{"value":"last","time":null,"id":"x"}`,
	}, "\n"))
	got := readAll(t, SourceConfig{Path: path}, 0)
	wantErr := map[uint64]string{
		2: "input.jsonl:2: invalid JSON",
		4: `input.jsonl:4: missing "value"`,
		5: `input.jsonl:5: both "value" and "value_base64"`,
		6: `input.jsonl:6: "time": want integer nanoseconds or an RFC 3339 string, got 1.5`,
		7: `input.jsonl:7: unknown field "colour": format jsonl reads Sluice's record envelope`,
		8: "input.jsonl:8: invalid JSON: text after the object",
		9: `input.jsonl:9: "time": "yesterday" is not an RFC 3339 time`,
	}
	var positions []uint64
	for _, m := range got {
		positions = append(positions, m.Position)
		want, bad := wantErr[m.Position]
		switch {
		case bad && (m.Err == nil || !strings.HasPrefix(m.Err.Error(), path+":") || !strings.Contains(m.Err.Error(), want)):
			t.Errorf("line %d: err %v, want one containing %q", m.Position, m.Err, want)
		case bad && !errors.Is(m.Err, connectors.ErrMalformed):
			t.Errorf("line %d: err %v does not wrap ErrMalformed", m.Position, m.Err)
		case bad && len(m.Record.Value) == 0:
			t.Errorf("line %d: the raw line is not kept for the dead letter", m.Position)
		case !bad && m.Err != nil:
			t.Errorf("line %d: %v", m.Position, m.Err)
		}
	}
	if !reflect.DeepEqual(positions, []uint64{1, 2, 4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("positions %v, want every line but the blank one", positions)
	}
	if got[0].Record.Time != 1700000000500000000 || string(got[0].Record.Value) != "ok" {
		t.Fatalf("line 1 = %+v", got[0].Record)
	}
	if last := got[len(got)-1]; string(last.Record.Value) != "last" || last.Record.Time != 0 {
		t.Fatalf("line 10 = %+v", last.Record)
	}
}

func TestHugeLines(t *testing.T) {
	huge := strings.Repeat("x", 100_000)
	exact := strings.Repeat("y", 1024)
	path := writeFile(t, "first\n"+huge+"\r\n"+exact+"\r\nafter\n"+huge)
	got := readAll(t, SourceConfig{Path: path, Format: Lines, MaxLine: 1024}, 0)
	if len(got) != 5 {
		t.Fatalf("read %d messages, want 5", len(got))
	}
	for _, i := range []int{1, 4} {
		m := got[i]
		if !errors.Is(m.Err, connectors.ErrTooLarge) || len(m.Record.Value) != 1024 {
			t.Fatalf("message %d: err %v, value of %d bytes; want ErrTooLarge and the first 1024 bytes", i, m.Err, len(m.Record.Value))
		}
		want := fmt.Sprintf("input.jsonl:%d: line of 100000 bytes is over the limit of 1024 bytes (max_line_bytes)", i+1)
		if !strings.Contains(m.Err.Error(), want) {
			t.Fatalf("message %d: %q, want it to contain %q", i, m.Err, want)
		}
	}
	if got[2].Err != nil || string(got[2].Record.Value) != exact {
		t.Fatalf("a line of exactly MaxLine bytes: err %v, %d bytes", got[2].Err, len(got[2].Record.Value))
	}
	if string(got[0].Record.Value) != "first" || string(got[3].Record.Value) != "after" || got[3].Position != 4 {
		t.Fatalf("lines around the huge ones: %q %q at %d", got[0].Record.Value, got[3].Record.Value, got[3].Position)
	}
}

func TestLinesFormat(t *testing.T) {
	got := readAll(t, SourceConfig{Path: writeFile(t, "a\n\nb\r\nc"), Format: Lines}, 0)
	var values []string
	for i, m := range got {
		if m.Err != nil || m.Position != uint64(i+1) || m.Record.Key != nil || m.Record.Headers != nil {
			t.Fatalf("message %d = %+v", i, m)
		}
		values = append(values, string(m.Record.Value))
	}
	if !reflect.DeepEqual(values, []string{"a", "", "b", "c"}) {
		t.Fatalf("values %q", values)
	}
}

func TestResumeEqualsUninterrupted(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&b, "{\"value\":\"v%d\",\"time\":%d}\n", i, i)
		if i%7 == 0 {
			b.WriteString("\n")
		}
	}
	path := writeFile(t, b.String())
	all := readAll(t, SourceConfig{Path: path}, 0)
	for _, after := range []uint64{0, 1, 7, 8, 30, 56, 57, 1000} {
		rest := readAll(t, SourceConfig{Path: path}, after)
		var want []connectors.Message
		for _, m := range all {
			if m.Position > after {
				want = append(want, m)
			}
		}
		if !reflect.DeepEqual(rest, want) {
			t.Fatalf("after %d: %d messages, want %d equal to the uninterrupted run's", after, len(rest), len(want))
		}
	}
}

func TestSourceErrors(t *testing.T) {
	if _, err := NewSource(SourceConfig{Path: "x", Format: "csv"}); err == nil || !strings.Contains(err.Error(), `"csv"`) {
		t.Fatalf("unknown format: %v", err)
	}
	src, err := NewSource(SourceConfig{Path: filepath.Join(t.TempDir(), "missing.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Read(context.Background(), make([]connectors.Message, 1)); !errors.Is(err, connectors.ErrNotOpen) {
		t.Fatalf("Read before Open: %v", err)
	}
	if err := src.Open(context.Background(), 0); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Fatalf("Open of a missing file: %v", err)
	}
}

func TestSinkAppendsAndTruncates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	write := func(truncate bool, v string) {
		sink, err := NewSink(SinkConfig{Path: path, Format: Lines, Truncate: truncate})
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.Write(context.Background(), []connectors.Out{{Record: abi.Record{Value: []byte(v)}}}); err != nil {
			t.Fatal(err)
		}
		if err := sink.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
		if err := sink.Write(context.Background(), nil); !errors.Is(err, connectors.ErrClosed) {
			t.Fatalf("Write after Close: %v", err)
		}
	}
	write(false, "a")
	write(false, "b")
	if data, _ := os.ReadFile(path); string(data) != "a\nb\n" {
		t.Fatalf("appended file = %q", data)
	}
	write(true, "c")
	if data, _ := os.ReadFile(path); string(data) != "c\n" {
		t.Fatalf("truncated file = %q", data)
	}
}

func TestLinesSinkRefusesLineBreaks(t *testing.T) {
	sink, err := NewSink(SinkConfig{Path: filepath.Join(t.TempDir(), "out.txt"), Format: Lines})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	err = sink.Write(context.Background(), []connectors.Out{{Record: abi.Record{Value: []byte("two\nlines")}}})
	if err == nil || !strings.Contains(err.Error(), "line break") {
		t.Fatalf("Write = %v, want a refusal", err)
	}
}

func TestSinkRewindDropsWhatFollowsTheCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	ctx := context.Background()
	s, err := NewSink(SinkConfig{Path: path, Format: Lines})
	if err != nil {
		t.Fatal(err)
	}
	write := func(s *Sink, vals ...string) {
		t.Helper()
		var out []connectors.Out
		for _, v := range vals {
			out = append(out, connectors.Out{Record: abi.Record{Value: []byte(v)}})
		}
		if err := s.Write(ctx, out); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write(s, "a", "b")
	committed := s.Offset()
	if committed != 4 {
		t.Fatalf("offset %d after two 1-byte lines, want 4", committed)
	}
	write(s, "c") // written after the commit, then the process "crashes"
	s.Close()

	s, err = NewSink(SinkConfig{Path: path, Format: Lines})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Rewind(context.Background(), committed); err != nil {
		t.Fatal(err)
	}
	write(s, "d")
	if got, _ := os.ReadFile(path); string(got) != "a\nb\nd\n" {
		t.Errorf("file after rewind and a write: %q", got)
	}
	if err := s.Rewind(context.Background(), 100); err == nil || !strings.Contains(err.Error(), "changed outside the pipeline") {
		t.Errorf("Rewind past the end = %v", err)
	}
}

// TestSinkCreatesItsDirectory: a sink whose directory does not exist yet
// creates it, as a pipeline file's output path expects.
func TestSinkCreatesItsDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "out.jsonl")
	sink, err := NewSink(SinkConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(context.Background(), []connectors.Out{{Record: abi.Record{Value: []byte("v")}}}); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || len(b) == 0 {
		t.Fatalf("read back: %q, %v", b, err)
	}
}

func TestDecodeField(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, c := range []struct {
		name      string
		text, b64 *string
		want      string
		ok        bool
		err       string
	}{
		{"text", s("a b"), nil, "a b", true, ""},
		{"base64", nil, s("/2E="), "\xffa", true, ""},
		{"empty text", s(""), nil, "", true, ""},
		{"neither", nil, nil, "", false, ""},
		{"both", s("a"), s("YQ=="), "", false, "key and key_base64 are both given"},
		{"bad base64", nil, s("!!"), "", false, "key_base64 is not standard base64"},
	} {
		b, ok, err := DecodeField("key", c.text, c.b64)
		if string(b) != c.want || ok != c.ok || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: %q, %v, %v; want %q, %v, error %q", c.name, b, ok, err, c.want, c.ok, c.err)
		}
	}
}

// A header's binary value is written under "headers_base64" and read back
// as it was; a name under both members is refused.
func TestBinaryHeaderValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	sink, err := NewSink(SinkConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rec := abi.Record{Value: []byte("v"), Headers: []abi.Header{{Name: []byte("bin"), Value: []byte{0, 0xff, 'a'}}, {Name: []byte("text"), Value: []byte("t")}}}
	if err := sink.Write(context.Background(), []connectors.Out{{Record: rec}}); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	line, _ := os.ReadFile(path)
	if want := `{"value":"v","headers":{"text":"t"},"headers_base64":{"bin":"AP9h"}}` + "\n"; string(line) != want {
		t.Errorf("line %q, want %q", line, want)
	}
	got := readAll(t, SourceConfig{Path: path}, 0)
	if len(got) != 1 || got[0].Err != nil || !reflect.DeepEqual(got[0].Record.Headers, rec.Headers) {
		t.Errorf("read back %+v, want the headers %+v", got, rec.Headers)
	}
	got = readAll(t, SourceConfig{Path: writeFile(t, `{"value":"v","headers":{"h":"t"},"headers_base64":{"h":"AP9h"}}`+"\n")}, 0)
	if len(got) != 1 || got[0].Err == nil || !strings.Contains(got[0].Err.Error(), `header "h" both in "headers" and in "headers_base64"`) {
		t.Errorf("a header under both members: %+v", got)
	}
}
