package generator

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

func open(t testing.TB, cfg Config, after uint64) *Source {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Open(context.Background(), after); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// take reads n messages in reads of up to chunk.
func take(t testing.TB, g *Source, n, chunk int) []connectors.Message {
	t.Helper()
	out := make([]connectors.Message, 0, n)
	buf := make([]connectors.Message, chunk)
	for len(out) < n {
		k, err := g.Read(context.Background(), buf[:min(chunk, n-len(out))])
		if err != nil {
			t.Fatalf("after %d: %v", len(out), err)
		}
		out = append(out, buf[:k]...)
	}
	return out
}

func TestDeterministicAndResumable(t *testing.T) {
	for _, cfg := range []Config{
		{Mode: Words, Seed: 1},
		{Mode: Words, Seed: 1, Keys: 3},
		{Mode: Sequence, Keys: 10, Start: time.Unix(1_700_000_000, 0), Step: time.Second},
		{Mode: Bytes, Seed: 7, Size: 13},
		{Mode: Txn, Workload: txnWorkload(t, "sl", map[string]string{"keys": "1000", "seed": "3"})},
		{Mode: Txn, Workload: txnWorkload(t, "ob", map[string]string{"keys": "500", "txn-length": "7", "buy-ratio": "50%"})},
	} {
		name := string(cfg.Mode)
		if cfg.Workload != nil {
			name += cfg.Workload.Name()
		}
		t.Run(name, func(t *testing.T) {
			all := take(t, open(t, cfg, 0), 300, 64)
			again := take(t, open(t, cfg, 0), 300, 7)
			if !reflect.DeepEqual(all, again) {
				t.Fatal("two runs with the same configuration differ")
			}
			for _, after := range []uint64{1, 63, 64, 150, 299} {
				rest := take(t, open(t, cfg, after), int(300-after), 17)
				if !reflect.DeepEqual(rest, all[after:]) {
					t.Fatalf("resumed after %d: records differ from the uninterrupted run's", after)
				}
			}
			for i, m := range all {
				if m.Position != uint64(i+1) {
					t.Fatalf("message %d at position %d", i, m.Position)
				}
				if want := int64(i+1) * int64(max(cfg.Step, time.Millisecond)); cfg.Start.IsZero() && m.Record.Time != want {
					t.Fatalf("message %d time %d, want %d", i, m.Record.Time, want)
				}
			}
		})
	}
}

func TestSeedChangesTheStream(t *testing.T) {
	for _, mode := range []Mode{Words, Bytes, Txn} {
		a := take(t, open(t, seeded(t, mode, 1), 0), 20, 20)
		b := take(t, open(t, seeded(t, mode, 2), 0), 20, 20)
		if reflect.DeepEqual(a, b) {
			t.Fatalf("%s: seeds 1 and 2 gave the same records", mode)
		}
	}
}

// seeded returns a test configuration of mode with the given seed: the
// workload's seed knob in Txn mode.
func seeded(t *testing.T, m Mode, seed uint64) Config {
	if m == Txn {
		return Config{Mode: m, Workload: txnWorkload(t, "gs", map[string]string{"seed": strconv.FormatUint(seed, 10)})}
	}
	return Config{Mode: m, Seed: seed}
}

// txnWorkload builds the workload app with knobs set by name over its
// defaults, as the host does for a pipeline's txn source.
func txnWorkload(t testing.TB, app string, knobs map[string]string) workload.App {
	t.Helper()
	k, err := workload.Defaults(app)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range knobs {
		if err := k.Set(name, v); err != nil {
			t.Fatal(err)
		}
	}
	w, err := workload.New(app, k)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// defaults builds the workload app with its default knobs.
func defaults(t testing.TB, app string) workload.App { return txnWorkload(t, app, nil) }

func TestSequence(t *testing.T) {
	start := time.Unix(100, 0)
	msgs := take(t, open(t, Config{Mode: Sequence, Keys: 4, Start: start, Step: time.Second}, 10), 5, 5)
	for i, m := range msgs {
		pos := uint64(11 + i)
		r := m.Record
		if string(r.Value) != strconv.FormatUint(pos, 10) || string(r.Key) != strconv.FormatUint(pos%4, 10) ||
			r.Time != start.Add(time.Duration(pos-1)*time.Second).UnixNano() || m.Position != pos {
			t.Fatalf("message %d = %+v at %d", i, r, m.Position)
		}
	}
}

func TestBytesSize(t *testing.T) {
	for _, size := range []int{1, 8, 64, 1000} {
		for _, m := range take(t, open(t, Config{Mode: Bytes, Size: size}, 0), 10, 10) {
			if len(m.Record.Value) != size || m.Record.Key != nil {
				t.Fatalf("size %d: value of %d bytes, key %q", size, len(m.Record.Value), m.Record.Key)
			}
		}
	}
}

func TestWordsAreSkewed(t *testing.T) {
	g := open(t, Config{Mode: Words, Seed: 42}, 0)
	vocab := map[string]int{}
	for i, w := range strings.Fields(vocabulary) {
		vocab[w] = i
	}
	counts := make([]int, len(vocab))
	for _, m := range take(t, g, 5000, 256) {
		if m.Record.Key != nil {
			t.Fatalf("words record with key %q", m.Record.Key)
		}
		words := strings.Split(string(m.Record.Value), " ")
		if len(words) < 3 || len(words) > 12 {
			t.Fatalf("sentence of %d words: %q", len(words), m.Record.Value)
		}
		for _, w := range words {
			i, ok := vocab[w]
			if !ok {
				t.Fatalf("word %q is not in the vocabulary", w)
			}
			counts[i]++
		}
	}
	// Weight 1/(i+1): the first word is about 10 times as frequent as the
	// tenth and 100 times as the hundredth.
	if counts[0] < 5*counts[9] || counts[0] < 30*max(counts[99], 1)/2 {
		t.Fatalf("not skewed: counts of words 1, 10, 100 = %d, %d, %d", counts[0], counts[9], counts[99])
	}
}

func TestCountEndsWithEOF(t *testing.T) {
	g := open(t, Config{Mode: Sequence, Count: 10}, 4)
	msgs := take(t, g, 6, 100)
	if msgs[0].Position != 5 || msgs[5].Position != 10 {
		t.Fatalf("positions %d..%d, want 5..10", msgs[0].Position, msgs[5].Position)
	}
	buf := make([]connectors.Message, 4)
	for range 2 {
		if n, err := g.Read(context.Background(), buf); n != 0 || !errors.Is(err, io.EOF) {
			t.Fatalf("Read past Count = %d, %v; want io.EOF", n, err)
		}
	}
	if n, err := open(t, Config{Count: 3}, 3).Read(context.Background(), buf); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("opened at the end: %d, %v", n, err)
	}
}

func TestRateWaitsForTheNextRecord(t *testing.T) {
	// One record every 1000 seconds: the first is due at Open, the
	// second not before the test ends.
	g := open(t, Config{Mode: Sequence, Rate: 0.001}, 0)
	buf := make([]connectors.Message, 10)
	n, err := g.Read(context.Background(), buf)
	if n != 1 || err != nil {
		t.Fatalf("first Read = %d, %v; want the one record due", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if n, err := g.Read(ctx, buf); n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Read = %d, %v; want to wait until the context ends", n, err)
	}
}

func TestRecordsOwnTheirBytes(t *testing.T) {
	g := open(t, Config{Mode: Sequence, Keys: 100}, 0)
	first := take(t, g, 50, 50)
	want := make([]string, len(first))
	for i, m := range first {
		want[i] = string(m.Record.Key) + "/" + string(m.Record.Value)
	}
	take(t, g, 500, 50) // more Reads must not overwrite earlier records
	for i, m := range first {
		if got := string(m.Record.Key) + "/" + string(m.Record.Value); got != want[i] {
			t.Fatalf("record %d changed from %s to %s", i, want[i], got)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{{Mode: "zipf"}, {Rate: -1}, {Mode: Bytes, Size: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	wl, err := workload.New("tp", workload.Knobs{Keys: 10, TxnLength: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  Config
		want string // in the message
	}{
		{Config{Mode: Txn}, "needs a workload"},
		{Config{Mode: Txn, Workload: wl, Keys: 10}, `workload "tp" has its own`},
		{Config{Mode: Txn, Workload: wl, Seed: 1}, `workload "tp" has its own`},
		{Config{Mode: Words, Workload: wl}, "applies to mode"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error containing %s", c.cfg, err, c.want)
		}
	}
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Read(context.Background(), make([]connectors.Message, 1)); !errors.Is(err, connectors.ErrNotOpen) {
		t.Fatalf("Read before Open: %v", err)
	}
}

// TestTxnRecordsAreTheWorkloadsEvents: the record at position p is the
// workload's event p-1.
func TestTxnRecordsAreTheWorkloadsEvents(t *testing.T) {
	g := open(t, Config{Mode: Txn, Workload: txnWorkload(t, "ngs", map[string]string{
		"txn-length": "3", "nondet-ratio": "0.5", "seed": "9", "keys": "2000",
	})}, 40)
	if g.Name() != "generator:txn/ngs" {
		t.Errorf("name %q", g.Name())
	}
	k, _ := workload.Defaults("ngs")
	k.Keys, k.Seed, k.TxnLength, k.NonDetRatio = 2000, 9, 3, 0.5
	want, err := workload.New("ngs", k)
	if err != nil {
		t.Fatal(err)
	}
	msgs := take(t, g, 100, 33)
	for _, m := range msgs {
		key, value := want.Event(m.Position-1, nil)
		if string(m.Record.Key) != string(key) || string(m.Record.Value) != string(value) {
			t.Fatalf("position %d: record differs from event %d", m.Position, m.Position-1)
		}
		if cap(m.Record.Key) != len(m.Record.Key) || cap(m.Record.Value) != len(m.Record.Value) {
			t.Fatalf("position %d: a record's bytes can be appended to in place", m.Position)
		}
	}
	if msgs[0].Position != 41 {
		t.Fatalf("first position %d, want 41", msgs[0].Position)
	}
	// A workload passed in is used as is.
	shared := open(t, Config{Mode: Txn, Workload: want}, 40)
	if shared.Workload() != want {
		t.Fatal("Workload() is not the workload passed in")
	}
	if again := take(t, shared, 100, 100); !reflect.DeepEqual(again, msgs) {
		t.Fatal("a source over the same workload gives other records")
	}
}

func TestCloseInterruptsAWaitingRead(t *testing.T) {
	g := open(t, Config{Mode: Sequence, Rate: 0.001}, 0)
	buf := make([]connectors.Message, 1)
	if _, err := g.Read(context.Background(), buf); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := g.Read(context.Background(), buf)
		errc <- err
	}()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, connectors.ErrClosed) {
		t.Fatalf("Read across Close = %v, want ErrClosed", err)
	}
}

// TestBacklog: a generator with a rate reports the records due and not
// read, bounded by Count; one without a rate, or not open, cannot tell.
func TestBacklog(t *testing.T) {
	g, err := New(Config{Mode: Sequence, Rate: 1e9, Count: 10})
	if err != nil {
		t.Fatal(err)
	}
	if b := g.Backlog(); b != -1 {
		t.Errorf("backlog %d before Open, want -1", b)
	}
	if err := g.Open(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	// At a billion records a second the eight left are all due at once
	// (a microsecond after Open); the backlog never exceeds them.
	deadline := time.Now().Add(10 * time.Second)
	for g.Backlog() != 8 {
		if b := g.Backlog(); b > 8 || time.Now().After(deadline) {
			t.Fatalf("backlog %d, want 8: Count 10 after position 2", b)
		}
		time.Sleep(time.Millisecond)
	}
	take(t, g, 3, 3)
	if b := g.Backlog(); b != 5 {
		t.Errorf("backlog %d after reading 3 of 8, want 5", b)
	}
	take(t, g, 5, 5)
	if b := g.Backlog(); b != 0 {
		t.Errorf("backlog %d after reading everything, want 0", b)
	}
	if b := open(t, Config{Mode: Sequence}, 0).Backlog(); b != -1 {
		t.Errorf("backlog %d of a generator without a rate, want -1", b)
	}
}
