package exec

import (
	"cmp"
	"slices"
	"time"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/control"
)

// hotKeys is how many keys a keyed operator's sample of hot keys keeps,
// and sampleEvery how many of its records pass for each one sampled.
const (
	hotKeys     = 8
	sampleEvery = 64
)

// meter is one operator's measurements for Measure. What the executor
// counts lives in the stage (the workers' totals, a keyed stage's group
// counts) or, for a stage without workers of its own, here; after every
// batch the executor copies it into pub, which Measure reads, both under
// Job.mu.
type meter struct {
	// Set by New, never changed.
	name, kind         string
	inputs             []string
	resizable, movable bool

	// A stage that runs no pool of workers (transactional, windowed,
	// join) is measured as one worker: the time of its runs, the records
	// it ran and their delays. Executor goroutine only.
	busy, delay time.Duration
	records     uint64
	delayed     uint64

	pub published
}

// published is what Measure reports of an operator, as of the end of the
// last batch (or the last change of its workers). Guarded by Job.mu.
type published struct {
	in, out uint64
	workers []control.WorkerSample // Groups left to Measure
	// assign is a keyed operator's assignment (never changed in place).
	assign *assignment
	// arrived and processed are a keyed operator's per-group counts.
	arrived, processed []uint64
	hot                []control.KeyCount
}

// groupCounts are a keyed stage's per-group counts since they were last
// published, and the groups they touch.
type groupCounts struct {
	arrived, processed []uint64
	touched            []int32
}

// arrive counts a record routed to group kg.
func (g *groupCounts) arrive(kg int) {
	if g.arrived[kg] == 0 && g.processed[kg] == 0 {
		g.touched = append(g.touched, int32(kg))
	}
	g.arrived[kg]++
}

// topKeys is a space-saving summary of the most frequent keys of a
// sample: at most hotKeys counters; a key not counted takes over the
// smallest counter, plus one.
type topKeys struct {
	seen    uint64 // records offered, sampled or not
	entries []control.KeyCount
}

// offer counts a record of key in group kg, sampling every sampleEvery-th.
func (t *topKeys) offer(key []byte, kg int) {
	t.seen++
	if t.seen%sampleEvery != 0 {
		return
	}
	for i := range t.entries {
		if t.entries[i].Key == string(key) {
			t.entries[i].Count++
			return
		}
	}
	if len(t.entries) < hotKeys {
		t.entries = append(t.entries, control.KeyCount{Key: string(key), Group: kg, Count: 1})
		return
	}
	m := 0
	for i := range t.entries {
		if t.entries[i].Count < t.entries[m].Count {
			m = i
		}
	}
	t.entries[m] = control.KeyCount{Key: string(key), Group: kg, Count: t.entries[m].Count + 1}
}

// poolOf returns the pool of workers of a stage whose workers are
// measured one by one and can be resized and capped (stateless and keyed
// stages), nil for other kinds.
func poolOf(s stage) *pool {
	switch st := s.(type) {
	case *statelessStage:
		return &st.pool
	case *keyedStage:
		return &st.pool
	}
	return nil
}

// newMeter describes n's operator for Measure.
func newMeter(n *node, inputs []string) *meter {
	mt := &meter{name: n.op.Name, kind: string(n.op.Kind), inputs: inputs}
	switch n.code.(type) {
	case *statelessStage:
		mt.resizable = true
	case *keyedStage:
		mt.resizable, mt.movable = true, true
	}
	return mt
}

// measureRun adds to n's measurements what its stage's last run did: the
// delays of the records each worker ran (from the read of the record's
// chunk to the end of the worker's run) and, for a stage without a pool
// of workers, the run's time and records. idx holds the batch input of
// each of the run's input records; start and end bound the run.
func (j *Job) measureRun(n *node, b *batch, idx []int32, start, end time.Time) {
	if p := poolOf(n.code); p != nil {
		for _, w := range p.active {
			e := int64(w.end.Sub(j.epoch))
			var sum int64
			var k uint64
			for i := range w.in {
				if bi := int(idx[w.index(i)]); bi < len(b.readAt) {
					sum += e - b.readAt[bi]
					k++
				}
			}
			w.delay += time.Duration(sum)
			w.delayed += k
		}
		return
	}
	mt := n.meter
	mt.busy += end.Sub(start)
	mt.records += uint64(len(idx))
	e := int64(end.Sub(j.epoch))
	for _, bi := range idx {
		if int(bi) < len(b.readAt) {
			mt.delay += time.Duration(e - b.readAt[bi])
			mt.delayed++
		}
	}
}

