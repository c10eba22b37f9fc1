package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/generator"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// builtLedger holds plugins/ledger, compiled once per test binary.
var builtLedger struct {
	once sync.Once
	code []byte
	err  error
}

func ledgerPlugin(t testing.TB) []byte {
	t.Helper()
	builtLedger.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out := filepath.Join(t.TempDir(), "ledger.wasm")
		if builtLedger.err = wasmbuild.Go(ctx, filepath.Join("..", "..", "plugins", "ledger"), out); builtLedger.err == nil {
			builtLedger.code, builtLedger.err = os.ReadFile(out)
		}
	})
	if builtLedger.err != nil {
		t.Fatalf("building plugins/ledger: %v", builtLedger.err)
	}
	return builtLedger.code
}

// TestSwapUnderLoadEveryKind swaps a map, a keyed and a transactional
// operator while a paced source feeds them. RunSwap itself fails unless
// every event reached the sink exactly once (checked by position) and,
// for the ledger, the tables conserve money; this test checks that each
// swap was made and that the report holds the figures. No assertion is
// about speed.
func TestSwapUnderLoadEveryKind(t *testing.T) {
	plugins := examplePlugins(t) // skips in -short mode
	opts := QuickSwapOptions()
	opts.Rate, opts.Duration, opts.Warmup = 5000, 1500*time.Millisecond, 200*time.Millisecond
	opts.Plugins = SwapPlugins{Upper: plugins.Upper, WordCount: plugins.WordCount, Ledger: ledgerPlugin(t)}
	opts.Dir = t.TempDir()
	// Under the race detector compiling a Go guest takes a minute; the
	// swaps then deploy the first module again, from the compilation cache.
	opts.SameModule = raceEnabled
	var progress bytes.Buffer
	opts.Progress = &progress
	rep, err := RunSwap(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 3 || len(rep.Targets) != 3 {
		t.Fatalf("%d results, %d targets; want 3 of each", len(rep.Results), len(rep.Targets))
	}
	for i, r := range rep.Results {
		if r.Kind != SwapKinds()[i] {
			t.Errorf("result %d is %s, want %s", i, r.Kind, SwapKinds()[i])
		}
		if r.Swaps != opts.Swaps || len(r.Calls) != opts.Swaps {
			t.Errorf("%s: %d swaps (%d calls), want %d", r.Kind, r.Swaps, len(r.Calls), opts.Swaps)
		}
		for j, c := range r.Calls {
			if want := "v" + strconv.Itoa(j+2); c.Version != want {
				t.Errorf("%s: swap %d installed %q, want %q", r.Kind, j, c.Version, want)
			}
		}
		if r.Events < uint64(opts.Rate*opts.Duration.Seconds())*9/10 || r.Dead != 0 {
			t.Errorf("%s: %d events, %d dead letters", r.Kind, r.Events, r.Dead)
		}
		if r.Steady.Events == 0 || r.During.Events == 0 || r.During.P99Ms <= 0 {
			t.Errorf("%s: latencies %+v / %+v", r.Kind, r.Steady, r.During)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"transactional", "wordcount", "p99 ratio", "v3", "Targets"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if !strings.Contains(progress.String(), "v2 in place") {
		t.Errorf("progress lacks the swaps:\n%s", progress.String())
	}
}

// TestLatencySinkFindsLostAndDuplicated feeds the sink's check what a
// broken swap would leave: a position missing, one twice, one that was
// never given out.
func TestLatencySinkFindsLostAndDuplicated(t *testing.T) {
	seq := func(r *abi.Record) (uint64, error) { return strconv.ParseUint(string(r.Value), 10, 64) }
	write := func(s *latencySink, positions ...string) {
		var out []connectors.Out
		for _, p := range positions {
			out = append(out, connectors.Out{Record: abi.Record{Value: []byte(p), Time: time.Now().UnixNano()}})
		}
		if err := s.Write(context.Background(), out); err != nil {
			t.Fatal(err)
		}
	}
	ok := newLatencySink(4, seq)
	write(ok, "2", "1")
	write(ok, "4", "3")
	if err := ok.check(4, 0); err != nil {
		t.Errorf("every position once: %v", err)
	}
	for _, c := range []struct {
		name      string
		positions []string
		dead      uint64
		want      string
	}{
		{"lost", []string{"1", "2", "4"}, 0, "1 never reached the sink (the first at position 3)"},
		{"duplicated", []string{"1", "2", "3", "3", "4"}, 0, "1 reached it twice"},
		{"not given out", []string{"1", "2", "3", "4", "5"}, 0, "1 outputs stand for no event"},
		{"dead-lettered", []string{"1", "2", "3", "4"}, 1, "1 were dead-lettered"},
		{"not a position", []string{"1", "x"}, 0, `value "x"`},
	} {
		s := newLatencySink(4, seq)
		write(s, c.positions...)
		err := s.check(4, c.dead)
		if !errors.Is(err, ErrSwapOutput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrSwapOutput saying %q", c.name, err, c.want)
		}
	}
}

// TestPacedSourceEnds checks that the source gives out due records with
// their due times and keys, and ends after the records it gave out.
func TestPacedSourceEnds(t *testing.T) {
	gen, err := generator.New(generator.Config{Mode: generator.Sequence, Rate: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	src := newPacedSource(gen, 1e6, true)
	ctx := context.Background()
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	<-src.isOpen
	start := src.openedAt()
	buf := make([]connectors.Message, 64)
	var got uint64
	for got < 100 {
		n, err := src.Read(ctx, buf)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range buf[:n] {
			got++
			if m.Position != got || string(m.Record.Key) != strconv.FormatUint(got, 10) {
				t.Fatalf("record %d: position %d key %q", got, m.Position, m.Record.Key)
			}
			if want := start.UnixNano() + dueNs(got-1, 1e6); m.Record.Time != want || dueNs(got-1, 1e6) != int64(got-1)*1000 {
				t.Fatalf("record %d due at %d, want %d", got, m.Record.Time, want)
			}
		}
	}
	if n := src.end(); n != got {
		t.Errorf("end says %d records, %d were read", n, got)
	}
	if n, err := src.Read(ctx, buf); n != 0 || err != io.EOF {
		t.Errorf("Read after end: %d, %v; want 0, io.EOF", n, err)
	}
}

// TestSwapCompiledInAChild runs the map kind once compiled in a child
// process and once in the pipeline's process, with a busy process
// alongside: each run is reported with where it compiled, nothing is
// lost (RunSwap checks), and the target allows the competing load's 3x.
func TestSwapCompiledInAChild(t *testing.T) {
	if raceEnabled {
		t.Skip("the child is this race-instrumented binary, whose compile of a Go guest takes minutes")
	}
	plugins := examplePlugins(t) // skips in -short mode
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts := QuickSwapOptions()
	opts.Kinds = []SwapKind{SwapMap}
	opts.Rate, opts.Duration, opts.Warmup, opts.Swaps = 5000, 1500*time.Millisecond, 200*time.Millisecond, 1
	opts.Plugins = SwapPlugins{Upper: plugins.Upper}
	opts.Dir = t.TempDir()
	opts.Compile = []SwapCompile{CompileChild, CompileInProcess}
	opts.Executable = exe
	opts.BackgroundLoad = 1
	rep, err := RunSwap(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.BackgroundLoad != 1 {
		t.Fatalf("%d results with background load %d; want 2 with 1", len(rep.Results), rep.BackgroundLoad)
	}
	for i, want := range opts.Compile {
		r := rep.Results[i]
		if r.Compile != want || r.Swaps != 1 || r.Dead != 0 {
			t.Errorf("result %d: compiled %s, %d swaps, %d dead letters; want %s, 1, 0", i, r.Compile, r.Swaps, r.Dead, want)
		}
		if tg := rep.Targets[i]; tg.Want != "<= 3x" || !strings.Contains(tg.Name, string(want)) {
			t.Errorf("target %d: %q wants %q", i, tg.Name, tg.Want)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"competing load: 1 busy processes", "child", "in-process"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

// A child compile needs a program to run, and a compile mode must be
// known.
func TestSwapCompileOptionsRefused(t *testing.T) {
	opts := QuickSwapOptions()
	opts.Compile = []SwapCompile{CompileChild}
	if _, err := RunSwap(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "no executable") {
		t.Errorf("child compile without an executable: %v", err)
	}
	opts.Compile = []SwapCompile{"elsewhere"}
	if _, err := RunSwap(context.Background(), opts); err == nil || !strings.Contains(err.Error(), `unknown compile "elsewhere"`) {
		t.Errorf("unknown compile: %v", err)
	}
	opts.Compile, opts.BackgroundLoad = nil, -1
	if _, err := RunSwap(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "background load -1") {
		t.Errorf("negative background load: %v", err)
	}
}
