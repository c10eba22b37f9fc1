package exec

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
)

// TestRebalance checks the assignment a change of worker count makes:
// every group owned by a live worker, loads within one of each other, and
// no group moved off a worker that was not over its share.
func TestRebalance(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		groups := rapid.IntRange(1, 300).Draw(t, "groups")
		a := newAssignment(groups, rapid.IntRange(1, 20).Draw(t, "from"))
		for range rapid.IntRange(1, 4).Draw(t, "changes") {
			n := rapid.IntRange(1, 20).Draw(t, "to")
			b := a.rebalance(n)
			if b.version != a.version+1 || b.workers != n {
				t.Fatalf("version %d workers %d, want %d and %d", b.version, b.workers, a.version+1, n)
			}
			load := make([]int, n)
			for kg, o := range b.owners {
				if int(o) >= n {
					t.Fatalf("group %d owned by worker %d of %d", kg, o, n)
				}
				load[o]++
			}
			lo, hi := load[0], load[0]
			for _, l := range load {
				lo, hi = min(lo, l), max(hi, l)
			}
			if hi-lo > 1 {
				t.Fatalf("loads %v differ by more than one", load)
			}
			fair := groups / n
			for kg := range a.owners {
				if o := int(a.owners[kg]); o < n && a.count(o) <= fair && b.owners[kg] != a.owners[kg] {
					t.Fatalf("group %d moved off worker %d, which had %d groups of a fair %d", kg, o, a.count(o), fair)
				}
			}
			d, err := decodeAssignment(b.encode())
			if err != nil || d.version != b.version || d.workers != b.workers || string(fmt.Sprint(d.owners)) != fmt.Sprint(b.owners) {
				t.Fatalf("round trip: %v, %+v", err, d)
			}
			a = b
		}
	})
}

// TestWorkersChangeUnderLoad changes a keyed operator's workers 2 -> 1 ->
// 2 while records keep arriving: nothing is lost or repeated, and every
// key's counts run 1, 2, 3... in order, as in a run that never changed.
func TestWorkersChangeUnderLoad(t *testing.T) {
	r := startLive(t, 32, Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: load(t, "wordcount", plugin.KindKeyed, 0),
		Parallelism: 2, Tables: []string{"counts"}})
	const chunks, per, keys = 60, 25, 17
	var feeding sync.WaitGroup
	feeding.Go(func() {
		for c := range chunks {
			recs := make([]abi.Record, per)
			for i := range recs {
				k := []byte("k" + strconv.Itoa((c*per+i)%keys))
				recs[i] = abi.Record{Key: k, Value: k}
			}
			r.src.ch <- recs
		}
	})
	ctx := context.Background()
	waitFor(t, func() bool { return len(r.sink.records()) >= chunks*per/4 })
	if err := r.job.SetWorkers(ctx, "count", 1); err != nil {
		t.Fatal(err)
	}
	if p := r.job.Status().Operators[0].Parallelism; p != 1 {
		t.Errorf("parallelism %d after the change to 1", p)
	}
	waitFor(t, func() bool { return len(r.sink.records()) >= chunks*per/2 })
	if err := r.job.SetWorkers(ctx, "count", 2); err != nil {
		t.Fatal(err)
	}
	feeding.Wait()
	waitFor(t, func() bool { return len(r.sink.records()) >= chunks*per })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	seen := map[string]bool{}
	for i, o := range r.sink.records() {
		k := string(o.Record.Key)
		want[k]++
		if got := string(o.Record.Value); got != strconv.Itoa(want[k]) {
			t.Fatalf("output %d: key %s count %s, want %d", i, k, got, want[k])
		}
		if seen[o.ID] {
			t.Fatalf("output id %s twice", o.ID)
		}
		seen[o.ID] = true
	}
	if n := len(r.sink.records()); n != chunks*per {
		t.Errorf("%d outputs, want %d", n, chunks*per)
	}
	st := r.job.Status().Operators[0]
	if st.Parallelism != 2 || st.Assignment != 3 || len(st.Workers) != 2 || st.Workers[0].KeyGroups+st.Workers[1].KeyGroups != 16 {
		t.Errorf("status %+v: want 2 workers owning 16 groups, assignment version 3", st)
	}
}

func TestSetWorkersRefused(t *testing.T) {
	r := startLive(t, 32, bankOperator(t, "bank", "serial", 2, 8, false))
	ctx := context.Background()
	for name, tc := range map[string]struct {
		op string
		n  int
	}{
		"unknown":       {"nope", 2},
		"transactional": {"bank", 2},
	} {
		if err := r.job.SetWorkers(ctx, tc.op, tc.n); !errors.Is(err, ErrChangeRefused) {
			t.Errorf("%s: SetWorkers = %v, want ErrChangeRefused", name, err)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// bumpRecords is a change that counts five more records on a keyed
// operator's first worker and reports the operator again, as a swap or a
// change of workers does.
type bumpRecords struct{ n *node }

func (c bumpRecords) apply(_ context.Context, j *Job) error {
	c.n.code.(*keyedStage).workers[0].records += 5
	j.syncStatus(c.n)
	return nil
}
func (bumpRecords) abandon(context.Context) {}
func (bumpRecords) describe() string        { return "count five more records" }

// TestStatusIsASnapshot: a Status handed out does not change when the job
// reports its operators again (the API encodes it outside the job's lock).
func TestStatusIsASnapshot(t *testing.T) {
	r := startLive(t, 32, Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: load(t, "wordcount", plugin.KindKeyed, 0),
		Parallelism: 2, Tables: []string{"counts"}})
	r.feed(t, 2, "a", "b")
	before := r.job.Status().Operators[0].Workers
	want := fmt.Sprint(before)
	if err := r.job.submit(context.Background(), bumpRecords{r.job.byName["count"]}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(before); got != want {
		t.Errorf("a Status's workers changed from %s to %s after it was handed out", want, got)
	}
	if got := r.job.Status().Operators[0].Workers[0].Records; got != before[0].Records+5 {
		t.Errorf("the status reports %d records for worker 0, want %d", got, before[0].Records+5)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}
