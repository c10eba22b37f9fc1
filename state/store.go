package state

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure Open. The zero value is usable: it adopts the key group
// count of an existing data directory (DefaultKeyGroups for a new one),
// survives process crashes but not machine crashes, and logs to
// slog.Default().
type Options struct {
	// KeyGroups is the number of key groups, 1 to MaxKeyGroups. It is
	// recorded when the data directory is created and can never change:
	// Open refuses a different non-zero count. Zero adopts the recorded
	// count, or DefaultKeyGroups for a new directory.
	KeyGroups int
	// Sync makes each Commit fsync the write-ahead log, so that committed
	// state survives a machine crash or power loss. Without it a Commit
	// survives the crash of the process only. See doc.go.
	Sync bool
	// Logger receives the store's and Pebble's log lines; nil means
	// slog.Default().
	Logger *slog.Logger
	// MemTableSize is the size of Pebble's memtable in bytes, from
	// MinMemTableSize to MaxMemTableSize; zero means DefaultMemTableSize.
	// Pebble holds up to three memtables in memory, and its write-ahead
	// log takes up to about four times this size on disk, six at worst
	// (see DefaultMemTableSize). A larger memtable absorbs more updates of the
	// same keys before they reach disk.
	MemTableSize int

	// fs replaces the operating system's file system (tests inject
	// faults with it).
	fs vfs.FS
}

// DefaultOptions returns Options with KeyGroups set to DefaultKeyGroups and
// Sync on.
func DefaultOptions() Options {
	return Options{KeyGroups: DefaultKeyGroups, Sync: true}
}

// Store holds keyed state tables in memory and persists them to a Pebble
// store in one data directory, together with the positions of the sources
// that produced them.
//
// Every committed entry is in memory from Open to Close: state must fit in
// memory (like Flink's heap state backend). Pebble is the durable copy, read
// at Open and by Scan, and written only by Commit.
//
// Concurrency: Table, Tables, Positions, Stats, Scan and Commit are safe
// for concurrent use with each other. Writers (Sessions, Groups) need no
// lock as long as each key group has one writer at a time, and Commit and
// Stats must not run while a writer runs: the executor calls them at the
// barrier between batches.
type Store struct {
	dir    string
	db     *pebble.DB
	lock   *pebble.Lock
	health *health
	log    *slog.Logger
	groups int

	// commits counts successful Commits. Sessions compare it to their own
	// count to notice a Commit they were not reset after. Written by Commit
	// only, read by sessions across the executor's barrier.
	commits uint64

	mu        sync.Mutex
	closed    bool
	tables    []*Table // in id order
	byName    map[string]*Table
	nextID    uint32
	positions map[string]uint64
	last      CommitStats
	total     CommitStats
	keyBuf    []byte
}

// Open opens the data directory dir, creating it and a new store in it if
// needed, and loads every committed entry into memory.
//
// It fails with an error matching ErrLocked if another Store or Reader has
// the directory open, in this process or another; with ErrKeyGroupMismatch
// if the directory was created with a key group count other than a
// non-zero opts.KeyGroups; with ErrCorrupt if it holds data Sluice cannot
// read; with ErrFailed if Pebble cannot write to the directory (a full or
// read-only disk: Open gives up after a few seconds of failed retries; see
// Store.Err for what is left behind).
func Open(dir string, opts Options) (*Store, error) {
	if opts.KeyGroups < 0 || opts.KeyGroups > MaxKeyGroups {
		return nil, fmt.Errorf("state: open %s: key group count %d out of range 1..%d", dir, opts.KeyGroups, MaxKeyGroups)
	}
	if m := opts.MemTableSize; m != 0 && (m < MinMemTableSize || m > MaxMemTableSize) {
		return nil, fmt.Errorf("state: open %s: memtable size %d out of range %d..%d", dir, m, MinMemTableSize, MaxMemTableSize)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state: create data directory: %w", err)
	}
	h := newHealth(dir, logger)
	type result struct {
		s   *Store
		err error
	}
	// Pebble's Open waits for a flush of the replayed write-ahead log,
	// which on a full disk fails for ever: wait for the store's failure
	// too. A stuck Open goroutine is left parked (see health).
	done := make(chan result, 1)
	go func() {
		s, err := open(dir, opts, logger, h)
		if err == nil && h.Err() != nil {
			// Failed in the background while loading; Open has returned.
			_ = s.Close()
			s, err = nil, h.Err()
		}
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-h.failed:
		select {
		case r := <-done:
			if r.s != nil {
				_ = r.s.Close()
			}
		default:
		}
		return nil, h.Err()
	}
}

