package txn

import "time"

// Counts describe a batch's TPG and what executing it took.
type Counts struct {
	Txns, Ops, Keys int
	// Temporal edges join consecutive writers of one key.
	Temporal int
	// Parametric edges join the latest earlier writer of a read key to the
	// reader (when not already a temporal edge).
	Parametric int
	// Logical edges join consecutive operations of one transaction. They are
	// counted for the decision model; abort atomicity needs no ordering.
	Logical int
	// NonDet edges order non-deterministic operations against the other
	// operations touching their table (when not already counted above).
	NonDet int
	// Chains is the number of per-key operation chains (keys with a writer).
	Chains int
	// MaxChain is the length, in operations, of the longest chain: a lower
	// bound on the critical path of operation units, and so on the levels
	// of structured exploration. MaxChain over Ops is the share of the batch
	// the hottest key serialises: the skew of the dependency degree.
	MaxChain int
	// Cycles is the number of strongly connected components of more than one
	// chain in the graph of chains joined by parametric edges; CyclicChains is
	// the number of chains in them. Analyze and the strategies with chain
	// units (which must split those cycles) find them; strategies with
	// operation units look for them only when the Scheduler's
	// Config.Analyze is set, and otherwise leave both 0.
	Cycles, CyclicChains int
	// Units is the number of scheduling units; SplitUnits the number of
	// chain units split into operations to break cycles.
	Units, SplitUnits int
	// Levels is the depth of the unit graph: Units/Levels is the average
	// parallelism structured exploration can find. Only the structured
	// explorations (bfs, dfs) sort units by level; under ns it is 0.
	Levels int
	// Aborted is the number of aborted transactions.
	Aborted int
	// Passes is the number of passes over the TPG (1 without aborts).
	Passes int
	// Executions counts calls of Apply; ReExecutions those beyond the first
	// per operation.
	Executions, ReExecutions int
}

// Breakdown is where a batch's time went. Plan and Finish are wall-clock
// time (their parallel phases run on all workers); Explore, Useful and Abort
// are summed over workers. Plan + (Explore+Useful+Abort)/Workers + Finish is
// about Stats.Wall.
type Breakdown struct {
	// Plan is building the TPG and the units and loading committed values:
	// the time from the start of Run to the start of the first pass.
	Plan time.Duration
	// Explore is scheduling overhead in the first pass: worker time not
	// spent inside Apply.
	Explore time.Duration
	// Useful is time inside Apply in the first pass (sampled: one call in 8
	// is timed and scaled).
	Useful time.Duration
	// Abort is worker time of every pass after the first: rollback, checks
	// and re-execution.
	Abort time.Duration
	// Finish is assembling the result.
	Finish time.Duration
}

// Stats describe one Run.
type Stats struct {
	Strategy string
	Workers  int
	Wall     time.Duration
	Counts
	Breakdown
}
