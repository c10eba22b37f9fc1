package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/connectors/generator"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/plugins/upper/upperlib"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/state"
)

func TestMain(m *testing.M) {
	if os.Getenv(wasm.ChildCompileEnv) != "" {
		// A child compile that a swap run started in this binary.
		if err := wasm.ServeCompile(context.Background(), os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	if code == 0 {
		// nats.go's object store Put can leave its reconnect listener
		// waiting on a channel it cleared (see package checkpoint's tests);
		// the migration benchmark puts checkpoints.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// built holds the example plugins, compiled once per test binary.
var built struct {
	once      sync.Once
	dir       string
	plugins   Plugins
	slowCount []byte // plugins/internal/slowcount, for the control bench
	err       error
}

// examplePlugins builds plugins/upper, plugins/wordcount and
// plugins/internal/slowcount with the Go toolchain, as `sluice bench`
// does. It skips the test in -short mode.
func examplePlugins(t testing.TB) Plugins {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the example plugins to WebAssembly; skipped in -short mode")
	}
	built.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if built.dir, built.err = os.MkdirTemp("", "sluice-bench-test-"); built.err != nil {
			return
		}
		code := map[string]*[]byte{"upper": &built.plugins.Upper, "wordcount": &built.plugins.WordCount, "internal/slowcount": &built.slowCount}
		for name, dst := range code {
			out := filepath.Join(built.dir, filepath.Base(name)+".wasm")
			if built.err = wasmbuild.Go(ctx, filepath.Join("..", "..", "plugins", name), out); built.err != nil {
				return
			}
			if *dst, built.err = os.ReadFile(out); built.err != nil {
				return
			}
		}
	})
	if built.err != nil {
		t.Fatalf("building the example plugins: %v", built.err)
	}
	p := built.plugins
	p.UpperNative = upperlib.Upper
	return p
}

// TestQuick runs every suite in the quick configuration end to end and
// checks that the figures are sane and complete, and that both outputs
// carry them. The suites verify their own outputs (counts, content, state)
// and fail the run otherwise; no assertion here is about speed.
func TestQuick(t *testing.T) {
	plugins := examplePlugins(t)
	opts := QuickOptions()
	var progress bytes.Buffer
	opts.Progress = &progress
	opts.Dir = t.TempDir()
	rep, err := Run(context.Background(), plugins, opts)
	if err != nil {
		t.Fatal(err)
	}

	if rep.Machine.GOMAXPROCS < 1 || rep.Machine.GoVersion == "" || rep.Date.IsZero() || !rep.Quick {
		t.Errorf("machine or date missing: %+v, %v", rep.Machine, rep.Date)
	}
	if rep.Wasm == nil || len(rep.Wasm.Batches) != len(opts.Wasm.BatchSizes) {
		t.Fatalf("wasm result %+v", rep.Wasm)
	}
	for i, b := range rep.Wasm.Batches {
		if b.Size != opts.Wasm.BatchSizes[i] || b.NativeNs <= 0 || b.WasmNs <= 0 || b.WasmNoTimeoutNs <= 0 {
			t.Errorf("wasm batch %d: %+v", i, b)
		}
		if len(b.NativeRounds) != opts.Wasm.Rounds || len(b.WasmRounds) != opts.Wasm.Rounds || len(b.WasmNoTimeoutRounds) != opts.Wasm.Rounds {
			t.Errorf("wasm batch %d: rounds %v %v %v", i, b.NativeRounds, b.WasmRounds, b.WasmNoTimeoutRounds)
		}
		if b.OverheadNs != b.WasmNs-b.NativeNs {
			t.Errorf("wasm batch %d: overhead %v is not %v - %v", i, b.OverheadNs, b.WasmNs, b.NativeNs)
		}
	}
	if rep.NATS == nil || len(rep.NATS.Sizes) != len(opts.NATS.Sizes) {
		t.Fatalf("nats result %+v", rep.NATS)
	}
	for _, s := range rep.NATS.Sizes {
		if s.RawRate <= 0 || s.RelayRate <= 0 || s.PipelineRate <= 0 || s.Ratio <= 0 || s.RelayRatio <= 0 ||
			len(s.RawRounds) != opts.NATS.Rounds || len(s.RelayRounds) != opts.NATS.Rounds {
			t.Errorf("nats %d bytes: %+v", s.Size, s)
		}
	}
	k := rep.Keyed
	if k == nil || k.Records != opts.Keyed.Records || k.Rate <= 0 || k.Commits == 0 || k.CommitUs <= 0 || k.EntriesPerCommit <= 0 {
		t.Fatalf("keyed result %+v", k)
	}
	// Every batch commits; a batch holds at most BatchSize records.
	if min := (k.Records + uint64(k.BatchSize) - 1) / uint64(k.BatchSize); k.Commits < min {
		t.Errorf("%d commits for %d records in batches of at most %d", k.Commits, k.Records, k.BatchSize)
	}
	if !rep.NATS.CallTimeout || !k.CallTimeout {
		t.Errorf("the pipelines ran without the default call timeout")
	}
	if len(rep.Targets) != 3 {
		t.Errorf("targets %+v, want the two Wasm targets and the 64-byte NATS one", rep.Targets)
	}

	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("quick figures (indicative only):\n%s", table.String())
	for _, want := range []string{"ns/rec", "msgs/s", "records/s", "µs", "GOMAXPROCS", "Targets", "1 KiB"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Keyed == nil || back.Keyed.Rate != k.Rate || back.Machine.GoVersion != rep.Machine.GoVersion || len(back.Targets) != len(rep.Targets) {
		t.Errorf("JSON round trip lost figures:\n%s", js.String())
	}
	for _, want := range []string{"wasm: round 1/1", "nats: 64-byte messages, round 1/1", "keyed: round 1/1"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
}

func TestOnlyOneSuite(t *testing.T) {
	plugins := examplePlugins(t)
	opts := QuickOptions()
	opts.Suites = []Suite{SuiteKeyed}
	opts.Keyed.Records, opts.Keyed.Keys = 3000, 5000 // fewer records than keys
	opts.NoCallTimeout = true
	rep, err := Run(context.Background(), Plugins{WordCount: plugins.WordCount}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Wasm != nil || rep.NATS != nil || rep.Keyed == nil || len(rep.Targets) != 0 {
		t.Errorf("only keyed was asked for: %+v", rep)
	}
	if rep.Keyed.CallTimeout {
		t.Errorf("the keyed suite ran with a call timeout despite NoCallTimeout")
	}
}

func TestMissingPlugin(t *testing.T) {
	opts := QuickOptions()
	opts.Suites = []Suite{SuiteWasm}
	_, err := Run(context.Background(), Plugins{}, opts)
	if err == nil || !strings.Contains(err.Error(), "upper plugin was not given") {
		t.Errorf("err = %v", err)
	}
	_, err = Run(context.Background(), Plugins{Upper: []byte("\x00asm")}, opts)
	if err == nil || !strings.Contains(err.Error(), "Plugins.UpperNative nil") {
		t.Errorf("without the native function: err = %v", err)
	}
}

func TestParseSuite(t *testing.T) {
	for _, s := range AllSuites() {
		if got, err := ParseSuite(string(s)); err != nil || got != s {
			t.Errorf("ParseSuite(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseSuite("disk"); !errors.Is(err, ErrUnknownSuite) {
		t.Errorf("ParseSuite(disk): %v", err)
	}
	if _, err := Run(context.Background(), Plugins{}, Options{Suites: []Suite{"disk"}}); !errors.Is(err, ErrUnknownSuite) {
		t.Errorf("Run with an unknown suite: %v", err)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := append([]float64(nil), tc.in...)
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("median reordered its input: %v", tc.in)
			}
		}
	}
}

func TestTargets(t *testing.T) {
	rep := &Report{
		Wasm: &WasmResult{Batches: []WasmBatch{
			{Size: 64, OverheadNs: 120, OverheadNoTimeoutNs: 90},
			{Size: 1024, OverheadNs: 80, OverheadNoTimeoutNs: 60},
		}},
		NATS: &NATSResult{Sizes: []NATSSize{
			{Size: 64, PipelineRate: 900_000, Ratio: 0.55},
			{Size: 1024, PipelineRate: 10, Ratio: 0.01},
		}},
	}
	ts := rep.checkTargets()
	if len(ts) != 3 {
		t.Fatalf("targets %+v", ts)
	}
	if ts[0].Met || !strings.Contains(ts[0].Got, "+120.0") || !strings.Contains(ts[0].Got, "batch 64") {
		t.Errorf("timeout on: %+v (worst is +120 at batch 64: not met)", ts[0])
	}
	if !ts[1].Met {
		t.Errorf("timeout off: %+v (worst is +90: met)", ts[1])
	}
	if !ts[2].Met {
		t.Errorf("nats: %+v (under 1M msgs/s but over half of raw: met)", ts[2])
	}
	rep.NATS.Sizes[0].Ratio = 0.4
	if ts := rep.checkTargets(); ts[2].Met {
		t.Errorf("nats: %+v (under 1M msgs/s and under half of raw: not met)", ts[2])
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.6: "1,234,568", 100000: "100,000"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestMachineFiles(t *testing.T) {
	dir := t.TempDir()
	cpu := filepath.Join(dir, "cpuinfo")
	os.WriteFile(cpu, []byte("processor\t: 0\nvendor_id\t: X\nmodel name\t: Test CPU @ 1.00GHz\n\nprocessor\t: 1\nmodel name\t: Test CPU @ 1.00GHz\n"), 0o644)
	if got := cpuModel(cpu); got != "Test CPU @ 1.00GHz" {
		t.Errorf("cpuModel = %q", got)
	}
	if got := cpuModel(filepath.Join(dir, "absent")); got != "" {
		t.Errorf("cpuModel of a missing file = %q", got)
	}
	load := filepath.Join(dir, "loadavg")
	os.WriteFile(load, []byte("0.52 1.10 2.00 1/234 5678\n"), 0o644)
	if got := loadAverage(load); got != "0.52 1.10 2.00" {
		t.Errorf("loadAverage = %q", got)
	}
}

// BenchmarkPipeline measures generator -> upper map (GOMAXPROCS workers)
// -> discard through exec.Job, 64-byte records: the executor, batching,
// commits of positions and the Wasm call path, without NATS.
func BenchmarkPipeline(b *testing.B) {
	plugins := examplePlugins(b)
	ctx := context.Background()
	e := &env{dir: b.TempDir(), log: slog.New(slog.DiscardHandler), engines: map[bool]wasm.Engine{}}
	defer e.close(ctx)
	p, err := e.load(ctx, "upper", plugins.Upper, plugin.KindMap, true)
	if err != nil {
		b.Fatal(err)
	}
	gen, err := generator.New(generator.Config{Mode: generator.Bytes, Size: 64, Count: uint64(b.N), Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer gen.Close()
	store, err := state.Open(filepath.Join(e.dir, "state"), state.Options{Logger: e.log})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	sink := &discardSink{name: "discard"}
	job, err := exec.New(ctx, exec.Config{
		Name:      "bench",
		Sources:   []exec.Input{{Name: "bytes", Source: gen}},
		Operators: []exec.Operator{{Name: "upper", Kind: plugin.KindMap, Plugin: p, Parallelism: parallelism(0)}},
		Sinks:     []exec.Output{{Name: "discard", Sink: sink}},
		Store:     store,
		Logger:    e.log,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if err := job.Run(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if sink.records != uint64(b.N) {
		b.Fatalf("%d records out of %d", sink.records, b.N)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
}
