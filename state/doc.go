// Package state owns Sluice's committed keyed state: named tables split
// into key groups, held in memory for the hot path and persisted to an
// embedded Pebble store together with the positions of the sources whose
// records produced them.
//
// # Model
//
// A Store opens one data directory. Its tables are created by name on first
// use; each table has one Group per key group, and a key belongs to the key
// group KeyGroup(key, n). The number of key groups n is chosen when the
// directory is created (DefaultKeyGroups) and is recorded there: it can
// never change, because both the persisted layout and the assignment of
// keys to workers depend on it, so Open refuses a different count.
//
// Key groups are the unit of ownership: the executor gives each key group
// to exactly one worker at a time, so a Group is read and written without
// locks. Between batches the executor reaches a barrier, calls Commit, and
// resets its Sessions. A Session is a worker's handle: it routes a key to
// its group, enforces the worker's ownership (ErrNotOwned, which the state
// host functions surface to the guest as a trap), and keeps an undo log so
// that the writes since a savepoint can be taken back exactly, dirty marks
// included (a failed record, an aborted operation). The undo log reuses an
// arena for old values, so steady-state processing does not allocate.
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
// the hot path. A Group stores its entries in one slice indexed through a
// map from key to slot, so a large table is a few objects per group for the
// garbage collector rather than one per key, and a value's buffer is reused
// when it is overwritten (hence the rule that a value returned by Get is
// valid until the next write of its key). Entries written or deleted since
// the last Commit are marked dirty and listed per group, so Commit costs in
// proportion to what changed, not to the size of the state.
//
// # Durability and crash consistency
//
// Commit writes every dirty entry (a value, or a deletion), the ids of new
// tables, and the source positions in one Pebble batch. Pebble applies a
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
//	0x00 "layout"            -> u32 layout version (1)
//	0x00 "key-groups"        -> u32 key group count
//	0x00 "table/" name       -> u32 table id (from 1, never reused)
//	0x01 source name         -> u64 last committed position of the source
//	0x02 u32 table, u16 kg, key -> value
//
// Metadata is written when the directory is created (layout, key groups)
// and by the Commit that first writes to a table (its id). Table ids, not
// names, prefix state keys, so keys stay short and a table could be renamed
// by rewriting one metadata key.
//
// A key group's entries of one table form one contiguous key range,
// 0x02|table|kg. That is what migration needs: exporting a key group is a
// range scan, importing one is a batch of writes into an empty range (or an
// ingested sstable), and dropping one after it moved is a range deletion,
// all without touching other groups. Export and import are not written yet;
// in memory they map to replacing one Group of each table.
//
// Store.Scan and Reader.Scan return a table in key order by merging the
// per-group ranges; Group.Range walks the in-memory entries, committed or
// not, in no order.
//
// # Read-only access
//
// OpenReadOnly opens a directory for `sluice state dump` without loading it
// into memory. Pebble's directory lock excludes every other opener, so it
// fails with ErrLocked while a pipeline runs on the directory.
package state
