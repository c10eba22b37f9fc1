package exec

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/host/plugin"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/state"
)

// modules holds the compiled test plugins, built once in TestMain.
var modules map[string][]byte

// compileCache is where the tests' engines keep the plugins' machine code,
// so that a plugin is compiled once per run of the tests, not once per
// test (compiling is most of their time under the race detector).
var compileCache string

func TestMain(m *testing.M) {
	flag.Parse()
	if raceEnabled && !flagSet("rapid.checks") {
		// Each check starts a job with its plugin instances, several times
		// slower under the race detector: fewer checks keep the run short.
		flag.Set("rapid.checks", "25")
	}
	var err error
	modules, err = wasmbuild.GoModules(context.Background(), map[string]string{
		"upper":      "../../plugins/upper",
		"wordcount":  "../../plugins/wordcount",
		"wincount":   "../../plugins/wincount",
		"joiner":     "../../plugins/joiner",
		"faulty":     "testdata/faulty",
		"firereject": "testdata/firereject",
		"lower":      "testdata/lower",
		"inputs":     "../plugin/testdata/inputs/goinputs",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	compileCache, err = os.MkdirTemp("", "sluice-exec-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(compileCache)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// load compiles a test plugin on a fresh engine closed with the test.
func load(t testing.TB, name string, kind plugin.Kind, timeout time.Duration) *plugin.Plugin {
	t.Helper()
	ctx := context.Background()
	cfg := wasm.NewConfig().WithHostModules(plugin.HostModule()).WithCacheDir(compileCache)
	if timeout > 0 {
		cfg = cfg.WithCallTimeout(timeout)
	}
	eng, err := wasm.NewWazero(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(ctx) })
	p, err := plugin.Load(ctx, eng, name+".wasm", modules[name], kind)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tb is what the helpers need of *testing.T and *rapid.T alike.
type tb interface {
	Helper()
	Fatal(args ...any)
}

func openStore(t tb, dir string) *state.Store {
	t.Helper()
	s, err := state.Open(dir, state.Options{KeyGroups: 16, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func records(values ...string) []abi.Record {
	out := make([]abi.Record, len(values))
	for i, v := range values {
		out[i] = abi.Record{Key: []byte(v), Value: []byte(v), Time: int64(i)}
	}
	return out
}

type run struct {
	src   *sliceSource
	sink  *memSink
	dead  *memSink
	store *state.Store
	job   *Job
}

func newRun(t tb, store *state.Store, src *sliceSource, batch int, ops ...Operator) *run {
	t.Helper()
	r := &run{src: src, sink: &memSink{}, dead: &memSink{}, store: store}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: src}}, Operators: ops,
		Sinks: []Output{{Name: "out", Sink: r.sink}}, DeadLetter: r.dead, Store: store,
		BatchSize: batch, Linger: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.job = job
	return r
}

func TestMapKeepsOrderAndDerivesIDs(t *testing.T) {
	var values []string
	for i := range 1000 {
		values = append(values, fmt.Sprintf("rec-%d-abc", i))
	}
	store := openStore(t, t.TempDir())
	defer store.Close()
	src := &sliceSource{recs: records(values...), chunk: 37}
	r := newRun(t, store, src, 300, Operator{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 3})
	if err := r.job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := r.sink.records()
	if len(out) != len(values) {
		t.Fatalf("%d outputs, want %d", len(out), len(values))
	}
	for i, o := range out {
		if want := strings.ToUpper(values[i]); string(o.Record.Value) != want {
			t.Fatalf("output %d = %q, want %q (order must be kept)", i, o.Record.Value, want)
		}
		if want := fmt.Sprintf("p/in/%d/0", i+1); o.ID != want {
			t.Fatalf("output %d id %q, want %q", i, o.ID, want)
		}
	}
	if got := store.Positions()["in"]; got != 1000 {
		t.Errorf("committed position %d, want 1000", got)
	}
	if src.acked != 1000 {
		t.Errorf("acknowledged up to %d, want 1000", src.acked)
	}
	st := r.job.Status()
	if st.State != "stopped" || st.RecordsIn != 1000 || st.Outputs != 1000 || st.Operators[0].RecordsOut != 1000 {
		t.Errorf("status %+v", st)
	}
}

// countOracle is the serial word count: the final count per key, and for
// each key the sequence of emitted counts.
func countOracle(values []string) map[string]int {
	m := map[string]int{}
	for _, v := range values {
		m[v]++
	}
	return m
}

func committedCounts(t tb, store *state.Store, table string) map[string]int {
	t.Helper()
	got := map[string]int{}
	err := store.Scan(table, func(k, v []byte) error {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return fmt.Errorf("key %q: value %q is not a count", k, v)
		}
		got[string(k)] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestKeyedCountsMatchSerialOracle runs the word count plugin on random
// inputs, parallelism and batch sizes, and compares the committed state and
// the emitted counts with a serial count.
func TestKeyedCountsMatchSerialOracle(t *testing.T) {
	wc := load(t, "wordcount", plugin.KindKeyed, 0)
	rapid.Check(t, func(rt *rapid.T) {
		values := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c", "dd", "eee", "f", "g", "h"}), 0, 300).Draw(rt, "values")
		par := rapid.IntRange(1, 4).Draw(rt, "parallelism")
		batch := rapid.IntRange(1, 64).Draw(rt, "batch")
		dir, err := os.MkdirTemp("", "sluice-exec-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		store := openStore(rt, dir)
		defer store.Close()
		r := newRun(rt, store, &sliceSource{recs: records(values...), chunk: 7}, batch,
			Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: wc, Parallelism: par, Tables: []string{"counts"}})
		if err := r.job.Run(context.Background()); err != nil {
			rt.Fatal(err)
		}
		want := countOracle(values)
		if got := committedCounts(rt, store, "counts"); !maps.Equal(got, want) {
			rt.Fatalf("committed counts %v, want %v", got, want)
		}
		// The outputs are those of a serial run, in its order, whatever the
		// parallelism: record i emits the running count of its key.
		out := r.sink.records()
		if len(out) != len(values) {
			rt.Fatalf("%d outputs for %d inputs", len(out), len(values))
		}
		running := map[string]int{}
		for i, v := range values {
			running[v]++
			o := out[i]
			if got, want := string(o.Record.Key)+"="+string(o.Record.Value), v+"="+strconv.Itoa(running[v]); got != want {
				rt.Fatalf("output %d is %s, want %s", i, got, want)
			}
			if want := fmt.Sprintf("p/in/%d/0", i+1); o.ID != want {
				rt.Fatalf("output %d id %q, want %q", i, o.ID, want)
			}
		}
	})
}

func TestFailingRecordsAreDeadLetteredAndRolledBack(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	values := []string{"a", "boom", "a", "reject", "b", "loop", "a"}
	recs := records(values...)
	for i := range recs {
		recs[i].Key = []byte("k") // one key: the failures must not count
	}
	r := newRun(t, store, &sliceSource{recs: recs}, 100,
		Operator{Name: "faulty", Kind: plugin.KindKeyed, Plugin: load(t, "faulty", plugin.KindKeyed, 2*time.Second), Parallelism: 2, Tables: []string{"t"}})
	if err := r.job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := committedCounts(t, store, "t"); got["k"] != 4 {
		t.Errorf("committed count %d, want 4: the writes of failed records must be rolled back", got["k"])
	}
	dead := r.dead.records()
	if len(dead) != 3 {
		t.Fatalf("%d dead letters, want 3 (boom, reject, loop)", len(dead))
	}
	wantPos := []string{"2", "4", "6"}
	wantErr := []string{"boom", "rejected on purpose", "timeout"}
	for i, d := range dead {
		if got := header(d.Record, HeaderPosition); got != wantPos[i] {
			t.Errorf("dead letter %d position %q, want %q", i, got, wantPos[i])
		}
		if got := header(d.Record, HeaderError); !strings.Contains(got, wantErr[i]) {
			t.Errorf("dead letter %d error %q does not mention %q", i, got, wantErr[i])
		}
		if header(d.Record, HeaderOperator) != "faulty" || header(d.Record, HeaderPlugin) != "faulty.wasm" || header(d.Record, HeaderSource) != "in" {
			t.Errorf("dead letter %d headers %v", i, d.Record.Headers)
		}
		if string(d.Record.Value) != values[i*2+1] {
			t.Errorf("dead letter %d value %q, want the input record", i, d.Record.Value)
		}
	}
	if got := len(r.sink.records()); got != 4 {
		t.Errorf("%d outputs, want 4", got)
	}
	if st := r.job.Status(); st.Dead != 3 || st.Operators[0].Dead != 3 {
		t.Errorf("status dead letters %d / %d, want 3", st.Dead, st.Operators[0].Dead)
	}
}

func TestStopPolicyStopsWithoutCommitting(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	r := newRun(t, store, &sliceSource{recs: records("a", "b", "boom", "c"), chunk: 2}, 2,
		Operator{Name: "faulty", Kind: plugin.KindKeyed, Plugin: load(t, "faulty", plugin.KindKeyed, 0), Parallelism: 1, Tables: []string{"t"}, StopOnError: true})
	err := r.job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `operator "faulty" failed on record 3 of source "in"`) {
		t.Fatalf("Run = %v, want the stop error naming operator, record and source", err)
	}
	if got := store.Positions()["in"]; got != 2 {
		t.Errorf("committed position %d, want 2: the failed batch must not be committed", got)
	}
	if n := len(r.dead.records()); n != 0 {
		t.Errorf("%d dead letters under the stop policy", n)
	}
}

// TestResumeContinuesAfterCommit stops a job part-way (its source ends
// early), then runs a new job on the same store over the whole input: it
// must continue after the committed position and end with the state of one
// uninterrupted run.
func TestResumeContinuesAfterCommit(t *testing.T) {
	var values []string
	for i := range 500 {
		values = append(values, fmt.Sprintf("w%d", i%17))
	}
	dir := t.TempDir()
	wc := load(t, "wordcount", plugin.KindKeyed, 0)
	op := Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: wc, Parallelism: 2, Tables: []string{"counts"}}

	store := openStore(t, dir)
	first := newRun(t, store, &sliceSource{recs: records(values[:230]...)}, 64, op)
	if err := first.job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	store.Close()

	store = openStore(t, dir)
	defer store.Close()
	second := newRun(t, store, &sliceSource{recs: records(values...)}, 64, op)
	if err := second.job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := committedCounts(t, store, "counts"), countOracle(values); !maps.Equal(got, want) {
		t.Errorf("counts after resume %v, want %v", got, want)
	}
	out := second.sink.records()
	if len(out) != 270 || out[0].ID != "p/in/231/0" {
		t.Errorf("second run wrote %d outputs starting at %q, want 270 from p/in/231/0", len(out), out[0].ID)
	}
}

func TestCancelDrainsAndCommits(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	var values []string
	for i := range 300 {
		values = append(values, strconv.Itoa(i))
	}
	src := &sliceSource{recs: records(values...), chunk: 10, block: true}
	r := newRun(t, store, src, 50, Operator{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 2})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { runErr = r.job.Run(ctx) })
	for r.job.Status().Positions["in"] < 300 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	if runErr != nil {
		t.Fatalf("Run after cancel = %v, want nil", runErr)
	}
	if n := len(r.sink.records()); n != 300 {
		t.Errorf("%d outputs, want 300", n)
	}
	if got := store.Positions()["in"]; got != 300 {
		t.Errorf("committed %d, want 300", got)
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	_, err := New(context.Background(), Config{Name: "p"})
	if err == nil || !strings.Contains(err.Error(), "at least one source") {
		t.Errorf("New with no sources = %v", err)
	}
}

// TestOversizeAndUndecodableInputsAreDeadLettered: a record over the first
// operator's size limit, and an input the source could not decode, go to
// the dead letters with their positions; the rest is processed.
func TestOversizeAndUndecodableInputsAreDeadLettered(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	big := strings.Repeat("x", 500)
	src := &badSource{sliceSource: sliceSource{recs: records("a", big, "b", "c")}, badAt: 3}
	sink, dead := &memSink{}, &memSink{}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: src}},
		Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 1, MaxRecordBytes: 200}},
		Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range sink.records() {
		got = append(got, string(o.Record.Value))
	}
	if strings.Join(got, ",") != "A,C" {
		t.Errorf("outputs %v, want [A C]", got)
	}
	d := dead.records()
	if len(d) != 2 {
		t.Fatalf("%d dead letters, want 2", len(d))
	}
	if header(d[0].Record, HeaderPosition) != "2" || !strings.Contains(header(d[0].Record, HeaderError), "over the operator's limit of 200 bytes") {
		t.Errorf("oversize dead letter: %v", d[0].Record.Headers)
	}
	if header(d[1].Record, HeaderPosition) != "3" || header(d[1].Record, HeaderError) != "line 3: bad input" || header(d[1].Record, HeaderOperator) != "" {
		t.Errorf("undecodable dead letter: %v", d[1].Record.Headers)
	}
	if got := store.Positions()["in"]; got != 4 {
		t.Errorf("committed position %d, want 4: dead letters are committed too", got)
	}
}

// The size limit on inputs counts what a user counts: the bytes of the
// key, the value and the headers, not the encoding's framing; the dead
// letter says so.
func TestInputLimitCountsKeyValueAndHeaders(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	recs := []abi.Record{
		{Value: []byte(strings.Repeat("a", 100))},
		{Key: []byte("k"), Value: []byte(strings.Repeat("b", 97)), Headers: []abi.Header{{Name: []byte("h"), Value: []byte("v")}}},
		{Key: []byte("k"), Value: []byte(strings.Repeat("c", 100))},
	}
	sink, dead := &memSink{}, &memSink{}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: recs}}},
		Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 1, MaxRecordBytes: 100}},
		Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(sink.records()); n != 2 {
		t.Errorf("%d outputs, want 2: the records of 100 bytes pass a limit of 100", n)
	}
	d := dead.records()
	if len(d) != 1 {
		t.Fatalf("%d dead letters, want 1", len(d))
	}
	want := "record of 101 bytes (key, value and headers) is over the operator's limit of 100 bytes (limits.max_record_bytes)"
	if header(d[0].Record, HeaderPosition) != "3" || header(d[0].Record, HeaderError) != want {
		t.Errorf("dead letter at %s: %q, want at 3: %q", header(d[0].Record, HeaderPosition), header(d[0].Record, HeaderError), want)
	}
}