// open is Open's work, on a goroutine of its own.
func open(dir string, opts Options, logger *slog.Logger, h *health) (_ *Store, err error) {
	start := time.Now()
	db, lock, err := openPebble(dir, pebbleConfig{
		log: logger, health: h, sync: opts.Sync, memTable: opts.MemTableSize, fs: opts.fs,
	})
	if err != nil {
		return nil, err
	}
	s := &Store{
		dir:    dir,
		db:     db,
		lock:   lock,
		health: h,
		log:    logger.With("component", "state", "dir", dir),
		byName: map[string]*Table{},
		nextID: 1,
	}
	entries, err := s.load(opts.KeyGroups)
	if err != nil {
		_ = s.release()
		return nil, err
	}
	s.log.Info("state store opened", "key_groups", s.groups, "tables", len(s.tables),
		"entries", entries, "sync", opts.Sync, "duration", time.Since(start))
	return s, nil
}

// load reads metadata, creating it for a new store, and every committed
// entry. It returns the number of entries loaded.
func (s *Store) load(want int) (_ int, err error) {
	defer s.health.recoverFatal(&err, true)
	m, found, err := readMeta(s.db, s.dir)
	if err != nil {
		return 0, err
	}
	if !found {
		if err := s.create(want); err != nil {
			return 0, err
		}
		return 0, nil
	}
	if want != 0 && want != m.groups {
		return 0, newError(ErrKeyGroupMismatch, nil,
			"state: data directory %s was created with %d key groups; cannot open it with %d", s.dir, m.groups, want)
	}
	s.groups = m.groups
	s.positions = m.positions
	byID := make(map[uint32]*Table, len(m.tables))
	for name, id := range m.tables {
		t := newTable(s, name, id, s.groups)
		t.persisted = true
		s.byName[name] = t
		byID[id] = t
		s.nextID = max(s.nextID, id+1)
	}
	s.tables = slices.SortedFunc(maps.Values(s.byName), func(a, b *Table) int { return cmp.Compare(a.id, b.id) })

	var alloc slab
	entries := 0
	lower := []byte{prefixState}
	err = forEach(s.db, lower, prefixEnd(lower), func(k, v []byte) error {
		id, kg, key, err := parseStateKey(k)
		if err != nil {
			return err
		}
		t := byID[id]
		if t == nil {
			return fmt.Errorf("state key %x: no table has id %d", k, id)
		}
		if kg >= s.groups {
			return fmt.Errorf("state key %x of table %q: key group %d out of range (%d groups)", k, t.name, kg, s.groups)
		}
		if want := KeyGroup(key, s.groups); kg != want {
			return fmt.Errorf("state key %x of table %q: stored in key group %d, belongs to %d", k, t.name, kg, want)
		}
		t.groups[kg].load(alloc.str(key), alloc.copy(v))
		entries++
		return nil
	})
	if err != nil {
		return 0, newError(ErrCorrupt, err, "state: load %s", s.dir)
	}
	return entries, nil
}

// create initialises the metadata of a new store, after checking that the
// directory holds nothing else.
func (s *Store) create(groups int) error {
	err := forEach(s.db, nil, nil, func(k, _ []byte) error {
		return fmt.Errorf("found key %x but no layout record", k)
	})
	if err != nil {
		return newError(ErrCorrupt, err, "state: data directory %s holds a Pebble store that Sluice did not write", s.dir)
	}
	if groups == 0 {
		groups = DefaultKeyGroups
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(metaLayout, encodeU32(layoutVersion), nil)
	_ = b.Set(metaKeyGroups, encodeU32(uint32(groups)), nil)
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return fmt.Errorf("state: initialise %s: %w", s.dir, err)
	}
	s.groups = groups
	s.positions = map[string]uint64{}
	return nil
}

// Dir returns the data directory.
func (s *Store) Dir() string { return s.dir }

// KeyGroups returns the number of key groups, fixed for the data directory.
func (s *Store) KeyGroups() int { return s.groups }

// Table returns the table called name, creating it empty on first use. A
// new table's id is recorded by the next Commit, with its first entries.
func (s *Store) Table(name string) *Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.byName[name]; t != nil {
		return t
	}
	t := newTable(s, name, s.nextID, s.groups)
	s.nextID++
	s.byName[name] = t
	s.tables = append(s.tables, t)
	return t
}

// Tables returns the names of all tables, committed or not, sorted.
func (s *Store) Tables() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.byName))
}

// Positions returns a copy of the committed source positions: after Open,
// those of the last Commit before the data directory was closed or the
// process crashed.
func (s *Store) Positions() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.positions)
}

