package workload_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/txn"
	bidding "github.com/sluicehq/sluice/txn/apps/bidding/event"
	grepsum "github.com/sluicehq/sluice/txn/apps/grepsum/event"
	sl "github.com/sluicehq/sluice/txn/apps/ledger"
	ledger "github.com/sluicehq/sluice/txn/apps/ledger/event"
	nongrepsum "github.com/sluicehq/sluice/txn/apps/nongrepsum/event"
	toll "github.com/sluicehq/sluice/txn/apps/toll/event"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// knobs returns an application's defaults with a smaller key space and
// every knob it reads away from zero, so the tests exercise them.
func knobs(t testing.TB, app string) workload.Knobs {
	t.Helper()
	k, err := workload.Defaults(app)
	if err != nil {
		t.Fatal(err)
	}
	k.Keys, k.Skew, k.AbortRatio, k.BusyNanos, k.Seed = 1000, 0.6, 0.1, 250, 42
	switch app {
	case workload.GrepSum, workload.NonGrepSum:
		k.TxnLength, k.Reads, k.MultiReadRatio = 4, 3, 0.5
		k.NonDetRatio = 0.2
	case workload.OnlineBidding:
		k.TxnLength = 5
	}
	return k
}

func newApp(t testing.TB, app string, k workload.Knobs) workload.App {
	t.Helper()
	a, err := workload.New(app, k)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type rec struct{ key, value string }

func events(a workload.App, from, n uint64) []rec {
	out := make([]rec, 0, n)
	for i := from; i < from+n; i++ {
		k, v := a.Event(i, nil)
		out = append(out, rec{string(k), string(v)})
	}
	return out
}

func TestDefaultsAndNames(t *testing.T) {
	for _, app := range workload.Apps() {
		k, err := workload.Defaults(app)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Validate(); err != nil {
			t.Errorf("%s: defaults invalid: %v", app, err)
		}
		a := newApp(t, app, k)
		if a.Name() != app {
			t.Errorf("New(%q).Name() = %q", app, a.Name())
		}
		names, err := workload.AppKnobs(app)
		if err != nil || len(names) == 0 {
			t.Errorf("AppKnobs(%q) = %v, %v", app, names, err)
		}
		for _, n := range names {
			if !slices.Contains(workload.KnobNames(), n) {
				t.Errorf("AppKnobs(%q) lists %q, not a knob", app, n)
			}
		}
	}
	// The published Streaming Ledger comparison.
	if k, _ := workload.Defaults("sl"); k.Keys != 115200 || k.DepositRatio != 0.25 || k.Skew != 0.25 {
		t.Errorf("sl defaults = %+v", k)
	}
	for _, f := range []func() error{
		func() error { _, err := workload.Defaults("tpcc"); return err },
		func() error { _, err := workload.New("tpcc", knobs(t, "sl")); return err },
		func() error { _, err := workload.AppKnobs("tpcc"); return err },
	} {
		if err := f(); !errors.Is(err, workload.ErrUnknownApp) || !strings.Contains(err.Error(), `"tpcc"`) {
			t.Errorf("unknown application: %v", err)
		}
	}
}

func TestKnobSetGet(t *testing.T) {
	var k workload.Knobs
	for _, c := range []struct{ name, value, want string }{
		{"keys", "115200", "115200"},
		{"skew", "0.99", "0.99"},
		{"abort-ratio", "25%", "0.25"},
		{"txn-length", " 10 ", "10"},
		{"multi-read-ratio", "1", "1"},
		{"reads", "0", "0"},
		{"deposit-ratio", "0.5", "0.5"},
		{"buy-ratio", "100%", "1"},
		{"busy-ns", "10000", "10000"},
		{"nondet-ratio", "0.0095", "0.0095"},
		{"acyclic", "true", "true"},
		{"seed", "18446744073709551615", "18446744073709551615"},
	} {
		if err := k.Set(c.name, c.value); err != nil {
			t.Fatalf("Set(%q, %q): %v", c.name, c.value, err)
		}
		if got, err := k.Get(c.name); err != nil || got != c.want {
			t.Errorf("Get(%q) = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if k.Keys != 115200 || k.AbortRatio != 0.25 || !k.Acyclic || k.TxnLength != 10 {
		t.Errorf("knobs = %+v", k)
	}
	if len(workload.KnobNames()) != 12 {
		t.Errorf("KnobNames() = %v", workload.KnobNames())
	}
}

func TestKnobErrors(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"keys", "1"}, {"keys", "abc"}, {"keys", "100000001"}, {"keys", "1e5"},
		{"skew", "-0.1"}, {"skew", "NaN"}, {"skew", "Inf"}, {"skew", "11"},
		{"abort-ratio", "1.5"}, {"abort-ratio", "150%"}, {"abort-ratio", "-1%"}, {"abort-ratio", "x%"},
		{"txn-length", "0"}, {"txn-length", "1025"}, {"reads", "65"}, {"reads", "-1"},
		{"busy-ns", "1000000001"}, {"acyclic", "maybe"}, {"seed", "-1"},
	} {
		k, _ := workload.Defaults("gs")
		before := k
		err := k.Set(c.name, c.value)
		var ke *workload.KnobError
		if !errors.Is(err, workload.ErrBadKnob) || !errors.As(err, &ke) || ke.Name != c.name {
			t.Errorf("Set(%q, %q) = %v, want a bad-knob error", c.name, c.value, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `"`+c.name+`"`) || !strings.Contains(msg, c.value) {
			t.Errorf("Set(%q, %q): message %q does not name the knob and the value", c.name, c.value, msg)
		}
		if k != before {
			t.Errorf("Set(%q, %q) failed but changed the knobs", c.name, c.value)
		}
	}
	var k workload.Knobs
	if err := k.Set("skewness", "1"); !errors.Is(err, workload.ErrUnknownKnob) || !strings.Contains(err.Error(), "skewness") {
		t.Errorf("unknown knob: %v", err)
	}
	if _, err := k.Get("skewness"); !errors.Is(err, workload.ErrUnknownKnob) {
		t.Errorf("Get of an unknown knob: %v", err)
	}
	// New validates knobs built by hand.
	bad := knobs(t, "sl")
	bad.Keys = 1
	if _, err := workload.New("sl", bad); !errors.Is(err, workload.ErrBadKnob) || !strings.Contains(err.Error(), `"keys"`) {
		t.Errorf("New with 1 key: %v", err)
	}
	bad = knobs(t, "sl")
	bad.DepositRatio = 2
	if _, err := workload.New("sl", bad); !errors.Is(err, workload.ErrBadKnob) || !strings.Contains(err.Error(), "deposit-ratio") {
		t.Errorf("New with deposit ratio 2: %v", err)
	}
}

// TestEventIsAPureFunction: event i is the same whatever was drawn before,
// in whatever order, by whichever instance of the same knobs; the seed
// changes the stream.
func TestEventIsAPureFunction(t *testing.T) {
	for _, app := range workload.Apps() {
		t.Run(app, func(t *testing.T) {
			k := knobs(t, app)
			want := events(newApp(t, app, k), 0, 500)
			other := newApp(t, app, k)
			order := rand.New(rand.NewPCG(7, 7)).Perm(len(want))
			buf := make([]byte, 0, 64)
			for _, i := range order {
				key, v := other.Event(uint64(i), buf[:0])
				if string(key) != want[i].key || string(v) != want[i].value {
					t.Fatalf("event %d drawn out of order differs", i)
				}
			}
			if again := events(other, 250, 250); !slices.Equal(again, want[250:]) {
				t.Fatal("a stream resumed at 250 differs")
			}
			k.Seed++
			if seeded := events(newApp(t, app, k), 0, 500); slices.Equal(seeded, want) {
				t.Fatal("another seed gives the same events")
			}
			distinct := map[rec]bool{}
			for _, r := range want {
				distinct[r] = true
			}
			if len(distinct) < len(want)/2 {
				t.Fatalf("only %d distinct events of %d", len(distinct), len(want))
			}
		})
	}
}

// TestConcurrentUse: workers drawing interleaved events from one App get
// what one goroutine gets (run with -race: an App is read-only).
func TestConcurrentUse(t *testing.T) {
	for _, app := range workload.Apps() {
		a := newApp(t, app, knobs(t, app))
		want := events(a, 0, 400)
		got := make([]rec, len(want))
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := w; i < len(got); i += 4 {
					k, v := a.Event(uint64(i), nil)
					got[i] = rec{string(k), string(v)}
				}
			})
		}
		wg.Wait()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: concurrent draws differ from sequential ones", app)
		}
	}
}

