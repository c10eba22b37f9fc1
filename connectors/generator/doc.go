// Package generator is a source of synthetic records for examples, tests
// and benchmarks, in four modes:
//
//   - "words": sentences of 3 to 12 words drawn from a built-in vocabulary
//     of 200 common English words with a Zipf-like skew (word i has weight
//     1/(i+1)), the input of a word count;
//   - "sequence": the value is the decimal position;
//   - "bytes": a fixed-size payload of pseudo-random bytes, for measuring
//     throughput at a given record size;
//   - "txn": the events of a transactional workload the caller gives, such
//     as one of MorphStream's benchmarks (package txn/apps/workload), the
//     input of a transactional operator.
//
// Every record is a pure function of the seed and its position: the
// generator draws from a PCG generator seeded with (Seed, position), and the
// event time is Start + (position-1) * Step. A generator opened after
// position p therefore returns exactly the records that an uninterrupted run
// returns after p, which is what resumable means, and two runs with the
// same configuration produce the same stream. Nothing depends on the wall
// clock but the pace.
//
// Keys: with Keys > 0 the key of every record is the decimal of
// position mod Keys; with Keys = 0 records have no key. Txn mode is the
// exception: its records carry the keys the workload gives them.
//
// # Txn mode
//
// The record at position p is the workload's event p-1 (Events.Event), a
// pure function of the workload's configuration and p, so resuming stays
// exact. The caller builds the workload (Config.Workload): in a pipeline,
// the host builds one of MorphStream's benchmark workloads (package
// txn/apps/workload) from the source's app and knobs, and shares it with
// whatever loads the workload's initial tables; Source.Workload returns the
// one in use. Keys, Seed and Size are unused.
//
// Rate limits the pace to a number of records per second, measured from
// Open; Read sleeps on a timer until the next record is due, never spins.
// With a Rate, Backlog reports the records due and not read yet (a reader
// that falls behind the pace). Count bounds the stream: after position
// Count, Read returns io.EOF.
package generator
