package txn

import (
	"strings"
	"sync/atomic"
)

// EdgeKind names the kind of a dependency in a Sample.
type EdgeKind uint8

// The kinds of dependency between two operations of a batch.
const (
	// Temporal: the later operation writes or reads a key an earlier one
	// writes.
	Temporal EdgeKind = iota
	// Parametric: the later operation reads a key (one of its Reads) the
	// earlier one writes.
	Parametric
	// NonDeterministic: one of the two is a non-deterministic operation
	// on the table of the other's key.
	NonDeterministic
	// Logical: the two are consecutive operations of one transaction,
	// which commit or abort together.
	Logical
)

// String returns the kind's name: temporal, parametric, nondet or logical.
func (k EdgeKind) String() string {
	switch k {
	case Temporal:
		return "temporal"
	case Parametric:
		return "parametric"
	case NonDeterministic:
		return "nondet"
	default:
		return "logical"
	}
}

// Sample is a copy of one batch's task precedence graph, taken on request
// (Scheduler.SampleNext): its operations, with the scheduling unit each
// was in and the order the units first ran in, and its dependencies.
type Sample struct {
	// Strategy is the strategy that ran the batch.
	Strategy string
	// Txns and TotalOps are the batch's transactions and operations; Ops
	// holds the first of them only, up to the limit SampleNext was given,
	// and Edges the dependencies between those (Truncated says so).
	Txns, TotalOps int
	Truncated      bool
	// Units is the number of scheduling units the batch had.
	Units int
	Ops   []SampleOp
	Edges []SampleEdge
}

// SampleOp is one operation of a Sample.
type SampleOp struct {
	// Txn is the operation's transaction (its timestamp in the batch) and
	// Index its position in the transaction.
	Txn, Index int32
	// Key is the key a deterministic operation writes; Table the table of
	// a non-deterministic one (NonDet), whose Key is empty.
	Key    Key
	NonDet bool
	// Unit is the scheduling unit the operation was in; Order is the
	// position of that unit in the order units first ran (0 first, -1
	// never ran), and Worker the worker that ran it then.
	Unit, Order, Worker int32
	// Aborted is set when the operation's transaction aborted.
	Aborted bool
}

// SampleEdge is one dependency of a Sample: To runs after From.
type SampleEdge struct {
	From, To int32
	Kind     EdgeKind
}

// sampler is a Scheduler's request for a sample and the last one taken.
type sampler struct {
	want atomic.Int32 // the limit of operations asked for; 0: no request
	last atomic.Pointer[Sample]
}

// SampleNext asks the Scheduler to copy the task precedence graph of the
// next batch that runs under a TPG strategy (not Serial nor S-Store, which
// build none), keeping at most maxOps of its operations; Sampled returns
// it once taken. It may be called concurrently with Run. A batch not
// sampled pays one atomic load for it.
func (s *Scheduler) SampleNext(maxOps int) {
	s.sample.want.Store(int32(max(1, min(maxOps, 1<<20))))
}

// Sampled returns the last batch sampled, nil before any. The Sample is
// not changed afterwards.
func (s *Scheduler) Sampled() *Sample { return s.sample.last.Load() }

// startSample prepares x to record the order its units run in, when a
// sample was asked for.
func (x *run) startSample(s *Scheduler) {
	limit := s.sample.want.Swap(0)
	if limit == 0 {
		return
	}
	x.sampleMax = int(limit)
	n := x.us.count()
	x.unitOrder = make([]int32, n)
	x.unitWorker = make([]int32, n)
	for i := range x.unitOrder {
		x.unitOrder[i] = -1
	}
}

// noteUnit records that worker w ran unit u, the first time it runs.
func (x *run) noteUnit(w int, u int32) {
	if x.unitOrder[u] < 0 {
		x.unitOrder[u] = x.unitSeq.Add(1) - 1
		x.unitWorker[u] = int32(w)
	}
}

// takeSample copies the batch's graph into a Sample, once it ran.
func (x *run) takeSample(s *Scheduler, res *Result) {
	n := min(len(x.ops), x.sampleMax)
	sm := &Sample{Strategy: x.strat.String(), Txns: len(x.batch), TotalOps: len(x.ops), Truncated: n < len(x.ops),
		Units: x.us.count(), Ops: make([]SampleOp, n)}
	var unitOf []int32 // per operation, with chain units
	if x.us.opStart != nil {
		unitOf = make([]int32, len(x.ops))
		for u := range x.us.count() {
			for _, id := range x.us.ops[x.us.opStart[u]:x.us.opStart[u+1]] {
				unitOf[id] = int32(u)
			}
		}
	}
	for i := range n {
		o := &x.ops[i]
		u := int32(i)
		if unitOf != nil {
			u = unitOf[i]
		}
		so := SampleOp{Txn: o.txn, Index: o.idx, NonDet: o.op.NonDet, Unit: u, Order: x.unitOrder[u], Worker: x.unitWorker[u],
			Aborted: !res.Committed[o.txn]}
		if o.op.NonDet {
			so.Key.Table = o.op.Table
		} else {
			so.Key = Key{Table: o.op.Write.Table, Key: strings.Clone(o.op.Write.Key)}
		}
		sm.Ops[i] = so
		if i > 0 && x.ops[i-1].txn == o.txn {
			sm.Edges = append(sm.Edges, SampleEdge{From: int32(i - 1), To: int32(i), Kind: Logical})
		}
	}
	for _, e := range x.edges {
		if int(e.from) < n && int(e.to) < n {
			k := Temporal
			switch e.kind {
			case edgeParametric:
				k = Parametric
			case edgeNonDet:
				k = NonDeterministic
			}
			sm.Edges = append(sm.Edges, SampleEdge{From: e.from, To: e.to, Kind: k})
		}
	}
	s.sample.last.Store(sm)
}