// badSource marks the message at position badAt as undecodable.
type badSource struct {
	sliceSource
	badAt uint64
}

func (s *badSource) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	n, err := s.sliceSource.Read(ctx, buf)
	for i := range buf[:n] {
		if buf[i].Position == s.badAt {
			buf[i].Err = errors.New("line 3: bad input")
		}
	}
	return n, err
}

// TestFileSinkIsCutBackToTheCommit simulates a crash after a file sink
// wrote a batch that was never committed: the next run cuts the file back
// to the committed length before writing, so the file holds each output
// once, as after an uninterrupted run.
func TestFileSinkIsCutBackToTheCommit(t *testing.T) {
	dir := t.TempDir()
	outPath := filepath.Join(dir, "out.txt")
	values := []string{"a", "b", "c", "d", "e", "f"}
	up := load(t, "upper", plugin.KindMap, 0)
	runOnce := func(recs []abi.Record) {
		t.Helper()
		store := openStore(t, filepath.Join(dir, "state"))
		defer store.Close()
		sink, err := file.NewSink(file.SinkConfig{Path: outPath, Format: file.Lines})
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		job, err := New(context.Background(), Config{
			Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: recs}}},
			Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: up, Parallelism: 1}},
			Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: &memSink{}, Store: store, BatchSize: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	runOnce(records(values[:3]...))
	// What a crashed batch would leave behind: written, never committed.
	f, err := os.OpenFile(outPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("D\nE\n")
	f.Close()
	runOnce(records(values...))
	if got, _ := os.ReadFile(outPath); string(got) != "A\nB\nC\nD\nE\nF\n" {
		t.Errorf("file after the resumed run: %q", got)
	}
}

