package adapt

import (
	"time"

	"github.com/sluicehq/sluice/txn"
)

// Measurement is what one batch measured: its TPG's dependency structure,
// its aborts, the cost of its operations and its speed. Its JSON form is
// what the benchmarks and the HTTP API show.
type Measurement struct {
	// Batch is the batch's sequence number, from 1.
	Batch uint64 `json:"batch"`
	// Strategy is the strategy that ran it.
	Strategy string `json:"strategy"`
	// Events and Ops are the batch's events (transactions) and operations.
	Events int `json:"events"`
	Ops    int `json:"ops"`
	// Temporal, Parametric, Logical and NonDet count the TPG's edges of
	// each kind (txn.Counts).
	Temporal   int `json:"temporal"`
	Parametric int `json:"parametric"`
	Logical    int `json:"logical"`
	NonDet     int `json:"nondet"`
	// Chains is the number of per-key chains, MaxChain the longest one's
	// operations, CyclicChains the chains in cycles with other chains
	// (counted when the scheduler analyses every batch).
	Chains       int `json:"chains"`
	MaxChain     int `json:"max_chain"`
	CyclicChains int `json:"cyclic_chains"`
	// Skew is the skew of the dependency degree: MaxChain over a worker's
	// fair share of the operations (Ops / workers). Near 0 when keys are
	// spread; 1 or more when the hottest key alone is a worker's worth of
	// work in sequence.
	Skew float64 `json:"skew"`
	// Aborted is the number of aborted transactions, AbortRatio their
	// share of Events.
	Aborted    int     `json:"aborted"`
	AbortRatio float64 `json:"abort_ratio"`
	// ReExecutions counts the operations executed more than once.
	ReExecutions int `json:"re_executions"`
	// OpCostNs is the mean time of one operation's function, in
	// nanoseconds (the scheduler's sampled useful time over the
	// operations of the first pass).
	OpCostNs float64 `json:"op_cost_ns"`
	// Seconds is the batch's processing time, from the plan of its first
	// event to the post of its last: the latency its events saw once the
	// batch closed. Rate is Events / Seconds.
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"events_per_second"`
}

// Collect builds the Measurement of batch number batch, of events events,
// from the scheduler's statistics st and the batch's processing time
// elapsed (plan, schedule and post). workers is the scheduler's worker
// count, which the skew is relative to (st.Workers is 1 when the batch ran
// serially).
func Collect(batch uint64, events, workers int, st *txn.Stats, elapsed time.Duration) Measurement {
	m := Measurement{
		Batch: batch, Strategy: st.Strategy, Events: events, Ops: st.Ops,
		Temporal: st.Temporal, Parametric: st.Parametric, Logical: st.Logical, NonDet: st.NonDet,
		Chains: st.Chains, MaxChain: st.MaxChain, CyclicChains: st.CyclicChains,
		Aborted: st.Aborted, ReExecutions: st.ReExecutions,
		Seconds: elapsed.Seconds(),
	}
	if st.Ops > 0 {
		m.Skew = float64(st.MaxChain) * float64(max(workers, 1)) / float64(st.Ops)
		m.OpCostNs = float64(st.Useful.Nanoseconds()) / float64(st.Ops)
	}
	if events > 0 {
		m.AbortRatio = float64(st.Aborted) / float64(events)
	}
	if m.Seconds > 0 {
		m.Rate = float64(events) / m.Seconds
	}
	return m
}

// perOp returns n per operation of m.
func (m *Measurement) perOp(n int) float64 {
	if m.Ops == 0 {
		return 0
	}
	return float64(n) / float64(m.Ops)
}

// cyclicShare is the share of chains caught in cycles.
func (m *Measurement) cyclicShare() float64 {
	if m.Chains == 0 {
		return 0
	}
	return float64(m.CyclicChains) / float64(m.Chains)
}
