package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// PendingCommit is what Store.Prepare captured: every change to the store
// since the previous Prepare, copied into a Pebble batch, waiting to be
// written by Commit. It holds no reference to the tables, so Sessions may
// write them while it commits.
type PendingCommit struct {
	s       *Store
	seq     uint64 // 1 for the store's first Prepare
	b       *pebble.Batch
	entries int
	prep    time.Duration // time Prepare took
	prev    *PendingCommit
	// cap holds the entries Prepare captured, which write sorts and adds
	// to b: the sort and Pebble's encoding run on the committing
	// goroutine, not on the one that prepares (the executor's).
	cap *capture

	mu        sync.Mutex // serialises Commit calls of this pending commit
	committed bool       // Commit ran to its end, with success or not
	err       error      // the failure of a Commit that ran to its end
	done      chan struct{}
}

// Prepare ends the current batch of changes: it copies every entry written
// or deleted since the last Prepare, in every table and key group (their
// keys and values into a buffer, in the order met: the sort and Pebble's
// encoding of these entries are left to Commit, on the goroutine that
// commits), the timers set and deleted, the ids of new tables, the key
// groups dropped or imported, the metadata set, and the next generation
// of each key group so changed (Store.Generation), into a PendingCommit,
// then clears the dirty marks, forgets committed deletions and ends the
// Sessions' undo epoch (sessions should be Reset). Memory then holds the
// state the PendingCommit will make durable.
//
// Prepare must not run while any Session or Group is writing (it runs at
// the executor's barrier); the PendingCommit's Commit may. If Prepare
// fails, memory is unchanged; a batch too large for Pebble (over 4 GiB)
// fails the Commit, and with it the store. Every PendingCommit must be
// committed, in the order Prepare returned them: a later one waits for
// the earlier ones.
func (s *Store) Prepare() (*PendingCommit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, newError(ErrClosed, nil, "state: prepare a commit to %s: the store is closed", s.dir)
	}
	if err := s.health.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	b := s.db.NewBatch()
	// Batch writes fail only when the batch outgrows Pebble's 4 GiB limit;
	// the first failure is kept and reported.
	var berr error
	keep := func(err error) {
		if berr == nil {
			berr = err
		}
	}
	// Dropped key groups first: the range deletions come before the
	// writes of this batch to the same groups, which therefore survive.
	for _, kg := range slices.Sorted(maps.Keys(s.drops)) {
		s.changed[kg] = true
		for _, t := range s.tables {
			lower := appendGroupPrefix(nil, t.id, kg)
			keep(b.DeleteRange(lower, prefixEnd(lower), nil))
		}
		lower := appendTimerGroupPrefix(nil, kg)
		keep(b.DeleteRange(lower, prefixEnd(lower), nil))
	}
	c := s.newCapture()
	for _, t := range s.tables {
		if !t.persisted {
			keep(b.Set(metaTableKey(t.name), encodeU32(t.id), nil))
		}
		for kg := range t.groups {
			g := &t.groups[kg]
			if len(g.dirty) == 0 {
				continue
			}
			s.changed[kg] = true
			for _, slot := range g.dirty {
				e := &g.entries[slot]
				c.add(appendStateKey(c.kv, t.id, kg, e), e)
			}
			c.endRun()
		}
	}
	for kg := range s.timers.groups {
		g := &s.timers.groups[kg]
		if len(g.dirty) == 0 {
			continue
		}
		s.changed[kg] = true
		for _, slot := range g.dirty {
			e := &g.entries[slot]
			c.add(append(appendTimerGroupPrefix(c.kv, kg), e.key...), e)
		}
		c.endRun()
	}
	entries := len(c.ents)
	// Each changed key group's next generation, written with its changes.
	var gen [8]byte
	for kg, changed := range s.changed {
		if changed {
			s.keyBuf = appendGenKey(s.keyBuf[:0], kg)
			binary.BigEndian.PutUint64(gen[:], s.gens[kg]+1)
			keep(b.Set(s.keyBuf, gen[:], nil))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.staged)) {
		if v := s.staged[name]; v != nil {
			keep(b.Set(metaUserKey(name), v, nil))
		} else {
			keep(b.Delete(metaUserKey(name), nil))
		}
	}
	if berr != nil {
		_ = b.Close()
		clear(s.changed)
		s.spare = c
		return nil, fmt.Errorf("state: prepare a commit of %d entries to %s: %w", entries, s.dir, berr)
	}
	for kg, changed := range s.changed {
		if changed {
			s.gens[kg]++
		}
	}
	clear(s.changed)

	// Captured: now forget the dirty marks and deletions.
	for _, t := range append(slices.Clip(s.tables), s.timers) {
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
	clear(s.staged)
	clear(s.drops)
	s.epoch++
	p := &PendingCommit{s: s, b: b, cap: c, entries: entries, prev: s.tail, done: make(chan struct{}), prep: time.Since(start)}
	p.seq = 1
	if p.prev != nil {
		p.seq = p.prev.seq + 1
	}
	s.tail = p
	return p, nil
}