// TestEventsShareABuffer: events appended one after the other into one
// buffer (continuing at value[len(value):]) keep their bytes, and a key
// cannot be grown into its value.
func TestEventsShareABuffer(t *testing.T) {
	for _, app := range workload.Apps() {
		a := newApp(t, app, knobs(t, app))
		want := events(a, 0, 300)
		rest := make([]byte, 0, 4096)
		got := make([]rec, 0, len(want))
		var keys, values [][]byte
		for i := range uint64(len(want)) {
			k, v := a.Event(i, rest)
			if cap(k) != len(k) {
				t.Fatalf("%s: key capacity %d beyond its length %d", app, cap(k), len(k))
			}
			keys, values = append(keys, k), append(values, v)
			rest = v[len(v):]
		}
		for i := range keys {
			got = append(got, rec{string(keys[i]), string(values[i])})
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: events written into one buffer were overwritten", app)
		}
	}
}

// TestEventsDecode: every event decodes with its application's codec, its
// record key is the documented state key, and its contents respect the
// knobs.
func TestEventsDecode(t *testing.T) {
	for _, app := range workload.Apps() {
		t.Run(app, func(t *testing.T) {
			k := knobs(t, app)
			a := newApp(t, app, k)
			keys := uint32(k.Keys)
			for i := range uint64(2000) {
				key, v := a.Event(i, nil)
				var recKey uint32
				if err := check(app, k, v, &recKey); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if recKey >= keys {
					t.Fatalf("event %d: key %d not below %d", i, recKey, keys)
				}
				if want := grepsum.AppendKey(nil, recKey); !bytes.Equal(key, want) {
					t.Fatalf("event %d: record key %q, want %q", i, key, want)
				}
			}
		})
	}
}

