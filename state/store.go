package state

import (
	"cmp"
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
// Concurrency: Table, Tables, Positions, Meta, SetMeta, Stats, Scan,
// Read, Commit and Close are safe for concurrent use with each other;
// Close waits for the Scans, Reads and PendingCommit writes in flight.
// Writers (Sessions, Groups) need no lock as long as each key group has
// one writer at a time, and Prepare, Commit, Stats, ImportKeyGroup and
// DropKeyGroup must not run while a writer runs: the executor calls them
// at the barrier between batches. PendingCommit.Commit may run while
// writers run.
type Store struct {
	dir    string
	db     *pebble.DB
	lock   *pebble.Lock
	health *health
	log    *slog.Logger
	groups int

	// epoch counts Prepares, imports and drops: the events that end the
	// sessions' undo logs. Sessions compare it to their own count to
	// notice one they were not reset after. Written at the executor's
	// barrier, read by sessions across it.
	epoch uint64

	// timers is the timer index: a table outside tables and byName whose
	// groups hold timer keys (timer.go) as namespaced entries.
	timers *Table

	// applyMu is held while a prepared commit writes to Pebble, and by
	// Close, which thus waits for it.
	applyMu sync.Mutex

	// readers is held shared by Read and Scan while they use Pebble and
	// exclusively by Close, so that Pebble is not closed under a read.
	readers sync.RWMutex

	mu        sync.Mutex
	closed    bool
	tables    []*Table // in id order
	byName    map[string]*Table
	nextID    uint32
	positions map[string]uint64
	last      CommitStats
	total     CommitStats
	keyBuf    []byte
	meta      map[string][]byte // user metadata, staged or committed
	staged    map[string][]byte // user metadata set since the last Prepare
	drops     map[int]bool      // key groups dropped since the last Prepare
	tail      *PendingCommit    // the last prepared commit
	spare     *capture          // a capture's buffers, for the next Prepare
	gens      []uint64          // generation per key group (generation.go)
	changed   []bool            // Prepare's scratch: key groups it found changed
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
		staged: map[string][]byte{},
		drops:  map[int]bool{},
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
	s.meta = m.user
	s.gens = m.gens
	s.changed = make([]bool, s.groups)
	s.timers = newTable(s, timerTableName, 0, s.groups)
	if m.version == layoutV1 {
		if err := s.migrate(); err != nil {
			return 0, err
		}
	}
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
		id, kg, enc, err := parseStateKey(k)
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
		key, err := decodeKey(enc)
		if err != nil {
			return fmt.Errorf("state key %x of table %q: %w", k, t.name, err)
		}
		if want := KeyGroup(key.Route, s.groups); kg != want {
			return fmt.Errorf("state key %x of table %q: stored in key group %d, belongs to %d", k, t.name, kg, want)
		}
		if key.plain() {
			t.groups[kg].load(alloc.str(key.Route), false, alloc.copy(v))
		} else {
			t.groups[kg].load(alloc.str(enc), true, alloc.copy(v))
		}
		entries++
		return nil
	})
	if err == nil {
		lower = []byte{prefixTimer}
		err = forEach(s.db, lower, prefixEnd(lower), func(k, _ []byte) error {
			if len(k) < timerPrefixLen {
				return fmt.Errorf("timer key %x is too short", k)
			}
			kg := int(binary.BigEndian.Uint16(k[1:3]))
			tm, err := decodeTimer(k[timerPrefixLen:])
			if err != nil {
				return err
			}
			if kg >= s.groups || KeyGroup(tm.Route, s.groups) != kg {
				return fmt.Errorf("timer key %x: stored in key group %d, belongs to %d", k, kg, KeyGroup(tm.Route, s.groups))
			}
			s.timers.groups[kg].load(alloc.str(k[timerPrefixLen:]), true, nil)
			entries++
			return nil
		})
	}
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
	s.meta = map[string][]byte{}
	s.gens = make([]uint64, groups)
	s.changed = make([]bool, groups)
	s.timers = newTable(s, timerTableName, 0, s.groups)
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
	return s.tableLocked(name)
}

// tableLocked is Table, with s.mu held.
func (s *Store) tableLocked(name string) *Table {
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

// Scan calls fn for every committed plain key of table (Key{Route: key})
// and its value, in key order, from a consistent snapshot of Pebble:
// writes not yet committed are not seen, and a Commit running at the same
// time is seen entirely or not at all. Namespaced keys are skipped
// (ScanKeys visits them). key and value are valid only during the call.
// Scan stops at the first error fn returns and returns it unchanged.
//
// Scan merges one Pebble iterator per key group, since keys are stored
// grouped by key group. It is meant for dumps and tests, not the hot path.
func (s *Store) Scan(table string, fn func(key, value []byte) error) error {
	return s.ScanKeys(table, func(k Key, v []byte) error {
		if !k.plain() {
			return nil
		}
		return fn(k.Route, v)
	})
}

// ScanKeys is Scan for every committed key of table, plain and namespaced,
// in (route, namespace, user key) order.
func (s *Store) ScanKeys(table string, fn func(key Key, value []byte) error) (err error) {
	defer s.health.recoverFatal(&err, false)
	s.readers.RLock()
	defer s.readers.RUnlock()
	s.mu.Lock()
	t, closed := s.byName[table], s.closed
	s.mu.Unlock()
	if closed {
		return newError(ErrClosed, nil, "state: scan table %q in %s: the store is closed", table, s.dir)
	}
	if t == nil {
		return newError(ErrUnknownTable, nil, "state: scan table %q in %s: no such table", table, s.dir)
	}
	return scanTable(s.db, s.dir, t.name, t.id, s.groups, fn)
}

// Close closes the Pebble store and releases the data directory, after
// waiting for a PendingCommit that is writing. Writes not committed are
// lost, prepared ones included. Close is idempotent. Closing a failed store (see
// Err) returns its failure and leaves Pebble and the directory lock as they
// are.
func (s *Store) Close() error {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.readers.Lock()
	defer s.readers.Unlock()
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
