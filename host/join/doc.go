// Package join holds Sluice's intra-window join kernels: the eight
// algorithms of Zhang et al.'s study of intra-window joins on multicores
// (SIGMOD 2021), native Go over an operator's workers, the nested-loop
// oracle they are tested against, the adaptive choice "auto", and the
// study's workload generators and benchmark harness.
//
// A kernel joins the R and S tuples of one window at a time on equal keys
// (Tuple's Key: the key itself or a hash of a byte key, whose matches the
// caller checks) and emits Matches of Refs, the caller's indices of its
// records. Outer joins are the caller's: Matched records which Refs
// matched.
//
// # Algorithms
//
// Lazy kernels (Lazy: the whole window at once, or buffered by Add and
// joined at Close):
//
//   - npj: one bucket-chain table built from R by all workers at once (a
//     bucket's head is swapped atomically), then probed with slices of S.
//   - prj: radix partitioning of both sides on hash bits until an R
//     partition fits in cache (RadixBits, two passes above 8 bits), then a
//     join per partition; partitions are taken from a shared counter.
//   - mway, mpass: sort each worker's slice of both sides (a radix sort),
//     split the keys into one range per worker at sampled splitters, merge
//     each range's pieces of the runs (mway: one multi-way merge; mpass:
//     successive two-way merges) and merge-join them.
//
// Eager kernels (tuples given as they arrive, matches emitted as soon as
// the worker holding both has them):
//
//   - shj: symmetric hash join, a table per side per worker;
//   - pmj: progressive merge join, runs of Delta of a worker's tuples
//     sorted and joined as they fill, all runs merged at Close;
//
// each with JM (R to every worker, S to one in turn) or JB (key groups of
// Group workers: R to the group, S to one member) distribution.
//
// # Decisions, and why
//
//   - One Kernel interface (Add, Close) for all eight and auto: a join
//     stage drives every window the same way, and a lazy kernel buffers.
//     Lazy kernels also take a whole window through Join, without a copy.
//   - Any worker count. The study's MWay and MPass need a power of two
//     (bitonic merge networks); here the runs are merged per key range, so
//     any number of runs merges, and a two-way pass carries an odd run to
//     the next pass. JB's last group takes the workers left over when
//     Group does not divide their number.
//   - Sorting is an LSD radix sort on the key bytes that differ, not the
//     study's AVX sorting networks: Go has no portable SIMD, and keys of a
//     window rarely use all eight bytes.
//   - Kernels keep their buffers from window to window (tables, partition
//     and run buffers, per-worker match batches), so a steady stream of
//     windows allocates little.
//   - Match batches go to Emit per worker, concurrently, 1,024 at a time:
//     one call per match would cost more than the join.
//   - SHJ takes a worker's tuples of one call together, 32 at a time: it
//     inserts them, then probes, loading the 32 buckets' heads in one pass
//     and their first entries in another. A window's tables outgrow the
//     caches, and loads that do not depend on each other miss together,
//     where a tuple at a time waits for each miss in turn (about 2.5x the
//     tuples a second, BENCHMARKS.md). Inserts never touch the table
//     probed, so the matches are those of a tuple at a time.
//
// # Auto
//
// NewAuto (or New("auto", ...)) chooses one algorithm per window: the
// study's decision tree (Config.Rule: arrival rate, key duplication,
// skew, window size, objective) on the features of the window before it
// (Measure: sizes, rates, duplication and skew from a sample of keys),
// corrected by what it measured: a cost per algorithm and class of
// windows, the cheaper algorithm winning by a margin, and an exploration
// window every ExploreEvery. Decisions returns its recent choices with
// their features and costs. docs/joins.md gives the thresholds.
package join