// Commit makes durable, in one atomic Pebble batch, every entry written or
// deleted since the last Commit, in every table and key group, the ids of
// new tables, and positions (source name -> last position whose effects
// the state includes). Sources not in positions keep their last committed
// position. The batch is fsynced when Options.Sync is set; in any case
// Commit returns after the batch is in the operating system's hands.
//
// After a crash at any point, Open finds the state and positions of one
// Commit, never a mix. If Commit fails, memory is unchanged (entries stay
// dirty) and the Commit can be retried.
//
// Commit must not run while any Session or Group is writing; sessions
// should be Reset afterwards.
func (s *Store) Commit(positions map[string]uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return newError(ErrClosed, nil, "state: commit to %s", s.dir)
	}
	if err := s.health.Err(); err != nil {
		return err
	}
	start := time.Now()
	b := s.db.NewBatch()
	// Batch writes fail only when the batch outgrows Pebble's 4 GiB limit;
	// the first failure is kept and reported.
	var berr error
	set := func(k, v []byte) {
		if berr == nil {
			berr = b.Set(k, v, nil)
		}
	}
	entries := 0
	for _, t := range s.tables {
		if !t.persisted {
			set(metaTableKey(t.name), encodeU32(t.id))
		}
		for kg := range t.groups {
			g := &t.groups[kg]
			// In key order, so that the whole batch is (tables in id
			// order, groups in order): Pebble inserts sorted keys into
			// its memtable faster, each search starting where the last
			// ended, than keys in the order a workload wrote them.
			slices.SortFunc(g.dirty, func(a, b int32) int { return strings.Compare(g.entries[a].key, g.entries[b].key) })
			for _, slot := range g.dirty {
				e := &g.entries[slot]
				s.keyBuf = appendStateKey(s.keyBuf[:0], t.id, kg, e.key)
				if e.present {
					set(s.keyBuf, e.val)
				} else if berr == nil {
					berr = b.Delete(s.keyBuf, nil)
				}
			}
			entries += len(g.dirty)
		}
	}
	var val [8]byte
	for source, pos := range positions {
		s.keyBuf = appendPositionKey(s.keyBuf[:0], source)
		binary.BigEndian.PutUint64(val[:], pos)
		set(s.keyBuf, val[:])
	}
	if berr != nil {
		_ = b.Close()
		return fmt.Errorf("state: commit %d entries to %s: %w", entries, s.dir, berr)
	}
	bytes := len(b.Repr())
	if b.Empty() {
		_ = b.Close()
	} else if err := s.apply(b); errors.Is(err, ErrFailed) {
		return err
	} else if err != nil {
		return fmt.Errorf("state: commit %d entries to %s: %w", entries, s.dir, err)
	}

	// Durable: now forget the dirty marks and committed deletions.
	for _, t := range s.tables {
		t.persisted = true
		for kg := range t.groups {
			g := &t.groups[kg]
			for _, slot := range g.dirty {
				e := &g.entries[slot]
				e.dirty = false
				if !e.present {
					g.remove(slot)
				}
			}
			g.dirty = g.dirty[:0]
		}
	}
	maps.Copy(s.positions, positions)
	s.commits++
	s.last = CommitStats{Commits: 1, Entries: uint64(entries), Positions: uint64(len(positions)),
		Bytes: uint64(bytes), Duration: time.Since(start)}
	s.total.add(s.last)
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("state committed", "entries", entries, "positions", len(positions),
			"bytes", bytes, "duration", s.last.Duration)
	}
	return nil
}

// apply applies b with a synced write and closes it. The write runs on a
// goroutine of its own: one stalled behind flushes that keep failing would
// never return, so apply also returns when the store fails, with the
// failure, leaving the write's goroutine parked.
func (s *Store) apply(b *pebble.Batch) error {
	done := make(chan error, 1)
	go func() {
		done <- s.applyBatch(b)
	}()
	select {
	case err := <-done:
		return err
	case <-s.health.failed:
		select {
		case err := <-done:
			// The write finished as the store failed: its result stands.
			return err
		default:
			return s.health.Err()
		}
	}
}

func (s *Store) applyBatch(b *pebble.Batch) (err error) {
	defer s.health.recoverFatal(&err, true)
	defer b.Close()
	// A failed write of the log does not come back as an error: Pebble
	// calls Fatalf, or panics, and recoverFatal makes it the failure.
	return s.db.Apply(b, pebble.Sync)
}

