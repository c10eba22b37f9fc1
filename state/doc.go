// Package state owns Sluice's committed keyed state: named tables split
// into key groups, held in memory for the hot path and persisted to an
// embedded Pebble store together with the positions of the sources whose
// records produced them.
//
// # Model
//
// A Store opens one data directory. Its tables are created by name on first
// use; each table has one Group per key group. A state key is a Key:
// (routing key, namespace, user key). The routing key alone picks the key
// group, KeyGroup(route, n), so that everything kept for one routing key
// (its plain value, window contents, join buffers, timers) lives in one
// key group and moves with it; the namespace separates those uses, and the
// user key orders entries within a namespace. A plain key k, the one
// Session.Get, Put and Delete take, is Key{Route: k}. The number of key groups n is chosen when the
// directory is created (DefaultKeyGroups) and is recorded there: it can
// never change, because both the persisted layout and the assignment of
// keys to workers depend on it, so Open refuses a different count.
//
// Key groups are the unit of ownership: the executor gives each key group
// to exactly one worker at a time, so a Group is read and written without
// locks. Between batches the executor reaches a barrier, calls Prepare (or
// Commit), and resets its Sessions. A Session is a worker's handle: it routes a key to
// its group, enforces the worker's ownership (ErrNotOwned, which the state
// host functions surface to the guest as a trap), and keeps an undo log so
// that the writes since a savepoint can be taken back exactly, dirty marks
// included (a failed record, an aborted operation). The undo log reuses an
// arena for old values, so steady-state processing does not allocate.
//
// Session.Scan visits the entries of one routing key (and namespace) in
// order, committed or not, at a cost proportional to what it visits: plain
// keys sit in a hash index per group, namespaced ones in a hash map and a
// B-tree per group ordered by their encoding.
//
// Timers are state too. Each key group has a timer index, ordered by (time
// domain, time, routing key, namespace, name): Session.SetTimer and
// DeleteTimer register and remove them, Timers and PopTimers visit or take
// the due ones of a key group up to a time. Timer writes go through the
// undo log, and are committed, restored, exported and dropped with their
// key group.
//
// This package provides the committed, single-version tables. The
// transactional scheduler keeps its multi-versioned values on top of them
// and writes the winning versions through a Session.
//
// # Memory
//
// Every committed entry is in memory from Open to Close, like Flink's heap
// state backend: state must fit in memory, and Open reads the whole store.
// Pebble is the durable copy and the source for dumps; it is not read on
// the hot path. A Group stores its entries in one slice, and finds a plain
// key's slot in an open-addressing index of words that hold the high bits
// of the key's XXH64 hash (computed once for its key group and its slot)
// and its slot, so a large table is a few objects per group for the
// garbage collector rather than one per key, and the index has no pointers
// for it to scan. Beyond the caches a read costs its cache misses (the
// index word, the entry, the key's bytes): Session.GetAll and
// Table.WriteAll, for the keys of a whole batch, take them a run at a time
// so that the misses of a run overlap. A value's buffer is reused
// when it is overwritten (hence the rule that a value returned by Get is
// valid until the next write of its key). Entries written or deleted since
// the last Commit are marked dirty and listed per group, so Commit costs in
// proportion to what changed, not to the size of the state.
//
// # Durability and crash consistency
//
// A commit has two steps. Prepare, at the barrier, copies every dirty entry
// (a value, or a deletion) and timer into a buffer, and the ids of new
// tables, the range deletions of dropped or imported key groups and the
// metadata set with SetMeta into a Pebble batch, clears the dirty marks and
// ends the sessions' undo epoch. The PendingCommit it returns then sorts
// the copied entries into that batch and writes it with the source
// positions, on any goroutine, while the next batch is processed: it never
// reads the tables, and the barrier pays only for the copy. Pending commits are written in
// Prepare order (a later one waits for the earlier ones). A failed write
// fails the store, since its changes are no longer marked dirty. Commit is
// Prepare followed by the write. Pebble applies a
// batch atomically and replays its write-ahead log at open, so after a
// crash at any point Open yields the state and positions of exactly one
// Commit, never a mix; memory is written to disk only by Commit, so
// uncommitted writes simply vanish. The executor acknowledges input to
// JetStream only after Commit returns and resumes from Positions after a
// restart.
//
// With Options.Sync, Commit fsyncs the log: a Commit survives a machine
// crash or power loss. Without it, Commit still hands the log record to the
// kernel with write(2) before returning, skipping only the fsync of the
// log (pebble.go explains how): a Commit survives the crash of the process, which is what
// acknowledging input after Commit requires, but a machine crash may lose
// the last Commits (Open then yields an earlier Commit, still consistent,
// and the unacknowledged input is replayed, but input acknowledged after a
// lost Commit is gone). Pebble's plain NoSync mode is not used because it
// would lose recent Commits even when only the process dies.
//
// # Disk failures
//
// When Pebble cannot write to the data directory (a full or read-only
// disk, an I/O error), the store fails (Store.Err, ErrFailed): the Commit
// that finds it returns the error, naming the directory and the cause, and
// so do all later Commits. Pebble reports a failed write of its log through
// Logger.Fatalf, or panics, on the goroutine of the write; the store turns
// either into the failure (health.go). Flushes and compactions fail in the
// background, where Pebble retries them at once and for ever: the store
// spaces the retries out and fails after a few seconds of failures in a row,
// which also bounds Open on a full disk (Pebble's Open waits for a flush of
// the replayed log). Store.Failed lets a host stop on a background failure
// while no Commit runs. What was committed is intact: Open recovers it from
// the log once the disk has room. The failed Pebble instance is abandoned,
// its goroutines parked, so the process should exit.
//
// # Pebble key layout
//
// All integers are big-endian, so Pebble's byte order is numeric order.
//
//	0x00 "layout"            -> u32 layout version (2)
//	0x00 "key-groups"        -> u32 key group count
//	0x00 "table/" name       -> u32 table id (from 1, never reused)
//	0x00 "meta/" name        -> metadata value (Store.SetMeta)
//	0x00 "gen/" u16 kg       -> u64 generation of key group kg (absent: 0)
//	0x01 source name         -> u64 last committed position of the source
//	0x02 u32 table, u16 kg, key encoding -> value
//	0x03 u16 kg, u8 domain, u64 time^(1<<63), key encoding -> (empty): a timer
//
// The key encoding of (route, namespace, user) escapes each zero byte of
// the route and of the namespace as 0x00 0xff, ends each with 0x00 0x01,
// and appends the user key as is. Byte order of encodings is (route,
// namespace, user) order, and the keys of one route, or of one route and
// namespace, form one contiguous range. A timer's encoding is the key
// encoding of (route, namespace, name) after its domain and time.
//
// Layout 1 stored a state key as is after the table and key group, and had
// no timers or metadata. Open migrates a directory of layout 1 in one
// atomic batch (every state key rewritten, the count logged); OpenReadOnly
// cannot, and refuses such a directory with ErrLayout.
//
// Metadata is written when the directory is created (layout, key groups),
// by the commit that first writes to a table (its id), and by every commit
// that changes a key group (its generation). Table ids, not
// names, prefix state keys, so keys stay short and a table could be renamed
// by rewriting one metadata key.
//
// A key group's entries of one table form one contiguous key range,
// 0x02|table|kg, and its timers another, 0x03|kg. That is what migration
// needs: ExportKeyGroup scans those ranges from a snapshot into a
// versioned, checksummed byte format (export.go) naming tables by name;
// ImportKeyGroup replaces one Group of each table, and the timers, in
// memory, and DropKeyGroup empties them; the next commit writes a range
// deletion per table for the group, then the imported entries, without
// touching other groups. Export takes committed state only: it refuses a
// key group with uncommitted changes (ErrUncommitted).
//
// Each key group has a generation, the number of commits that changed it
// (Store.Generation): a commit bumps it for every group in which it finds
// a written entry or timer, an import or a drop, and writes it in the same
// batch. A caller that keeps Generations can ask which groups changed
// since (ChangedSince) and ship only those: incremental checkpoints. The
// generations were added within layout 2; a directory written before has
// none, which reads as 0, and a build without them leaves them as they
// were, so after such a build has committed to a directory generations no
// longer tell every change (run that build on a copy).
//
// Store.Scan and Reader.Scan return a table's plain keys in key order by
// merging the per-group ranges, ScanKeys every key; Group.Range walks the
// in-memory plain entries, committed or not, in no order.
//
// Dumps (Store.Read, Reader.Read, `sluice state dump`, GET /api/v1/state)
// give an entry's routing key as its key, exactly as before namespaces; a
// namespaced entry also carries its namespace and user key (Entry.Namespace,
// Entry.User; "namespace" and "user" in JSON). Query.Prefix selects on the
// routing key.
//
// # Read-only access
//
// OpenReadOnly opens a directory for `sluice state dump` without loading it
// into memory. Pebble's directory lock excludes every other opener, so it
// fails with ErrLocked while a pipeline runs on the directory; on a
// read-only file system, where the lock file cannot be created, it reads
// without the lock. A running pipeline's committed state is read through
// its Store: Store.Read returns it page by page (a table, a key prefix, a
// key group; a limit and a cursor) from a Pebble snapshot, in storage
// order (table id, key group, key), never from the tables in memory.
package state
