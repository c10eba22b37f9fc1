// Package txn is Sluice's transactional scheduler core: MorphStream's task
// precedence graph (TPG), its scheduling strategies, and the baselines they
// are measured against. It schedules operations whose functions it is given
// (Apply) over a read-only view of committed state (Store) and returns what
// to commit; it does no I/O and knows nothing of WebAssembly, so a Wasm guest
// and native Go run on the same scheduler (the etcd raft discipline: the core
// is given functions and returns what the caller must do).
//
// # Model
//
// A batch is a sequence of transactions (Txn) in timestamp order: a
// transaction's index is its timestamp, an operation's index within its
// transaction orders it after the earlier ones. A deterministic Op writes
// its own key with the Effect its function returns, reading its key's
// previous value and its declared Reads; a non-deterministic Op reads and
// writes keys of one table chosen at run time through Access. Every access
// goes through Access, so txn knows each operation's real read and write set;
// an access outside the declaration fails the operation with ErrUndeclared.
// An Effect with Abort aborts the transaction: its versions disappear and
// whatever read them is re-executed, cascading as far as it goes.
//
// # Guarantee
//
// For every strategy, Run's result equals the serial executor's (strategy
// "serial", the oracle): the change set, each transaction's outcome, and the
// values each operation read (Result.Observed). Operations after the one that
// aborted their transaction are reported as not executed, as the serial
// executor never runs them. An Apply error fails the batch with the *OpError
// of the first operation, in timestamp order, that the serial executor would
// reach; speculative executions that hit an error are not reported. The
// property tests check all of this on random batches for every strategy.
//
// # TPG
//
// One vertex per operation. Temporal edges join consecutive writers of a
// key (its operation chain); parametric edges join the latest earlier writer
// of a read key to the reader (none when the key is only committed state);
// logical edges (consecutive operations of a transaction) are counted for a
// decision model but impose no order, because abort atomicity is carried by
// a per-transaction status, not by the graph. A non-deterministic operation
// on table T is a barrier scoped to T: it is ordered after every earlier and
// before every later operation touching T (writing or reading a key of T,
// including keys that have no chain yet); other tables are not ordered
// against it. Analyze returns the counts of each edge kind and the cycles
// between chains (strongly connected components of the chain graph joined by
// parametric edges), which make coarse units hard.
//
// # State
//
// Versions are per key: each deterministic writer holds its own version (one
// writer, so no lock), linked to the previous writer of its key; versions of
// non-deterministic writes sit in a sorted per-key list that only a barrier
// operation changes. A read at timestamp t sees the latest version before t
// whose transaction is its own or not aborted, else the committed value.
// Rolling back a transaction is marking it aborted: its versions stay in
// place but become invisible; a re-executed non-deterministic operation first
// removes the versions it published.
//
// # Windowed reads
//
// An operation with Op.Window = W is a windowed read: for each key it
// reads, it also gets every version written by the transactions in
// [t-W, t), t its own transaction, oldest first, one per writing
// transaction that is not aborted (WindowReader.Window). The window is
// bounded on both sides: the reader's own transaction and later ones are
// never in it. It needs no edge of its own: the parametric edge from the
// key's latest earlier writer orders the read after it, and the temporal
// edges order that writer after every earlier one. Aborts remove versions
// from windows as from reads (eager re-checks compare windows too; lazy
// passes recompute them). Versions of earlier batches come from a
// WindowStore: History keeps the last W transactions' versions in memory
// and drops older ones as batches are committed to it (Result.Versions).
//
// # Strategies
//
// A TPG strategy is exploration x unit x abort handling, named like
// "ns-chain-lazy":
//
//   - bfs: level by level with a barrier between levels. Good when levels are
//     wide (low skew, few dependencies); barriers cost on deep graphs.
//   - dfs: units claimed in level order without barriers; a worker waits for
//     the parents of its unit. No barrier cost, but waits spin (yielding).
//   - ns: a unit becomes ready when its last parent signals; the worker that
//     made it ready runs it (depth first, no queue round trip) unless another
//     worker is idle, which then gets part of that worker's ready units. The
//     general choice, best on skewed and irregular graphs.
//   - op: one operation per unit: most parallelism, most scheduling overhead.
//   - chain: one per-key chain per unit, run in order by one worker, cut at
//     the non-deterministic barriers of its table. Less overhead when chains
//     are long and cross-chain dependencies few. Chain units in a cycle (a
//     strongly connected component of the unit graph) are split into
//     operation units; the operation graph is acyclic, so no deadlock.
//   - eager: an abort is published the moment it happens (later readers skip
//     the aborted versions); then passes re-check every operation cheaply and
//     re-execute only those whose inputs changed, until one pass executes
//     nothing. Good when aborts are frequent or functions are costly.
//   - lazy: MorphStream's: aborts are applied at the end of a pass, then the
//     batch is rolled back to its start and re-executed with the aborted
//     transactions hidden; this repeats until no new abort appears (MorphStream
//     does one pass; correctness under cascades needs the fixed point, reached
//     in at most one pass per transaction and usually two). Good when aborts
//     are rare: no bookkeeping in the common case.
//
// Both abort modes converge to the serial result by induction on timestamps:
// a transaction's outcome depends only on earlier ones, so each pass fixes at
// least the next transaction for good.
//
// Baselines: "serial" (one worker, timestamp order: the oracle); "tstream"
// (TStream-like: non-structured, per-key chains never cut at barriers, lazy);
// "sstore" (S-Store-like: keys hash to partitions, a transaction takes its
// partitions' locks in timestamp order, all of them if it has a
// non-deterministic operation, and workers run whole transactions).
//
// # Workers and cost accounting
//
// A Scheduler owns a fixed pool of workers started by New and stopped by
// Close; each Run dispatches passes to them. Stats break a batch's time into
// plan, explore, useful (inside Apply, sampled 1 call in 8), abort (every
// pass after the first) and finish, measured per phase, pass and worker
// rather than per operation, cheap enough to leave on.
//
// # Performance
//
// The scheduler is meant to leave the cores to Apply (a Wasm call, usually),
// so its own work is kept off the single-threaded path and off shared cache
// lines:
//
//   - The plan of a large batch is built on the workers: vertices and key
//     hashes by transaction range; key interning, committed-value loading and
//     chain building by key partition (a key hashes to one worker, so no
//     lock), in an open-addressing table kept from batch to batch; only
//     the edge list is built on one thread, streaming through arrays.
//   - Memory is kept from batch to batch (a Scheduler's plan buffer), so a
//     batch allocates little besides its Result; operations record what they
//     read straight into the Result.
//   - Work a strategy does not use is skipped: levels only for bfs and dfs,
//     cycles between chains only for chain units, barrier bookkeeping only for
//     tables a non-deterministic operation is scoped to.
//   - Workers claim units in chunks, count completions locally, and keep the
//     units they make ready on their own stacks, so that a unit costs no
//     shared atomic beyond its children's counters; assembling the Result is
//     split over the workers too.
package txn
