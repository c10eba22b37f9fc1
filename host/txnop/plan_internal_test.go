package txnop

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn"
)

// TestChunksRuns builds runs of operations element by element (grow, as
// a Wasm plan declares them) and whole (take, as a native plan does),
// across chunk boundaries and over several resets that reuse the chunks,
// and checks that every run of a batch still holds what was put in it when
// the batch ends: no run is moved without its elements, and no later run
// or reused chunk overwrites an earlier one of the same batch.
func TestChunksRuns(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var c chunks[txn.Op]
		for batch := range rapid.IntRange(1, 3).Draw(rt, "batches") {
			c.reset()
			var runs [][]txn.Op
			var want [][]uint32
			for r := range rapid.IntRange(0, 40).Draw(rt, "runs") {
				// Sizes around minChunk make runs cross chunk boundaries.
				n := rapid.SampledFrom([]int{0, 1, 3, minChunk / 2, minChunk - 1, minChunk + 1}).Draw(rt, "size")
				fns := make([]uint32, n)
				for i := range fns {
					fns[i] = uint32(batch<<24 | r<<16 | i)
				}
				var run []txn.Op
				if rapid.Bool().Draw(rt, "grow") {
					for _, fn := range fns {
						if last := c.last(); last != nil && last.Fn != fn-1 {
							rt.Fatalf("batch %d run %d: last element has fn %#x, want %#x", batch, r, last.Fn, fn-1)
						}
						e := c.grow()
						if e.Fn != 0 || e.Arg != nil {
							rt.Fatalf("batch %d run %d: grow returned a used element %+v", batch, r, *e)
						}
						e.Fn, e.Arg = fn, []byte{1}
					}
					run = c.run()
				} else {
					run = c.take(n)
					for i, fn := range fns {
						if run[i].Fn != 0 || run[i].Arg != nil {
							rt.Fatalf("batch %d run %d: take returned a used element %+v", batch, r, run[i])
						}
						run[i].Fn, run[i].Arg = fn, []byte{1}
					}
				}
				if len(run) != n || (n > 0 && cap(run) != n) {
					rt.Fatalf("batch %d run %d: run of length %d capacity %d, want %d", batch, r, len(run), cap(run), n)
				}
				runs, want = append(runs, run), append(want, fns)
			}
			for r := range runs {
				for i := range runs[r] {
					if got := runs[r][i].Fn; got != want[r][i] {
						rt.Fatalf("batch %d run %d element %d: fn %#x, want %#x", batch, r, i, got, want[r][i])
					}
				}
			}
		}
	})
}

// TestPlanResetReusesChunks: once a Plan has planned a batch, planning one
// of the same shape again after Reset carves its operations and reads from
// the chunks it kept, allocating only the arena for keys and arguments
// (which outlive the batch), and the transactions are whole.
func TestPlanResetReusesChunks(t *testing.T) {
	if raceDetector {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	ds := ledgerDecls(3 * minChunk)
	wk := &wasmWorker{}
	wk.decl = wk.declare
	var p Plan
	plan := func() {
		p.Reset()
		wk.plan, wk.nEv, wk.nDecl = &p, 3*minChunk, 0
		for i := range ds {
			if err := wk.decl(&ds[i]); err != nil {
				t.Fatal(err)
			}
		}
		wk.closeEvent()
	}
	plan()
	arena := 0
	for t := range p.Txns {
		for _, op := range p.Txns[t].Ops {
			arena += len(op.Write.Key) + len(op.Arg)
			for _, r := range op.Reads {
				arena += len(r.Key)
			}
		}
	}
	// The arena's chunks, and one more where a chunk ends in the middle
	// of a copy; a quarter of the arguments are shared.
	if n, most := testing.AllocsPerRun(5, plan), float64(arena/arenaChunk+2); n > most {
		t.Errorf("%v allocations to plan a batch again, want at most %v (the arena's chunks)", n, most)
	}
	i := 0
	for e := range p.Txns {
		for m, op := range p.Txns[e].Ops {
			d := &ds[i]
			i++
			if int(d.Event) != e || op.Fn != d.Fn || op.Write.Table != d.Table || op.Write.Key != string(d.Key) || string(op.Arg) != string(d.Arg) || len(op.Reads) != len(d.Reads) {
				t.Fatalf("event %d operation %d: %+v, declared %+v", e, m, op, *d)
			}
			for j, r := range op.Reads {
				if r.Table != d.Reads[j].Table || r.Key != string(d.Reads[j].Key) {
					t.Fatalf("event %d operation %d read %d: %v, declared %v", e, m, j, r, d.Reads[j])
				}
			}
		}
	}
	if i != len(ds) {
		t.Fatalf("%d operations planned, %d declared", i, len(ds))
	}
}
