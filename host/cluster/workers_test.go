package cluster

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestSetWorkersRefusesBadCounts(t *testing.T) {
	for _, tc := range []struct {
		op   string
		n    int
		want string
	}{
		{"count", 0, `operator "count": 0 workers: want 1 to 65536`},
		{"count", -1, `operator "count": -1 workers`},
		{"count", MaxWorkers + 1, `operator "count": 65537 workers`},
		{"", 2, "no operator named"},
	} {
		a := NewAssignment(4)
		err := a.SetWorkers(tc.op, "", tc.n, "cli", time.Now())
		if !errors.Is(err, ErrBadWorkers) || !contains(err.Error(), tc.want) {
			t.Errorf("SetWorkers(%q, %d): %v, want ErrBadWorkers saying %q", tc.op, tc.n, err, tc.want)
		}
		if a.Workers != nil {
			t.Errorf("SetWorkers(%q, %d) was refused but recorded %+v", tc.op, tc.n, a.Workers)
		}
	}
}

func TestSetWorkersEveryHostAndOne(t *testing.T) {
	a := NewAssignment(4)
	a.Owners = []string{"a", "a", "b", "b"}
	if _, ok := a.Workers.For("count", "a"); ok {
		t.Fatal("no record, but For gives a count")
	}
	step := func(host string, n int) {
		t.Helper()
		if err := a.SetWorkers("count", host, n, "cli", time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := a.Validate([]string{"a", "b"}); err != nil {
			t.Fatalf("the table SetWorkers made is invalid: %v", err)
		}
	}
	for_ := func(host string) int {
		n, ok := a.Workers.For("count", host)
		if !ok {
			return 0
		}
		return n
	}
	// Only host b's count: a keeps its own.
	step("b", 3)
	if for_("a") != 0 || for_("b") != 3 {
		t.Fatalf("after b's count: a %d, b %d; want none and 3", for_("a"), for_("b"))
	}
	step("", 2)
	if for_("a") != 2 || for_("b") != 2 {
		t.Fatalf("after every host's count: a %d, b %d; want 2 and 2 (b's own dropped)", for_("a"), for_("b"))
	}
	step("a", 1)
	if for_("a") != 1 || for_("b") != 2 {
		t.Fatalf("after a's count: a %d, b %d; want 1 and 2", for_("a"), for_("b"))
	}
	if a.Workers.Epoch != 3 || a.Workers.Operators["count"].Epoch != 3 {
		t.Fatalf("epochs %+v, want 3", a.Workers)
	}
	c := a.Clone()
	c.Workers.Operators["count"].Hosts["a"] = 7
	if for_("a") != 1 {
		t.Fatal("Clone shares the workers record's hosts")
	}
}

func TestWorkersPending(t *testing.T) {
	a := NewAssignment(4)
	if p := WorkersPending(a, nil, []string{"a"}); p != nil {
		t.Fatalf("no record: pending %v, want none", p)
	}
	if err := a.SetWorkers("count", "", 2, "cli", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := a.SetWorkers("count", "c", 1, "cli", time.Now()); err != nil {
		t.Fatal(err)
	}
	reports := map[string]Running{
		"a": {Workers: map[string]int{"count": 2}},
		"b": {Workers: map[string]int{"count": 3}},
		"c": {Workers: map[string]int{"count": 1}},
		"d": {Workers: map[string]int{"count": 5}}, // not live
	}
	if p := WorkersPending(a, reports, []string{"e", "c", "b", "a"}); !slices.Equal(p, []string{"b", "e"}) {
		t.Fatalf("pending %v, want [b e] (b runs 3, e has not reported)", p)
	}
}

// TestWorkersRecordCompareAndSet: two hosts scale at once, each through
// its own handle; both scales land, one after the other, with epochs 1
// and 2, and neither is lost, whichever order they land in.
func TestWorkersRecordCompareAndSet(t *testing.T) {
	url := startServer(t)
	ca := open(t, url, Config{})
	cb := open(t, url, Config{})
	join(t, ca, "a")
	join(t, cb, "b")
	ctx := testCtx(t)

	// b's scale is written between a's read and a's write: a reads again
	// and its scale lands on top of b's, with the next epoch.
	calls := 0
	got, err := ca.Update(ctx, func(x *Assignment) error {
		calls++
		if calls == 1 {
			if _, err := cb.Update(ctx, func(y *Assignment) error { return y.SetWorkers("split", "", 4, "host b", time.Now()) }); err != nil {
				return err
			}
		}
		return x.SetWorkers("count", "", 3, "host a", time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("a's scale ran %d times, want 2", calls)
	}
	w := got.Workers
	if w.Epoch != 2 || w.Operators["split"].Count != 4 || w.Operators["split"].Epoch != 1 || w.Operators["count"].Count != 3 || w.Operators["count"].Epoch != 2 {
		t.Fatalf("record %+v, want b's split 4 at epoch 1 and a's count 3 at epoch 2", w)
	}

	// Many scales at once, from both handles, of one operator: every one
	// lands, each with its own epoch, and the last to land is the count.
	const each = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for i := range each {
		for j, c := range []*Cluster{ca, cb} {
			wg.Go(func() {
				_, err := c.Update(ctx, func(x *Assignment) error {
					return x.SetWorkers("count", "", 1+i+j*each, fmt.Sprintf("scale %d", i+j*each), time.Now())
				})
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	a, err := ca.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.Workers.Epoch != 2+2*each {
		t.Fatalf("record epoch %d after %d scales, want %d: a scale was lost", a.Workers.Epoch, 2+2*each, 2+2*each)
	}
	if ow := a.Workers.Operators["count"]; ow.Epoch != a.Workers.Epoch || ow.Count < 1 || ow.Count > 2*each {
		t.Fatalf("count's record %+v, want the last scale's at epoch %d", ow, a.Workers.Epoch)
	}

	// A count for a host that has never joined is refused by Update, and
	// nothing is written.
	before := a.Revision
	_, err = ca.Update(ctx, func(x *Assignment) error { return x.SetWorkers("count", "zed", 2, "cli", time.Now()) })
	if !errors.Is(err, ErrInvalidAssignment) || !contains(err.Error(), `workers.operators["count"].hosts["zed"]`) {
		t.Fatalf("a count for host zed: %v, want ErrInvalidAssignment naming the field", err)
	}
	if a, err := ca.Assignment(ctx); err != nil || a.Revision != before {
		t.Fatalf("the refused scale wrote: revision %d, was %d (%v)", a.Revision, before, err)
	}

	// Reports carry the worker counts, by host.
	if err := ca.Report(ctx, Running{Host: "a", Workers: map[string]int{"count": 3}}); err != nil {
		t.Fatal(err)
	}
	rs, err := cb.Reports(ctx)
	if err != nil || rs["a"].Workers["count"] != 3 {
		t.Fatalf("reports %+v, %v; want a running 3 workers of count", rs, err)
	}
}
