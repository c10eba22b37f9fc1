// Package generator is a source of synthetic records for examples, tests
// and benchmarks, in four modes:
//
//   - "words": sentences of 3 to 12 words drawn from a built-in vocabulary
//     of 200 common English words with a Zipf-like skew (word i has weight
//     1/(i+1)), the input of a word count;
//   - "sequence": the value is the decimal position;
//   - "bytes": a fixed-size payload of pseudo-random bytes, for measuring
//     throughput at a given record size;
//   - "txn": the events of one of MorphStream's transactional benchmarks
//     (package txn/apps/workload), the input of a transactional operator.
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
// The record at position p is the workload's event p-1 (workload.App.Event),
// a pure function of the knobs and p, so resuming stays exact. Its
// configuration keys:
//
//   - app: the application, sl (Streaming Ledger), gs (GrepSum), ngs
//     (NonGrepSum), tp (Toll Processing) or ob (Online Bidding);
//   - knobs: the workload's knobs by name, each a string, over the
//     application's MorphStream defaults (workload.Defaults): keys, skew,
//     abort-ratio, txn-length, multi-read-ratio, reads, deposit-ratio,
//     buy-ratio, busy-ns, nondet-ratio, acyclic, seed (workload.KnobNames;
//     ratios as fractions or percentages, "0.25" or "25%");
//   - keys and seed: the knobs of those names, when set (a knob given both
//     ways must agree);
//   - count, rate, start and step as in the other modes; size is unused.
//
// A program may instead pass a workload.App it built (Config.Workload), to
// share it with whatever loads the workload's initial tables
// (workload.App.Initial); Source.Workload returns the one in use.
//
// Rate limits the pace to a number of records per second, measured from
// Open; Read sleeps on a timer until the next record is due, never spins.
// Count bounds the stream: after position Count, Read returns io.EOF.
package generator