// Err returns the error that failed the store, or nil while it is healthy.
// A store fails when Pebble cannot write to the data directory (a full or
// read-only disk, an I/O error) or reports an error it cannot continue
// from; the error matches ErrFailed and names the directory and the cause.
// A failed store refuses Commits with that error. What was committed is
// intact and is recovered at the next Open; the failed Pebble instance is
// abandoned, not closed, so the directory stays locked until the process
// exits: the process should exit, and restart once the disk is fixed.
func (s *Store) Err() error { return s.health.Err() }

// Failed returns a channel that is closed when the store fails; Err then
// returns why. A host watches it to stop when the disk fails while no
// Commit runs (Pebble's flushes and compactions run in the background).
func (s *Store) Failed() <-chan struct{} { return s.health.failed }

// CommitStats describes one Commit, or a sum of Commits.
type CommitStats struct {
	Commits   uint64        // number of Commits summed
	Entries   uint64        // entries written or deleted
	Positions uint64        // source positions written
	Bytes     uint64        // size of the Pebble batches
	Duration  time.Duration // time spent in Commit
}

func (c *CommitStats) add(o CommitStats) {
	c.Commits += o.Commits
	c.Entries += o.Entries
	c.Positions += o.Positions
	c.Bytes += o.Bytes
	c.Duration += o.Duration
}

// TableStats describes one table in memory.
type TableStats struct {
	Name    string
	ID      uint32
	Entries int // keys with a value
	Dirty   int // entries written or deleted since the last Commit
}

// Stats is a snapshot of a Store's figures, for metrics.
type Stats struct {
	KeyGroups  int
	Tables     []TableStats // sorted by name
	LastCommit CommitStats  // the most recent Commit
	Total      CommitStats  // every Commit since Open
}

// Stats returns the store's figures. It reads every group of every table:
// call it when no writer runs (at the barrier, like Commit).
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{KeyGroups: s.groups, LastCommit: s.last, Total: s.total}
	for _, t := range s.tables {
		st.Tables = append(st.Tables, TableStats{Name: t.name, ID: t.id, Entries: t.Len(), Dirty: t.Dirty()})
	}
	slices.SortFunc(st.Tables, func(a, b TableStats) int { return strings.Compare(a.Name, b.Name) })
	return st
}

// Scan calls fn for every committed entry of table, in key order, from a
// consistent snapshot of Pebble: writes not yet committed are not seen,
// and a Commit running at the same time is seen entirely or not at all.
// key and value are valid only during the call. Scan stops at the first
// error fn returns and returns it unchanged.
//
// Scan merges one Pebble iterator per key group, since keys are stored
// grouped by key group. It is meant for dumps and tests, not the hot path.
func (s *Store) Scan(table string, fn func(key, value []byte) error) (err error) {
	defer s.health.recoverFatal(&err, false)
	s.mu.Lock()
	t, closed := s.byName[table], s.closed
	s.mu.Unlock()
	if closed {
		return newError(ErrClosed, nil, "state: scan table %q in %s", table, s.dir)
	}
	if t == nil {
		return newError(ErrUnknownTable, nil, "state: scan table %q in %s", table, s.dir)
	}
	return scanTable(s.db, s.dir, t.name, t.id, s.groups, fn)
}

// Close closes the Pebble store and releases the data directory. Writes
// not committed are lost. Close is idempotent. Closing a failed store (see
// Err) returns its failure and leaves Pebble and the directory lock as they
// are.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.release(); errors.Is(err, ErrFailed) {
		return err
	} else if err != nil {
		return fmt.Errorf("state: close %s: %w", s.dir, err)
	}
	s.log.Info("state store closed")
	return nil
}

// release closes Pebble and releases the directory, unless the store failed
// (see Err): it then returns the failure.
func (s *Store) release() (err error) {
	defer s.health.recoverFatal(&err, false)
	if err := s.health.Err(); err != nil {
		return err
	}
	s.health.closing.Store(true)
	err = s.db.Close()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// slab hands out copies of the keys and values loaded at Open, carved from
// large chunks, so that loading a million entries costs a few allocations,
// not two million. A value is carved with its capacity equal to its length,
// so writing it in place (Group.set) never reaches its neighbours; a key is
// a string over bytes nothing ever writes again.
type slab struct{ buf []byte }

const (
	slabChunk    = 1 << 20
	slabMaxValue = 4 << 10
)

func (a *slab) copy(v []byte) []byte {
	if len(v) > slabMaxValue {
		return append([]byte(nil), v...)
	}
	if cap(a.buf)-len(a.buf) < len(v) {
		a.buf = make([]byte, 0, slabChunk)
	}
	start := len(a.buf)
	a.buf = append(a.buf, v...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

func (a *slab) str(k []byte) string {
	if len(k) == 0 {
		return ""
	}
	b := a.copy(k)
	return unsafe.String(&b[0], len(b))
}