// TestFileSinkIsCutBackInTheFirstBatch: a crash in a pipeline's first
// batch, before any commit, leaves lines after what the file held when
// the job started; the next run cuts them off too.
func TestFileSinkIsCutBackInTheFirstBatch(t *testing.T) {
	dir := t.TempDir()
	outPath := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(outPath, []byte("OLD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	up := load(t, "upper", plugin.KindMap, 0)
	newJob := func(recs []abi.Record) (*Job, func()) {
		t.Helper()
		store := openStore(t, filepath.Join(dir, "state"))
		sink, err := file.NewSink(file.SinkConfig{Path: outPath, Format: file.Lines})
		if err != nil {
			t.Fatal(err)
		}
		job, err := New(context.Background(), Config{
			Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: recs}}},
			Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: up, Parallelism: 1}},
			Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: &memSink{}, Store: store, BatchSize: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		return job, func() { job.Close(context.Background()); sink.Close(); store.Close() }
	}
	// The first run starts and crashes in its first batch: it wrote
	// lines and committed nothing.
	_, closeFirst := newJob(nil)
	closeFirst()
	f, err := os.OpenFile(outPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("A\nB\n")
	f.Close()
	job, closeSecond := newJob(records("a", "b", "c"))
	defer closeSecond()
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(outPath); string(got) != "OLD\nA\nB\nC\n" {
		t.Errorf("file after the resumed run: %q", got)
	}
}

