package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWindowExamples lints and runs the examples of windows and joins as
// their comments say, from a copy of examples/: lint accepts them (their
// operators are native, with no plugin to check), run ends when the files
// do, with results and no dead letters. The windowed count is checked
// against its input: every click is counted in its minute once, or is in
// the late file.
func TestWindowExamples(t *testing.T) {
	examples := filepath.Join("..", "..", "examples")
	for _, c := range []struct{ name, out string }{
		{"windowed-count", "counts.jsonl"},
		{"session-window", "sessions.jsonl"},
		{"window-join", "joined.jsonl"},
		{"interval-join", "paid.jsonl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(filepath.Join(dir, "data"), os.DirFS(filepath.Join(examples, "data"))); err != nil {
				t.Fatal(err)
			}
			copyFile(t, filepath.Join(examples, c.name+".yaml"), dir)
			code, out, errOut := sluice(t, dir, "lint", "-c", c.name+".yaml")
			if code != 0 || !strings.Contains(out, "native (no plugin)") {
				t.Fatalf("sluice lint exited %d:\n%s%s", code, out, errOut)
			}
			if code, _, errOut := sluice(t, dir, "run", "-c", c.name+".yaml", "--http", "off"); code != 0 {
				t.Fatalf("sluice run exited %d: %s", code, errOut)
			}
			data := filepath.Join(dir, ".sluice", c.name)
			results := lines(t, filepath.Join(data, c.out))
			if len(results) == 0 {
				t.Fatalf("no results in %s", c.out)
			}
			if dead := lines(t, filepath.Join(data, "dead-letters.jsonl")); len(dead) > 0 {
				t.Fatalf("%d dead letters: %s", len(dead), dead[0])
			}
			if c.name != "windowed-count" {
				return
			}
			counted := 0
			for _, l := range results {
				var r struct{ Count int }
				if err := json.Unmarshal([]byte(l), &r); err != nil || r.Count < 1 {
					t.Fatalf("result %s: count %d, %v", l, r.Count, err)
				}
				counted += r.Count
			}
			clicks := lines(t, filepath.Join(dir, "data", "clicks.json"))
			late := lines(t, filepath.Join(data, "late-records.jsonl"))
			if counted+len(late) != len(clicks) {
				t.Errorf("%d clicks counted and %d late, of %d", counted, len(late), len(clicks))
			}
		})
	}
}

// lines returns the non-empty lines of the file at path; none when it does
// not exist.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var ls []string
	for l := range bytes.Lines(b) {
		if s := strings.TrimSpace(string(l)); s != "" {
			ls = append(ls, s)
		}
	}
	return ls
}

// stdinWindowedCount counts clicks per user and minute from standard
// input.
const stdinWindowedCount = `
name: open
sources:
  - {name: clicks, type: stdin, format: json, key_field: user, time_field: ts}
operators:
  - name: per-minute
    kind: aggregate
    function: count
    window: {type: tumbling, size: 1m}
sinks:
  - {name: out, type: file, path: out.jsonl, format: json}
http:
  addr: 127.0.0.1:0
`

// TestStateDumpShowsOpenWindows runs a windowed count whose windows stay
// open (its input, standard input, has not ended and the watermark has
// not passed them): sluice state dump, against the running host, shows
// each open window with its key, bounds and count, and the host's metrics
// include the windows' series. At the end of the input the windows fire.
func TestStateDumpShowsOpenWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sluice process")
	}
	dir := t.TempDir()
	p := writePipeline(t, dir, stdinWindowedCount)
	in, feed := io.Pipe()
	h := startHostWith(t, dir, p, in)
	base := int64(1_700_000_040_000) // ms: 40 s into a minute
	for i := range 30 {
		fmt.Fprintf(feed, `{"user":"u%d","ts":%d}`+"\n", i%3, base+int64(i)*100)
	}
	h.waitFor(t, "clicks", 30)

	code, out, errOut := sluice(t, dir, "state", "dump", "--addr", h.addr)
	if code != 0 {
		t.Fatalf("sluice state dump exited %d: %s", code, errOut)
	}
	// A slice reads: window key "u0" slice [start,end): 10 records, ...
	slice := regexp.MustCompile(`^window key "(u\d)" slice \[\d+, ?\d+\): (\d+) records`)
	counts := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct{ Window string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if m := slice.FindStringSubmatch(e.Window); m != nil {
			n, _ := strconv.Atoi(m[2])
			counts[m[1]] += n
		}
	}
	if len(counts) != 3 || counts["u0"] != 10 || counts["u1"] != 10 || counts["u2"] != 10 {
		t.Errorf("open windows in the dump: %v, want 10 records for each of u0, u1, u2:\n%s", counts, out)
	}

	resp, err := http.Get("http://" + h.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"sluice_window_open_slices", "sluice_window_firings_total", "sluice_operator_late_records_total", "sluice_source_watermark_lag_seconds"} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("metrics lack %s", m)
		}
	}

	feed.Close() // end of input: every window fires
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("sluice run: %v: %s", err, drain(h.logs))
	}
	if got := lines(t, filepath.Join(dir, "out.jsonl")); len(got) != 3 {
		t.Errorf("%d results at the end of the input, want 3: %v", len(got), got)
	}
}

