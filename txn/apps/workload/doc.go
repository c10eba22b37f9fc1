// Package workload generates the five benchmark workloads of MorphStream's
// evaluation as streams of events and initial table contents, for Sluice's
// transactional operators: Streaming Ledger ("sl"), GrepSum ("gs"),
// NonGrepSum ("ngs"), Toll Processing ("tp") and Online Bidding ("ob").
//
// It owns the part that the Wasm operators and the native Go ones share:
// what the events are and how they are drawn. The events' encodings, the
// state values and what an operator must do with each event live in one
// light package per application, which a Wasm guest imports without the
// host: txn/apps/ledger/event, txn/apps/grepsum/event,
// txn/apps/nongrepsum/event, txn/apps/toll/event and
// txn/apps/bidding/event. The connectors/generator source serves these
// streams to a pipeline (its "txn" mode).
//
// # Determinism
//
// Event i is a pure function of the knobs and i: its random numbers come
// from a PCG seeded with the seed and i (both scrambled by SplitMix64), not
// from a generator that advances across events. So a source resumes exactly
// at any position, two runs produce the same events, and workers may draw
// disjoint ranges of events concurrently. Keys are drawn by Vose's alias
// method from a table built once by New (zipf.Alias): a draw costs one
// multiplication and one lookup (about 6 ns; a CDF's binary search over
// 115,200 keys costs about 125 ns on this machine). Initial is
// deterministic too: it depends on the knobs only.
//
// # Keys and records
//
// Every table's keys are the integers [0, Keys), held in the state as
// 8-digit zero-padded decimal strings ("00000042"). The record of an event
// (App.Event) has as key the state key the event is about (SL: the
// account debited or credited; GS and NGS: the first operation's key; TP:
// the segment; OB: the first item), usable for partitioning and logs, and as
// value the encoded event.
//
// # Applications
//
// Streaming Ledger: tables accounts and book_entries, every entry at
// 10,000,000,000 (ledger.InitialBalance). DepositRatio of the events are
// deposits of 10 to an account and a book entry; the others transfer 100
// from an account and a book entry to others, conditioned on both source
// balances; AbortRatio of the transfers carry an amount no balance reaches
// (MorphStream's generator uses 100,000,000), so they abort, and they
// alone: no balance runs out within 10^8 events, however skewed the keys,
// so the abort ratio is the one asked for (MorphStream starts balances at
// 1,000,000, which a hot key runs out of).
//
// GrepSum: table micro, key k starting at k. An event is TxnLength
// operations; each writes a key drawn from the Zipf distribution and, for
// MultiReadRatio of them, reads Reads keys drawn from it too (the others
// read none); the new value is the old one plus the values read plus one.
// AbortRatio of the events are flagged to abort. Acyclic workloads never
// write key 0 and fold every read below the written key (modulo it), so no
// parametric dependency goes from a key to a lower one and the per-key
// chains form no cycle.
//
// NonGrepSum: GrepSum plus NonDetRatio of the operations being
// non-deterministic: the written key is a pointer, and the key actually
// written is the pointer's value modulo Keys, known only when the
// operation runs (txn/apps/nongrepsum/event documents the exact function).
// MorphStream draws the flag per event; here it is per operation, which is
// the same thing at its default txn length of 1.
//
// Toll Processing: tables segment_speed and segment_count, zeroed. An
// event is a position report on a Zipf-drawn segment, by one of 128
// vehicles, at a speed in [60, 180]; AbortRatio of them report 200, an
// invalid speed that aborts. The operator adds the speed to the segment's
// sum and count and the vehicle to its bitmap of vehicles seen
// (txn/apps/toll/event explains the bounded distinct count).
//
// Online Bidding: table goods, every item with 100 units at a price drawn
// in [1, 100]. BuyRatio of the events are buys of one unit of each of
// TxnLength Zipf-drawn items at a bid of 100 (AbortRatio of them bid 0 and
// abort); the others are alerts (new prices) and top-ups (1 to 20 units),
// half each.
//
// # Defaults and their sources
//
// Defaults returns MorphStream's settings; the sources are branches of
// github.com/intellistream/MorphStream.
//
//   - sl: 115,200 keys, 25% deposits, skew 0.25: the Streaming Ledger
//     comparison of the SIGMOD'23 paper, as the artifact's plotting script
//     (SIGMOD23_Reproduce: scripts/draw/PerformanceEvaluation/
//     performance_comparison.py) records it; abort ratio 0 (Runner.java).
//     The artifact's run script (morphstream_autorun.sh) uses 122,880 keys
//     and skew 0 instead.
//   - gs: 12,288 keys, txn length 1, 1 read per operation, all operations
//     multi-read, skew 0, abort ratio 0, acyclic: the GrepSum runs of the
//     SIGMOD'23 artifact (scripts/SchedulingDecisions/*.sh: NUM_ITEMS=12288,
//     NUM_ACCESS=2 counting the written key, multiple_ratio=100,
//     key_skewness=0, isCyclic=0; txn length from Runner.java).
//   - ngs: 122,880 keys, txn length 1, 4 reads, all multi-read, skew 0,
//     cyclic, non-deterministic ratio 0.95%: the NonGrepSum script of the
//     extended version (main: scripts/VLDBJ/non-deterministic-state-access.sh,
//     nondeterministic_ratio=95 in units of 1/10,000, isCyclic=1) and the
//     Runner of its branch (NUM_ACCESS=5).
//   - tp: 495,120 segments, skew 0.2, abort ratio 0: SIGMOD23_Reproduce:
//     scripts/22.11.18/runTP.sh and MultipleSchedulingStrategies.sh.
//   - ob: 100,000 items, skew 0.2, 25% buys (Runner.java defaults), 20
//     items per event (OnlineBidingSystemConstants: 20 items per alert and
//     per top-up).
//
// Busy work defaults to 0 everywhere, as in Runner.java (the scripts use
// 8,000 to 10,000 ns to stand for costly functions; set busy-ns for that).
// The punctuation interval belongs to the operator, not to the workload.
package workload