// TestNoIDsForSinksThatIgnoreThem: ids cost an allocation per output, so
// they are derived only when a sink uses them.
func TestNoIDsForSinksThatIgnoreThem(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	mem := &memSink{}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: records("a", "b")}}},
		Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 1}},
		Sinks:     []Output{{Name: "out", Sink: struct{ connectors.Sink }{mem}}}, DeadLetter: &memSink{}, Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := mem.records()
	if len(out) != 2 || out[0].ID != "" || out[1].ID != "" {
		t.Errorf("outputs %+v: want two, without ids", out)
	}
}

// TestBatchOfDeadLettersOnly: a batch whose every record failed to decode
// runs no guest (no records reach the operators) and is committed.
func TestBatchOfDeadLettersOnly(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	src := &badSource{sliceSource: sliceSource{recs: records("a", "b", "c"), chunk: 1}, badAt: 2}
	sink, dead := &memSink{}, &memSink{}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: src}},
		Operators: []Operator{
			{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 2},
			{Name: "count", Kind: plugin.KindKeyed, Plugin: load(t, "wordcount", plugin.KindKeyed, 0), Parallelism: 2, Tables: []string{"c"}},
		},
		Sinks: []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Store: store, BatchSize: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(sink.records()); got != 2 || len(dead.records()) != 1 || store.Positions()["in"] != 3 {
		t.Errorf("%d outputs (want 2), %d dead letters (want 1), position %d (want 3)", got, len(dead.records()), store.Positions()["in"])
	}
}