const fileWindowMedian = `
name: median
sources:
  - {name: readings, type: file, path: in.jsonl}
operators:
  - name: medians
    kind: window
    plugin: PLUGINS/winmedian.wasm
    parallelism: 2
    window: {type: tumbling, size: 1m}
sinks:
  - {name: out, type: file, path: out.jsonl}
http:
  addr: "off"
`

// TestWasmWindowFunction runs a window function in Wasm (plugins/winmedian:
// the median of each key's values in a window) through a pipeline and
// checks every result against the median computed here, per key and
// minute, and that every window with records gave one.
func TestWasmWindowFunction(t *testing.T) {
	dir := t.TempDir()
	var in bytes.Buffer
	base := int64(1_700_000_040) * int64(time.Second) // ns, on a minute
	want := map[string][]int{}                        // key and window end-1 -> values
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 3000 {
		key, ts, v := fmt.Sprintf("k%d", i%7), base+int64(i)*int64(150*time.Millisecond), rng.IntN(1000)-500
		fmt.Fprintf(&in, `{"key":%q,"value":"%d","time":%d}`+"\n", key, v, ts)
		end := ts - ts%int64(time.Minute) + int64(time.Minute)
		id := fmt.Sprintf("%s@%d", key, end-1)
		want[id] = append(want[id], v)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writePipeline(t, dir, fileWindowMedian)
	if code, _, errOut := sluice(t, dir, "run", "-c", p); code != 0 {
		t.Fatalf("sluice run exited %d: %s", code, errOut)
	}
	got := map[string]string{}
	for _, l := range lines(t, filepath.Join(dir, "out.jsonl")) {
		var r struct {
			Key, Value string
			Time       int64
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		id := fmt.Sprintf("%s@%d", r.Key, r.Time)
		if _, dup := got[id]; dup {
			t.Fatalf("window %s gave two results", id)
		}
		got[id] = r.Value
	}
	if len(got) != len(want) {
		t.Errorf("%d results, want one for each of the %d windows with records", len(got), len(want))
	}
	for id, vs := range want {
		slices.Sort(vs)
		if m := strconv.Itoa(vs[len(vs)/2]); got[id] != m {
			t.Errorf("window %s: median %q, want %s", id, got[id], m)
		}
	}
}

const fileJoinFunction = `
name: joined
sources:
  - {name: orders, type: file, path: orders.jsonl, watermark: {out_of_orderness: 1s}}
  - {name: payments, type: file, path: payments.jsonl, watermark: {out_of_orderness: 1s}}
operators:
  - name: paid
    kind: join
    inputs: [orders, payments]
    plugin: PLUGINS/joiner.wasm
    parallelism: 2
    join: {type: full}
    window: {type: tumbling, size: 1m}
sinks:
  - {name: out, type: file, path: out.jsonl}
dead_letter: {path: dead.jsonl}
http:
  addr: "off"
`

// TestWasmJoinFunction runs a full window join whose results a Wasm plugin
// builds (plugins/joiner: "L|R", "-" for a side that matched nothing, a
// left value "twice" twice, a value "bad" dead-letters the pair) through a
// pipeline, and checks its results and dead letters against a nested-loop
// join of each minute computed here.
func TestWasmJoinFunction(t *testing.T) {
	dir := t.TempDir()
	base := int64(1_700_000_040) * int64(time.Second) // ns, on a minute
	rng := rand.New(rand.NewPCG(3, 5))
	type rec struct {
		key, value string
		ts         int64
	}
	var sides [2][]rec
	for s, name := range []string{"orders.jsonl", "payments.jsonl"} {
		var b bytes.Buffer
		for i := range 400 {
			r := rec{key: fmt.Sprintf("o%d", rng.IntN(60)), value: fmt.Sprintf("%c%d", "lr"[s], i), ts: base + int64(i)*int64(400*time.Millisecond)}
			switch rng.IntN(40) {
			case 0:
				r.value = "bad"
			case 1:
				r.value = "twice"
			}
			sides[s] = append(sides[s], r)
			fmt.Fprintf(&b, `{"key":%q,"value":%q,"time":%d}`+"\n", r.key, r.value, r.ts)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	window := func(ts int64) int64 { return ts - ts%int64(time.Minute) }
	var want []string
	bad := 0
	result := func(key, l, r string, start int64) {
		if l == "bad" || r == "bad" {
			bad++
			return
		}
		line := fmt.Sprintf("%s %s|%s %d", key, l, r, start+int64(time.Minute)-1)
		want = append(want, line)
		if l == "twice" {
			want = append(want, line)
		}
	}
	hit := map[int]bool{}
	for _, a := range sides[0] {
		matched := false
		for j, b := range sides[1] {
			if a.key == b.key && window(a.ts) == window(b.ts) {
				result(a.key, a.value, b.value, window(a.ts))
				matched, hit[j] = true, true
			}
		}
		if !matched {
			result(a.key, a.value, "-", window(a.ts))
		}
	}
	for j, b := range sides[1] {
		if !hit[j] {
			result(b.key, "-", b.value, window(b.ts))
		}
	}
	p := writePipeline(t, dir, fileJoinFunction)
	if code, _, errOut := sluice(t, dir, "run", "-c", p); code != 0 {
		t.Fatalf("sluice run exited %d: %s", code, errOut)
	}
	var got []string
	for _, l := range lines(t, filepath.Join(dir, "out.jsonl")) {
		var r struct {
			Key, Value string
			Time       int64
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got = append(got, fmt.Sprintf("%s %s %d", r.Key, r.Value, r.Time))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%d results, want %d; first difference in:\n got %.400q\nwant %.400q", len(got), len(want), got, want)
	}
	dead := lines(t, filepath.Join(dir, "dead.jsonl"))
	if bad == 0 || len(dead) != bad {
		t.Fatalf("%d dead letters, want one for each of the %d pairs with a bad value", len(dead), bad)
	}
	for _, l := range dead {
		if !strings.Contains(l, `\"bad\"`) || !strings.Contains(l, "bad value in pair") || !strings.Contains(l, `\"window_start\"`) {
			t.Errorf("dead letter %s: want the pair's default result and the plugin's reason", l)
		}
	}
}

// TestWasmWindowFunctionRejects runs a window function that rejects a
// window (plugins/winmedian, given a value that is not an integer): the
// window's records are dead-lettered and the other windows' results come
// as before.
func TestWasmWindowFunctionRejects(t *testing.T) {
	dir := t.TempDir()
	base := int64(1_700_000_040) * int64(time.Second) // ns, on a minute
	var in bytes.Buffer
	for i, v := range []string{"1", "x", "3", "5", "7", "9"} {
		// Keys a (a bad value among three) and b, one minute.
		fmt.Fprintf(&in, `{"key":%q,"value":%q,"time":%d}`+"\n", []string{"a", "b"}[i/3], v, base+int64(i)*int64(time.Second))
	}
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writePipeline(t, dir, fileWindowMedian+"dead_letter: {path: dead.jsonl}\n")
	if code, _, errOut := sluice(t, dir, "run", "-c", p); code != 0 {
		t.Fatalf("sluice run exited %d: %s", code, errOut)
	}
	if got := lines(t, filepath.Join(dir, "out.jsonl")); len(got) != 1 || !strings.Contains(got[0], `"key":"b","value":"7"`) {
		t.Errorf("results %q, want b's median 7 alone", got)
	}
	dead := lines(t, filepath.Join(dir, "dead.jsonl"))
	if len(dead) != 3 {
		t.Fatalf("dead letters %q, want a's three records", dead)
	}
	for _, l := range dead {
		if !strings.Contains(l, `"key":"a"`) || !strings.Contains(l, "value is not a decimal integer") {
			t.Errorf("dead letter %s: want one of a's records, with the function's reason", l)
		}
	}
}
