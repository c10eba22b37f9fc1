// Package adapt chooses the transactional scheduling strategy of each batch
// from what the running workload measures: MorphStream's adaptive
// scheduling, decided online.
//
// MorphStream's claim is that no static strategy wins across workloads:
// exploration (breadth first, depth first, non-structured), unit (one
// operation, one per-key chain) and abort handling (eager, lazy) each pay
// off under some dependency structure and lose under another. Its published
// code decides from descriptors its data generator computes in advance;
// this package decides from the batches it has just run.
//
// # Collector
//
// Collect turns one batch's txn.Stats and processing time into a
// Measurement: the dependency counts of its TPG (temporal, parametric,
// logical, non-deterministic), the chains caught in cycles (the scheduler
// counts them when txn.Config.Analyze is set, which the operator does only
// when Model.NeedsCycles says the rules need them), the skew of
// the dependency degree (the longest chain's length over a worker's fair
// share of the operations: how much of the batch one hot key serialises),
// the abort ratio, the mean time of an operation's function, and the
// batch's throughput and latency. Nothing is sampled beyond what the
// scheduler already measures, so collecting costs a few field reads.
//
// # Decision model
//
// Rules first, each threshold a field of Thresholds:
//
//   - exploration: structured when the batch has many dependencies per
//     operation and a low skew (wide levels, cheap barriers); breadth
//     first below DFSSkew, depth first above it (no barrier per level);
//     non-structured otherwise. MorphStream counts logical dependencies
//     here too; Sluice's TPG does not order a transaction's operations
//     (abort atomicity is a per-transaction status), so they add no level
//     and are left out;
//   - unit: one operation when chains form cycles, when temporal
//     dependencies are few or parametric ones many (a chain would wait on
//     other chains); a chain otherwise;
//   - serial: a hot key with many aborts (SerialSkew, SerialAborts) runs
//     the batch on one worker in timestamp order: the key serialises much
//     of the batch anyway and its aborts cascade down its chain, a pass
//     each under the parallel strategies;
//   - abort handling: eager when operations are costly or aborts frequent;
//     lazy otherwise. MorphStream's rule reads "eager when aborts are
//     rare"; its eager mode rolls back and redoes each abort's dependents
//     at once, which grows with the aborts. Sluice's eager mode re-checks
//     every operation once per pass and re-executes only those whose inputs
//     changed, while its lazy mode re-executes the whole batch once per
//     pass that finds a new abort, so aborts favour eager here.
//
// The defaults (DefaultThresholds, which gives each one's evidence) are
// calibrated on Sluice's own costs rather than MorphStream's: on the
// benchmark workloads ns-op-eager was the best static strategy, or within
// the noise of the best, in every phase, so the rules choose it except on
// dense, flat batches (breadth first) and the extremes of skew and aborts
// (serial); the chain rule and the lazy rule are off (configurable), as
// chain units never measurably won, and lazy gained nothing measurable
// where nothing aborted and lost wherever transactions did.
//
// Then what it measured. Every batch's throughput is recorded against the
// strategy that ran it, in a table keyed by the workload's regime (the
// rules' choice and coarse classes of skew, abort ratio and operation
// cost): a running mean and variance of the batches' rates and how many
// batches they rest on. One batch's rate varies by about 8% on the
// benchmark machine, more than the strategies worth choosing between
// differ, so a measured strategy overrides the rules' choice or the
// current strategy only when its mean is faster by more than Margin and
// the difference exceeds Significance standard errors, computed from both
// dispersions and counts (each pooled with the regime's and the prior
// Spread; a strategy measured once takes at least Spread), and both
// measured within the last 30 batches: a regime spans workloads that
// differ in what its classes do not see, and an old batch of one strategy
// set against the current mean of another would compare two workloads. A
// learned choice then stands in its regime until something beats it the
// same way, so noise does not make the model switch back and forth. A batch run
// after a switch that comes out slower than predicted by more than
// Tolerance and more than its dispersion explains is a misprediction, the
// one case where a single batch is evidence enough (the drop is large):
// the model returns to the strategy it left. Entries older than Memory
// batches are forgotten, so a choice judged under other conditions is
// tried again.
//
// Probes measure what the rules did not choose: after ProbeEvery batches
// on one strategy in one regime, one batch runs a neighbour (one dimension
// changed, in turn). Their cost is bounded: a probe that measured its
// neighbour slower doubles the wait (up to 8 times, until the regime
// changes), neighbours measured significantly slower lately are skipped,
// and the lazy neighbour is never probed where transactions abort (it lost
// wherever they did). Stats counts probes, switches and mispredictions.
//
// Hysteresis: each threshold has a band (Band, a fraction of it) on the
// side of the current strategy's choice, so a workload sitting near a
// threshold does not make the model flap; Patience can further hold a
// switch the measurements do not support until the same new choice has
// come up that many batches in a row. Switches happen between batches only,
// at punctuation boundaries: the caller asks for the strategy of the next
// batch before running it.
//
// Every batch leaves a Record (its measurement and the decision taken
// after it, with the reasons, the dispersion behind a learned choice and
// the time deciding took) in a bounded history, for metrics, benchmarks
// and the HTTP API. Deciding is a few map lookups over the regime's
// strategies, microseconds against batches of tens of milliseconds.
package adapt
