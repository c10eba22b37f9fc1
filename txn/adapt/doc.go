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
//     pass that finds a new abort, so frequent aborts favour eager here.
//
// Then what it measured. Every batch's throughput is recorded against the
// strategy that ran it, in a table keyed by the workload's regime (the
// rules' choice and coarse classes of abort ratio and operation cost). When that table shows another strategy faster in the current
// regime than the rules' choice, by more than Margin, the model takes it
// over the rules; a batch run after a switch that comes out slower than
// predicted (by more than Tolerance) is recorded as a misprediction, and
// its measured rate makes the model fall back to the faster strategy it
// knew. Entries older than Memory batches are forgotten, so a choice
// judged under other conditions is tried again.
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
// after it, with the reasons and the time deciding took) in a bounded
// history, for metrics, benchmarks and the HTTP API.
package adapt