// check decodes an event and checks its invariants, returning the key its
// record should carry.
func check(app string, k workload.Knobs, v []byte, recKey *uint32) error {
	keys, busy := uint32(k.Keys), uint32(k.BusyNanos)
	below := func(what string, x uint32) error {
		if x >= keys {
			return fmt.Errorf("%s %d not below %d", what, x, keys)
		}
		return nil
	}
	switch app {
	case workload.StreamingLedger:
		e, err := ledger.DecodeEvent(v)
		if err != nil {
			return err
		}
		*recKey = e.Account
		switch {
		case e.BusyNanos != busy:
			return fmt.Errorf("busy %d", e.BusyNanos)
		case e.Deposit && e.Amount != ledger.DepositAmount:
			return fmt.Errorf("deposit of %d", e.Amount)
		case !e.Deposit && e.Amount != ledger.TransferAmount && e.Amount != ledger.AbortAmount:
			return fmt.Errorf("transfer of %d", e.Amount)
		case !e.Deposit && (e.DstAccount == e.Account || e.DstBook == e.Book):
			return fmt.Errorf("transfer to itself: %+v", e)
		}
		return errors.Join(below("book", e.Book), below("dst account", e.DstAccount), below("dst book", e.DstBook))
	case workload.GrepSum, workload.NonGrepSum:
		type op struct {
			key   uint32
			reads []uint32
		}
		var ops []op
		if app == workload.GrepSum {
			e, err := grepsum.DecodeEvent(v)
			if err != nil {
				return err
			}
			if e.BusyNanos != busy {
				return fmt.Errorf("busy %d", e.BusyNanos)
			}
			for _, o := range e.Ops {
				ops = append(ops, op{o.Key, o.Reads})
			}
		} else {
			e, err := nongrepsum.DecodeEvent(v)
			if err != nil {
				return err
			}
			if e.BusyNanos != busy || e.Keys != keys {
				return fmt.Errorf("busy %d, keys %d", e.BusyNanos, e.Keys)
			}
			for _, o := range e.Ops {
				ops = append(ops, op{o.Key, o.Reads})
			}
		}
		if len(ops) != k.TxnLength {
			return fmt.Errorf("%d ops, want %d", len(ops), k.TxnLength)
		}
		*recKey = ops[0].key
		for _, o := range ops {
			if n := len(o.reads); n != 0 && n != k.Reads {
				return fmt.Errorf("op reads %d keys, want 0 or %d", n, k.Reads)
			}
			if err := below("op key", o.key); err != nil {
				return err
			}
			for _, r := range o.reads {
				if err := below("read", r); err != nil {
					return err
				}
				if k.Acyclic && r >= o.key {
					return fmt.Errorf("acyclic: op on %d reads %d", o.key, r)
				}
			}
		}
		return nil
	case workload.TollProcessing:
		e, err := toll.DecodeEvent(v)
		if err != nil {
			return err
		}
		*recKey = e.Segment
		if e.Speed != toll.InvalidSpeed && (e.Speed < toll.MinSpeed || e.Speed > toll.MaxSpeed) || e.BusyNanos != busy {
			return fmt.Errorf("report %+v", e)
		}
		return nil
	case workload.OnlineBidding:
		e, err := bidding.DecodeEvent(v)
		if err != nil {
			return err
		}
		if len(e.Items) != k.TxnLength || e.BusyNanos != busy {
			return fmt.Errorf("%d items, busy %d", len(e.Items), e.BusyNanos)
		}
		*recKey = e.Items[0].Key
		for _, it := range e.Items {
			ok := false
			switch e.Kind {
			case bidding.Buy:
				ok = it.Quantity == 1 && (it.Price == bidding.MaxPrice || it.Price == 0) && it.Price == e.Items[0].Price
			case bidding.Alert:
				ok = it.Quantity == 0 && it.Price >= 1 && it.Price <= bidding.MaxPrice
			case bidding.TopUp:
				ok = it.Price == 0 && it.Quantity >= 1 && it.Quantity <= bidding.MaxTopUp
			}
			if !ok {
				return fmt.Errorf("%v item %+v", e.Kind, it)
			}
			if err := below("item", it.Key); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("no check for %q", app)
}

// within fails the test unless got/total is within tol of want.
func within(t *testing.T, what string, got, total int, want, tol float64) {
	t.Helper()
	if total == 0 {
		t.Errorf("%s: no samples", what)
		return
	}
	if r := float64(got) / float64(total); r < want-tol || r > want+tol {
		t.Errorf("%s = %.4f (%d of %d), want %.4f ± %.4f", what, r, got, total, want, tol)
	}
}

// TestRatiosFollowTheKnobs: over 100,000 events of a fixed seed, each
// ratio knob is met within a tolerance of about 4 standard deviations.
func TestRatiosFollowTheKnobs(t *testing.T) {
	const n = 100_000
	t.Run("sl", func(t *testing.T) {
		k := knobs(t, "sl")
		k.DepositRatio, k.AbortRatio = 0.25, 0.3
		a := newApp(t, "sl", k)
		var deposits, transfers, aborts int
		for i := range uint64(n) {
			_, v := a.Event(i, nil)
			e, _ := ledger.DecodeEvent(v)
			switch {
			case e.Deposit:
				deposits++
			case e.Amount == ledger.AbortAmount:
				transfers++
				aborts++
			default:
				transfers++
			}
		}
		within(t, "deposit ratio", deposits, n, 0.25, 0.006)
		within(t, "abort ratio of transfers", aborts, transfers, 0.3, 0.007)
	})
	t.Run("gs", func(t *testing.T) {
		k := knobs(t, "gs")
		k.MultiReadRatio, k.AbortRatio = 0.7, 0.05
		a := newApp(t, "gs", k)
		var aborts, ops, multi int
		for i := range uint64(n) {
			_, v := a.Event(i, nil)
			e, _ := grepsum.DecodeEvent(v)
			if e.Abort {
				aborts++
			}
			for _, o := range e.Ops {
				ops++
				if len(o.Reads) > 0 {
					multi++
				}
			}
		}
		within(t, "abort ratio", aborts, n, 0.05, 0.003)
		within(t, "multi-read ratio", multi, ops, 0.7, 0.003)
	})
	t.Run("ngs", func(t *testing.T) {
		k := knobs(t, "ngs")
		k.NonDetRatio = 0.2
		a := newApp(t, "ngs", k)
		var ops, nonDet int
		for i := range uint64(n) {
			_, v := a.Event(i, nil)
			e, _ := nongrepsum.DecodeEvent(v)
			for _, o := range e.Ops {
				ops++
				if o.NonDet {
					nonDet++
				}
			}
		}
		within(t, "non-deterministic ratio", nonDet, ops, 0.2, 0.003)
	})
	t.Run("tp", func(t *testing.T) {
		k := knobs(t, "tp")
		k.AbortRatio = 0.15
		a := newApp(t, "tp", k)
		var invalid int
		vehicles := map[uint32]bool{}
		for i := range uint64(n) {
			_, v := a.Event(i, nil)
			e, _ := toll.DecodeEvent(v)
			if !e.Valid() {
				invalid++
			}
			vehicles[e.Vehicle] = true
		}
		within(t, "invalid reports", invalid, n, 0.15, 0.005)
		if len(vehicles) != toll.Vehicles {
			t.Errorf("%d distinct vehicles, want %d", len(vehicles), toll.Vehicles)
		}
	})
	t.Run("ob", func(t *testing.T) {
		k := knobs(t, "ob")
		k.BuyRatio, k.AbortRatio = 0.4, 0.5
		a := newApp(t, "ob", k)
		var kinds [3]int
		var aborted int
		for i := range uint64(n) {
			_, v := a.Event(i, nil)
			e, _ := bidding.DecodeEvent(v)
			kinds[e.Kind]++
			if e.Kind == bidding.Buy && e.Items[0].Price == 0 {
				aborted++
			}
		}
		within(t, "buy ratio", kinds[bidding.Buy], n, 0.4, 0.007)
		within(t, "alert ratio", kinds[bidding.Alert], n, 0.3, 0.007)
		within(t, "abort ratio of buys", aborted, kinds[bidding.Buy], 0.5, 0.01)
	})
}

// TestSkew: with θ = 0 the hottest 1% of the keys get about 1% of the
// accesses; with θ = 0.99 over 1,000 keys they get about 40% (the Zipf
// sum of the first 10 of 1,000 terms).
// TestLedgerAbortRatio: Streaming Ledger's transfers abort exactly when the
// generator drew them to abort, so the abort ratio is the configured one,
// under the transfer's rule (the source account and the source book entry
// must both hold the amount), even on a hot key that transfers keep
// debiting: 120,000 events at Zipf 2.0, 95% of them transfers and half of
// those drawn to abort, run through the native Streaming Ledger
// (txn/apps/ledger) by the serial executor, batch after batch over the
// generator's initial state. The hottest account and book entry are the
// source of about 30% of the events and lose about 17 a transfer net of
// what they receive, so a starting balance of a few million would run out.
func TestLedgerAbortRatio(t *testing.T) {
	const events, batch = 120_000, 10_240
	k := knobs(t, "sl")
	k.Skew, k.DepositRatio, k.AbortRatio, k.BusyNanos = 2.0, 0.05, 0.5, 0
	a := newApp(t, "sl", k)
	w, err := sl.New(sl.Config{Keys: k.Keys, MaxAmount: 1})
	if err != nil {
		t.Fatal(err)
	}
	store := txn.MapStore{}
	if err := a.Initial(func(table int, key, value []byte) error {
		store[txn.Key{Table: uint32(table), Key: string(key)}] = value
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s, err := txn.New(txn.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	serial, _ := txn.ParseStrategy("serial")
	var transfers, aborted, wrong int
	for first := 0; first < events; first += batch {
		evs := make([]sl.Event, batch)
		for i := range evs {
			_, v := a.Event(uint64(first+i), nil)
			e, err := ledger.DecodeEvent(v)
			if err != nil {
				t.Fatal(err)
			}
			evs[i] = sl.FromEvent(e)
		}
		res, err := s.Run(context.Background(), serial, w.Plan(evs, nil), store, sl.Apply(evs))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Changes {
			store[c.Key] = c.Value
		}
		for i, e := range evs {
			drawn := !e.Deposit && e.Amount == ledger.AbortAmount
			if res.Committed[i] == drawn {
				if wrong == 0 {
					t.Errorf("event %d (%+v) committed %v, drawn to abort %v", first+i, e, res.Committed[i], drawn)
				}
				wrong++
			}
			if !e.Deposit {
				transfers++
				if !res.Committed[i] {
					aborted++
				}
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d events ended otherwise than drawn", wrong, events)
	}
	within(t, "aborted transfers", aborted, transfers, 0.5, 0.01)
}

func TestSkew(t *testing.T) {
	share := func(skew float64) float64 {
		k := knobs(t, "tp")
		k.Skew = skew
		a := newApp(t, "tp", k)
		counts := make([]int, k.Keys)
		const n = 100_000
		for i := range uint64(n) {
			_, v := a.Event(i, nil)
			e, _ := toll.DecodeEvent(v)
			counts[e.Segment]++
		}
		slices.Sort(counts)
		slices.Reverse(counts)
		top := 0
		for _, c := range counts[:k.Keys/100] {
			top += c
		}
		return float64(top) / n
	}
	if s := share(0); s > 0.02 {
		t.Errorf("θ=0: top 1%% of keys drew %.3f of the accesses", s)
	}
	if s := share(0.99); s < 0.35 || s > 0.45 {
		t.Errorf("θ=0.99: top 1%% of keys drew %.3f of the accesses, want about 0.40", s)
	}
}

// TestInitial: every table holds one entry per key, in order, with the
// documented initial value; an error from fn stops Initial.
func TestInitial(t *testing.T) {
	for _, app := range workload.Apps() {
		t.Run(app, func(t *testing.T) {
			k := knobs(t, app)
			a := newApp(t, app, k)
			tables := a.Tables()
			next := make([]int, len(tables))
			prices := map[int64]bool{}
			err := a.Initial(func(table int, key, value []byte) error {
				if table < 0 || table >= len(tables) {
					return fmt.Errorf("table %d of %d", table, len(tables))
				}
				want := grepsum.AppendKey(nil, uint32(next[table]))
				if !bytes.Equal(key, want) {
					return fmt.Errorf("table %s: key %q, want %q", tables[table], key, want)
				}
				next[table]++
				return initialValue(app, table, uint32(next[table]-1), value, prices)
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range next {
				if n != k.Keys {
					t.Errorf("table %s has %d entries, want %d", tables[i], n, k.Keys)
				}
			}
			if app == workload.OnlineBidding && len(prices) < 50 {
				t.Errorf("only %d distinct initial prices", len(prices))
			}
			stop := errors.New("stop")
			calls := 0
			if err := a.Initial(func(int, []byte, []byte) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
				t.Errorf("Initial after fn failed: %v after %d calls", err, calls)
			}
			if !bytes.Equal(dump(t, a), dump(t, newApp(t, app, k))) {
				t.Error("two instances of the same knobs have different initial states")
			}
		})
	}
}

// dump returns the initial state as one byte string.
func dump(t *testing.T, a workload.App) []byte {
	t.Helper()
	var out []byte
	if err := a.Initial(func(table int, key, value []byte) error {
		out = append(append(append(out, byte(table)), key...), value...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func initialValue(app string, table int, k uint32, v []byte, prices map[int64]bool) error {
	switch app {
	case workload.StreamingLedger:
		if b, err := ledger.DecodeBalance(v); err != nil || b != ledger.InitialBalance || len(v) != 8 {
			return fmt.Errorf("balance %d, %v", b, err)
		}
	case workload.GrepSum, workload.NonGrepSum:
		if x, err := grepsum.DecodeValue(v); err != nil || x != int64(k) || len(v) != 8 {
			return fmt.Errorf("key %d: value %d, %v", k, x, err)
		}
	case workload.TollProcessing:
		if table == toll.Speeds {
			if s, err := toll.DecodeSpeedStats(v); err != nil || s != (toll.SpeedStats{}) || len(v) != 16 {
				return fmt.Errorf("speed stats %+v, %v", s, err)
			}
		} else if s, err := toll.DecodeVehicleSet(v); err != nil || s.Count() != 0 || len(v) != 16 {
			return fmt.Errorf("vehicle set %v, %v", s, err)
		}
	case workload.OnlineBidding:
		g, err := bidding.DecodeGood(v)
		if err != nil || g.Price < 1 || g.Price > bidding.MaxPrice || g.Quantity != bidding.InitialQuantity {
			return fmt.Errorf("good %+v, %v", g, err)
		}
		prices[g.Price] = true
	}
	return nil
}

// BenchmarkEvent measures the generation of one event, reusing the buffer.
func BenchmarkEvent(b *testing.B) {
	for _, app := range workload.Apps() {
		b.Run(app, func(b *testing.B) {
			k, _ := workload.Defaults(app)
			a := newApp(b, app, k)
			buf := make([]byte, 0, 512)
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				a.Event(i, buf[:0])
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