// capture is the entries of a Prepare, copied out of the tables: each
// entry's Pebble key and value in kv, one run of entries per key group
// (its keys sharing the group's prefix), in the order Prepare met them.
// Its buffers are reused from one commit to the next (Store.spare).
type capture struct {
	kv   []byte
	ents []capEntry
	runs []int // the end of each run in ents
}

// capEntry is one captured entry: kv[off:off+klen] its key, the vlen
// bytes after it its value; del for a deletion.
type capEntry struct {
	off        int
	klen, vlen int32
	del        bool
}

// newCapture returns an empty capture, reusing the store's spare one;
// s.mu is held.
func (s *Store) newCapture() *capture {
	c := s.spare
	s.spare = nil
	if c == nil {
		return &capture{}
	}
	c.kv, c.ents, c.runs = c.kv[:0], c.ents[:0], c.runs[:0]
	return c
}

// add captures entry e, whose key was just appended to c.kv (kv is c.kv
// with the key appended).
func (c *capture) add(kv []byte, e *entry) {
	off := len(c.kv)
	ce := capEntry{off: off, klen: int32(len(kv) - off), del: !e.present}
	if e.present {
		kv = append(kv, e.val...)
		ce.vlen = int32(len(e.val))
	}
	c.kv = kv
	c.ents = append(c.ents, ce)
}

// endRun ends the run of the current key group.
func (c *capture) endRun() { c.runs = append(c.runs, len(c.ents)) }

func (c *capture) key(e *capEntry) []byte { return c.kv[e.off : e.off+int(e.klen)] }

