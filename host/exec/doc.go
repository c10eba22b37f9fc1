// Package exec runs a pipeline: it reads batches from the sources, runs
// each batch through the graph of operators on parallel workers, writes the
// results to the sinks, and commits state and source positions together.
//
// # The graph
//
// Sources, operators and sinks form a directed acyclic graph (graph.go):
// an operator names the sources and operators it reads (Operator.Inputs), a
// sink the operators it writes (Output.Inputs). With no names the job is a
// chain: an operator reads the one before it, the first reads every source,
// and sinks write what the last emits. A batch runs through the operators
// in an order where each comes after its inputs. An operator with several
// inputs gets their records merged by the batch input they descend from
// (ties in the order of its inputs), each with abi.Record.Input set to the
// position of its input, so the order depends neither on the number of
// workers nor on timing, and a replay sees the same.
//
// # Stages
//
// Each operator kind implements one interface, stage (stage.go): run a
// batch, retry a record alone, savepoint and rollback (for trials and
// quarantine), prepare and install new code, apply what waits for the
// commit, report its status, close. The stateless kinds (stateless.go),
// keyed (keyed.go) and transactional (txn.go) are peers; everything around
// the code is written once against the interface: the failure policy and
// the trial of swapped-in code (policy.go), the queue of changes applied at
// batch boundaries (swap.go: swaps and worker counts now, assignments and
// timers next). A new kind (a window, a join) is a new stage, not a branch.
//
// # Batches and the commit protocol
//
// Input is cut into batches of up to Batch.Size records (or what arrived
// within Batch.Linger of the first). The executor runs a batch through the
// graph, copies its outputs out of the operators' buffers, applies held
// changes, and captures its state for the commit (state.Store.Prepare);
// then a committer finishes it while the executor runs the next batches,
// in batch order, in two stages on goroutines of their own (committer.go):
//
//  1. the writer writes every output to the sinks that read it, with a
//     de-duplication id derived from the source position of the input it
//     came from ("<pipeline>/<source>/<position>/<n>", n counting per sink
//     the outputs of that input), and flushes the sinks, or starts their
//     flushes where a sink can run one while it is written to
//     (connectors.FlushStarter: core NATS, whose flush is a round trip);
//  2. the durable stage waits for the started flushes, then commits the
//     captured state changes and the last source position of each source
//     in one atomic write (package state);
//  3. and acknowledges the sources up to those positions.
//
// The executor waits only for the writer before it reuses a batch and its
// output buffers: up to commitDepth (4) written batches wait for their
// flushes and commits while it runs the next, so a round trip to the
// server per batch does not stall the pipeline. A failure in either
// stage fails the job, at once even when the executor waits for input,
// and no batch after it is committed.
//
// A crash before step 2 replays the batch on restart: state is as it was
// before the batch, and rewindable sinks (connectors.Rewindable) take
// back what they wrote after the offset committed with the state: a file
// is cut back to it, a JetStream sink skips the replayed outputs that its
// stream holds after it. A sink with no offset committed yet has the one
// it starts from committed when the job is created, so that a crash in
// the first batch is covered too. A crash between 2 and 3 makes the source
// redeliver what was committed; the sources skip positions at or before
// the committed ones. So with a resumable source, output and state are
// exactly once; a core NATS source is at most once, and a core NATS sink
// repeats a crashed batch's outputs (at least once). Pipelining changes
// none of this: a batch's state reaches Pebble only after its outputs are
// flushed, and a later batch's state only with its own commit; a crash
// replays the batches written and not committed as it replays one.
//
// Config.CommitInterval defers steps 2 and 3 (commit.go): a full batch
// whose interval has not run out leaves its state marked dirty in the
// store, and the next commit writes the changes of every batch since the
// last with the highest positions they reached, then acknowledges them.
// A batch that is not full, input that pauses for the rest of the
// interval, the end of Run and a change that works on committed state
// (key groups, checkpoints) commit at once. Outputs are flushed with each
// batch as before, so a crash replays the uncommitted batches and the
// sinks treat them as a crashed batch's.
//
// # Workers and key groups
//
// Stateless operators (map, filter, flatmap) split a batch into contiguous
// runs, one per worker, and concatenate the outputs in worker order, so
// record order is kept. Keyed operators send each record to the worker that
// owns its key group, so all records of a key go, in order, to one worker,
// which alone reads and writes that key's state. Ownership is a versioned
// table (assign.go), not arithmetic: committed with the state (store
// metadata), it survives a restart; SetWorkers changes the worker count at
// a batch boundary by moving only the groups that must move, and state
// stays in place, since every worker's session reads the same tables.
// Ownership is enforced: a guest touching a key of another worker's group
// fails the call. Each worker's records and busy time are counted, so a
// straggler shows in the status and the metrics. MoveGroups moves chosen
// groups to chosen workers the same way: a new version of the table, at a
// batch boundary, committed with the next batch.
//
// # Measurements for the control plane
//
// Measure (measure.go) returns what the control plane decides on, always
// kept: per operator its records in and out; per worker its records,
// outputs, busy time and the delay of each record it ran (from the read
// of the record's chunk to the end of the worker's run of the batch,
// summed with a count); per key group of a keyed operator the records
// that arrived for it and that its worker ran, and a space-saving sample
// of the hottest keys (every 64th record, 8 counters); per source the
// records read and its backlog (connectors.Backlogged); the commits and
// their time. The executor counts in its own fields and copies them, once
// per batch, under the status's lock, so Measure costs the batches a lock
// and a copy of what changed. Operators without a pool of workers
// (transactional, windowed, joins) are measured as one worker.
//
// SetWorkerCap is a benchmark setting: it throttles a worker of a
// stateless or keyed operator to a number of records per second, by
// sleeping after its share of each batch (counted as busy time), so that
// a worker's capacity is small and known on a small machine, or one
// worker is a straggler. A cap set for one worker stays with its id
// through MoveGroups and SetWorkers; the operator's cap (worker -1) holds
// for every worker, those added later included.
//
// # Key groups across hosts
//
// A job given Config.Groups owns only those key groups, as one host of a
// pipeline spread over several (groups.go). Its sources are
// connectors.Partitioned: each owned group is read after its own floor,
// and records of other groups never reach the operators. The floors are
// committed with the state, compactly: one position per source up to
// which every owned group is complete (what the source's Delivered said
// after a read whose records are all committed), plus an entry for each
// group whose floor is above it. ReleaseGroups and AcquireGroups move
// groups at a batch boundary with no batch in hand: the job waits for the
// batch in flight to commit, then exports the groups with their floors
// (a release, which leaves their state in the store, unread, until
// DropGroups) or imports them and commits (an acquisition), and the
// source reads the new set of groups; every other group keeps running. A read that began before such a
// change cannot vouch for the groups it did not read, so its records'
// floors are committed one by one. A record read again (after a change
// of groups, or a restart) is dropped by its group's last position.
//
// # Transactional operators
//
// A transactional operator (Operator.Txn) has no workers of its own: its
// txnop.Operator plans each batch through the guest, schedules the
// transactions on package txn's workers and hands the outcomes back for
// the guest to emit outputs. Decisions, and why:
//
//   - A job with a transactional operator batches by its punctuation:
//     batches of at most Txn.Events records, cut Txn.Interval after their
//     first record (no time bound when zero). The job's BatchSize and
//     Linger are ignored, and transactional operators with different
//     punctuations are refused, since a batch is committed as one.
//     Batches never exceed their size: the rest of a source's chunk waits
//     for the next batch.
//   - An earlier operator that makes more records than it receives could
//     hand the stage more than Events: the stage then runs the batch in
//     runs of at most Events, in order, each reading the changes of the
//     runs before it (copied, since a Result lives until the next
//     Process).
//   - Transactions read the committed tables in memory, which include
//     every earlier batch, through a state.Session that owns every key
//     group. The change set is written into the tables when the batch
//     commits, after the outputs are written (an output or a change may
//     alias a value another change overwrites; the values are copied
//     before writing), so the changes and the source positions go to
//     Pebble in one batch and a restart resumes with neither applied
//     twice. The change set is final when applied (a failed run is never
//     applied), so it is written straight into the key groups, without
//     the session's undo log, and a value equal to the current one is not
//     written at all (state.Group.Update): only the keys whose value
//     changed go to Pebble. Because changes land only at commit, a
//     transactional operator's tables are its own: New refuses a table
//     another operator uses.
//   - A run whose Process fails (a guest error or trap in plan, apply or
//     post, an access outside a declaration) leaves the state as it was
//     before it: under the stop policy the job stops without committing
//     the batch; otherwise each of its events is dead-lettered with the
//     error. Events the guest rejects in post are dead-lettered one by
//     one, and their transactions' effects stay.
//   - Per operator, the metrics count committed and aborted transactions,
//     re-executions and failed batches, sum the seconds of each phase of
//     txn.Stats' breakdown plus the guest's plan and post, and time each
//     batch (sluice_txn_*); the Status carries the same totals.
//
// # Swapping an operator's plugin
//
// Job.Swap replaces an operator's code while the job runs (swap.go), as
// one of the queued changes.
// Decisions, and why:
//
//   - The new instances are made, and configured, on the caller's
//     goroutine before anything changes: a module that will not start is
//     refused while the old one keeps running, and the executor never
//     waits for compilation or instantiation.
//   - The executor installs queued swaps at a batch boundary, before a
//     batch or while it waits for input, on all of an operator's workers
//     at once: no batch is processed partly by one version and partly by
//     another. Workers keep their state sessions, so keyed state stays in
//     place, owned by the same workers; a transactional operator's
//     txnop.Operator is replaced whole and its tables stay.
//   - The swapped-in code is on trial for Operator.RollbackBatches
//     batches. A run that fails in the trial (an error, or a record the
//     code failed on: trap, timeout, error status; not a record the guest
//     rejects on purpose) is undone (keyed writes rolled back to a
//     savepoint; transactional changes were not applied yet), the
//     previous code, kept alive for the trial, is put back and the run
//     made again. Config.OnRollback and the status say why. After the
//     trial the previous code is closed; returning to it later is a new
//     swap (the host keeps the history).
//
// # Failure policy
//
// Per operator (policy.go): Retries runs a failed record again, alone,
// before the error policy (dead-letter or stop) applies; a keyed record's
// retry runs after the rest of its batch. QuarantineAfter quarantines an
// operator whose code failed in that many consecutive batches: the batch
// is undone for that operator and held, uncommitted and unacknowledged,
// while the executor waits for a swap (sluice_operator_quarantined is 1,
// an error is logged); the new code then runs the held batch. A stop
// request during a quarantine returns from Run without committing the
// batch, which the sources deliver again on the next run.
//
// # Failures
//
// A record an operator fails on (trap, timeout, reject) goes to the
// dead-letter sink with the error, operator, plugin, plugin version, source
// and position in its headers, and the batch goes on; with the stop policy the job stops
// instead, without committing the batch, so the record is read again on the
// next run. Backpressure: the readers hand batches to the executor through a
// bounded queue, so a slow operator slows the readers, and a JetStream source
// leaves the rest in the stream.
package exec