// publish copies n's measurements into what Measure reads. The caller
// holds j.mu; it runs on the executor's goroutine.
func (n *node) publish() {
	mt := n.meter
	pub := &mt.pub
	pub.in, pub.out = n.in, n.out
	pub.workers = pub.workers[:0]
	p := poolOf(n.code)
	if p == nil {
		pub.workers = append(pub.workers, control.WorkerSample{ID: 0, Records: mt.records, Out: n.out,
			BusySeconds: mt.busy.Seconds(), DelaySeconds: mt.delay.Seconds(), Delayed: mt.delayed})
		return
	}
	for _, w := range p.workers {
		pub.workers = append(pub.workers, control.WorkerSample{ID: w.id, Records: w.records, Out: w.outs,
			BusySeconds: w.busy.Seconds(), DelaySeconds: w.delay.Seconds(), Delayed: w.delayed})
	}
	ks, ok := n.code.(*keyedStage)
	if !ok {
		return
	}
	pub.assign = ks.assign
	if pub.arrived == nil {
		pub.arrived, pub.processed = make([]uint64, ks.groups), make([]uint64, ks.groups)
	}
	g := &ks.counts
	for _, kg := range g.touched {
		pub.arrived[kg] += g.arrived[kg]
		pub.processed[kg] += g.processed[kg]
		g.arrived[kg], g.processed[kg] = 0, 0
	}
	g.touched = g.touched[:0]
	pub.hot = append(pub.hot[:0], ks.hot.entries...)
}

// Measure returns the job's measurements now, for the control plane:
// per operator its records in and out, its workers' records, outputs,
// useful (busy) time and the delays of the records they ran, a keyed
// operator's key groups (the records that arrived for each and that its
// worker ran, and which worker owns it) and a sample of its hottest
// keys; per source the records taken into batches and its backlog: what
// it reports (connectors.Backlogged; -1 for a source that cannot tell)
// plus the records read from it that wait in the job's queue, which the
// readers fill ahead of the batches (a job that falls behind fills it
// before the source's own backlog grows, so a backlog that left them out
// would hide the first seconds' growth, up to a few chunks); the batches
// committed and the time their commits took. Counters are cumulative
// since the job was made, as of the end of the last batch; At is now.
//
// The delay of a record runs from the read of its chunk from the source
// to the end of its worker's run of the batch; a record the job made (a
// fired window's result, downstream of its window) has no read time and
// is not among Delayed. Operators that run no workers of their own
// (transactional, windowed, joins) are measured as one worker, id 0,
// whose busy time is that of their runs; they have no groups and are
// neither resizable nor movable.
//
// GCPauseSeconds, HeapBytes, HeapLimit, SlowConsumers and Migrating are
// left for the caller to fill. Measure may be called from any goroutine,
// while the job runs and after it ended.
func (j *Job) Measure() control.Sample {
	s := control.Sample{At: time.Now()}
	for i, in := range j.cfg.Sources {
		// taken before reads: a record is read before it is taken, so
		// the queue's count is never negative.
		taken := j.taken[i].Load()
		ss := control.SourceSample{Name: in.Name, Read: taken, Backlog: -1}
		if bl, ok := in.Source.(connectors.Backlogged); ok {
			ss.Backlog = bl.Backlog() + int64(j.reads[i].Load()-taken)
		}
		s.Sources = append(s.Sources, ss)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	s.Commits, s.CommitSeconds = j.commits, j.commitTime.Seconds()
	s.Operators = make([]control.OperatorSample, len(j.meters))
	for i, mt := range j.meters {
		pub := &mt.pub
		os := control.OperatorSample{Name: mt.name, Kind: mt.kind, Version: j.status.Operators[i].Version,
			Inputs: slices.Clone(mt.inputs), Resizable: mt.resizable, Movable: mt.movable, In: pub.in, Out: pub.out,
			Workers: slices.Clone(pub.workers)}
		if a := pub.assign; a != nil {
			byWorker := map[int][]int{}
			for kg, o := range a.owners {
				byWorker[int(o)] = append(byWorker[int(o)], kg)
			}
			for k := range os.Workers {
				os.Workers[k].Groups = byWorker[os.Workers[k].ID]
				if os.Workers[k].Groups == nil {
					os.Workers[k].Groups = []int{}
				}
			}
			os.Groups = make([]control.GroupSample, len(pub.arrived))
			for kg := range os.Groups {
				os.Groups[kg] = control.GroupSample{Arrived: pub.arrived[kg], Processed: pub.processed[kg]}
			}
			os.HotKeys = slices.Clone(pub.hot)
			slices.SortFunc(os.HotKeys, func(a, b control.KeyCount) int {
				return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Key, b.Key))
			})
		}
		s.Operators[i] = os
	}
	return s
}