// addTo sorts each run by key and adds the entries to b, in runs (key
// groups in order), so that the whole batch is in key order: Pebble
// inserts sorted keys into its memtable faster, each search starting
// where the last ended, than keys in the order a workload wrote them.
func (c *capture) addTo(b *pebble.Batch) error {
	from := 0
	for _, end := range c.runs {
		run := c.ents[from:end]
		from = end
		slices.SortFunc(run, func(x, y capEntry) int { return bytes.Compare(c.key(&x), c.key(&y)) })
		for i := range run {
			e := &run[i]
			k := c.key(e)
			var err error
			if e.del {
				err = b.Delete(k, nil)
			} else {
				err = b.Set(k, c.kv[e.off+int(e.klen):e.off+int(e.klen)+int(e.vlen)], nil)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Commit writes the prepared changes and positions (source name -> last
// position whose effects the state includes) to Pebble in one atomic
// batch, fsynced when Options.Sync is set; in any case it returns after the
// batch is in the operating system's hands. Sources not in positions keep
// their last committed position.
//
// Commit may run on any goroutine, while Sessions write the tables and
// the next batch is prepared. It first waits, until ctx is done, for the
// pending commits prepared before this one to finish: pending commits are
// written in Prepare order. If ctx ends the wait, Commit returns its error
// and may be called again.
//
// If the write fails, the store fails (Store.Err, Store.Failed): the
// prepared changes are no longer marked dirty in memory, so no later
// Commit could make them durable; later Commits return the failure. After
// a crash at any point, Open finds the state and positions of one Commit,
// never a mix. Commit of a pending commit that already committed returns
// the result of that Commit.
func (p *PendingCommit) Commit(ctx context.Context, positions map[string]uint64) error {
	s := p.s
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.committed {
		return p.err
	}
	if p.prev != nil {
		select {
		case <-p.prev.done:
		case <-ctx.Done():
			return fmt.Errorf("state: commit %d to %s: waiting for commit %d: %w", p.seq, s.dir, p.prev.seq, ctx.Err())
		}
	}
	p.err = p.write(positions)
	p.committed = true
	p.prev = nil // let the chain be collected
	close(p.done)
	return p.err
}

// write applies the batch with positions and records the outcome.
func (p *PendingCommit) write(positions map[string]uint64) error {
	s := p.s
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		_ = p.b.Close()
		p.b = nil
		return newError(ErrClosed, nil, "state: commit to %s: the store is closed", s.dir)
	}
	if err := s.health.Err(); err != nil {
		_ = p.b.Close()
		p.b = nil
		return err
	}
	start := time.Now()
	b := p.b
	p.b = nil // closed below, by whichever path
	var berr error
	if c := p.cap; c != nil {
		p.cap = nil
		berr = c.addTo(b)
		if cap(c.kv) <= maxSpareCapture {
			s.mu.Lock()
			s.spare = c
			s.mu.Unlock()
		}
	}
	var val [8]byte
	var key []byte
	for source, pos := range positions {
		key = appendPositionKey(key[:0], source)
		binary.BigEndian.PutUint64(val[:], pos)
		if err := b.Set(key, val[:], nil); err != nil && berr == nil {
			berr = err
		}
	}
	bytes := len(b.Repr())
	var err error
	switch {
	case berr != nil:
		_ = b.Close()
		err = berr
	case b.Empty():
		_ = b.Close()
	default:
		err = s.apply(b)
	}
	if err != nil {
		if !errors.Is(err, ErrFailed) {
			s.health.fail(fmt.Errorf("commit %d entries: %w", p.entries, err))
			err = s.health.Err()
		}
		return err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(s.positions, positions)
	s.last = CommitStats{Commits: 1, Entries: uint64(p.entries), Positions: uint64(len(positions)),
		Bytes: uint64(bytes), Duration: p.prep + time.Since(start)}
	s.total.add(s.last)
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("state committed", "entries", p.entries, "positions", len(positions),
			"bytes", bytes, "duration", s.last.Duration)
	}
	return nil
}

// maxSpareCapture bounds the capture buffer a store keeps for the next
// commit: one huge batch should not pin its memory.
const maxSpareCapture = 64 << 20

// Commit makes durable, in one atomic Pebble batch, every change since the
// last Prepare (entries written or deleted in every table and key group,
// timers, new tables' ids, key groups dropped or imported, metadata) and
// positions: it is Prepare followed by PendingCommit.Commit, whose
// documentation says what a failure does. It waits for pending commits
// prepared earlier.
//
// Commit must not run while any Session or Group is writing; sessions
// should be Reset afterwards.
func (s *Store) Commit(positions map[string]uint64) error {
	p, err := s.Prepare()
	if err != nil {
		return err
	}
	return p.Commit(context.Background(), positions)
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

// SetMeta sets the metadata value of name to a copy of value, or removes
// it when value is nil. The change is staged: Meta returns it at once,
// and the next Prepare (Commit) writes it atomically with the state.
// Open restores the committed metadata.
func (s *Store) SetMeta(name string, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if value != nil {
		value = bytes.Clone(value)
		s.meta[name] = value
	} else {
		delete(s.meta, name)
	}
	s.staged[name] = value
}

// Meta returns a copy of the metadata value of name, staged or committed,
// and whether it has one.
func (s *Store) Meta(name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.meta[name]
	return bytes.Clone(v), ok
}
