package state

import (
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/RaduBerinde/btreemap"
)

// Session is one worker's access to the store's tables: it routes each key
// to its key group, checks that the worker owns that group, and records an
// undo log so that the worker's writes since a savepoint can be taken back.
//
// A Session is not safe for concurrent use; each worker has its own. Undo
// records refer to entries by slot and old values live in an arena reused
// from one batch to the next, so a Session does not allocate in steady
// state (a write of a key not yet in memory allocates its entry, as any
// insert must).
//
// The undo log covers writes since the last Prepare (or Commit, import or
// drop of a key group) only: call Reset after each. A Session that sees one
// it was not reset after forgets its log at its next write or Savepoint,
// and RollbackTo to a savepoint taken before it panics.
type Session struct {
	store *Store
	owned func(kg int) bool
	log   []undo
	arena []byte
	epoch uint64 // store.epoch when the log was started
	enc   []byte // scratch for key encodings
}

// undo records the state of one entry before a write: whether it had a
// value, that value (arena[off:off+n]), and its dirty mark.
type undo struct {
	g          *Group
	slot       int32
	wasPresent bool
	wasDirty   bool
	off, n     int
}

// NewSession returns a session over the store's tables that owns every key
// group until SetOwned says otherwise.
func (s *Store) NewSession() *Session {
	return &Session{store: s, epoch: s.epoch}
}

// SetOwned sets the predicate that says which key groups the session may
// touch; nil allows all. An access to a key of another group fails with a
// *NotOwnedError, which matches ErrNotOwned.
func (se *Session) SetOwned(owned func(kg int) bool) { se.owned = owned }

// group returns the group of key in t, after checking ownership.
func (se *Session) group(t *Table, key []byte) (*Group, error) {
	g, _, err := se.groupHash(t, key)
	return g, err
}

// groupHash is group that also returns key's keyHash: key's XXH64 hash
// gives both its key group and the bits the group's index is keyed by.
func (se *Session) groupHash(t *Table, key []byte) (*Group, uint32, error) {
	h := xxhash.Sum64(key)
	kg := keyGroupOf(h, len(t.groups))
	if se.owned != nil && !se.owned(kg) {
		return nil, 0, &NotOwnedError{Table: t.name, KeyGroup: kg}
	}
	return &t.groups[kg], indexBits(h), nil
}

// Get returns the value of key in t, with Group.Get's aliasing rules.
func (se *Session) Get(t *Table, key []byte) ([]byte, bool, error) {
	g, h, err := se.groupHash(t, key)
	if err != nil {
		return nil, false, err
	}
	v, ok := g.get(key, h)
	return v, ok, nil
}

// Lookup is one read of Session.GetAll: the key of a table to read, and
// what was found (with Group.Get's aliasing rules).
type Lookup struct {
	Table *Table
	Key   []byte
	Value []byte
	Found bool
}

// lookupRun is how many reads GetAll takes together: enough for their
// cache misses to overlap, few enough for their state to stay in
// registers and the first cache level.
const lookupRun = 16

// GetAll is Get of every lookup in ls, faster beyond the caches than one
// Get after the other: it takes the reads a run at a time, and within a
// run loads first the index word of each, then each entry, then compares
// each key, so that the cache misses of a run are waited for together
// rather than in turn. On a key of a group the session does not own it
// returns that lookup's index and the error (the lookups before it are
// done; the rest are not). It only reads, so calls that share a session
// may run at once, as Gets may.
func (se *Session) GetAll(ls []Lookup) (int, error) {
	var (
		groups  [lookupRun]*Group
		hashes  [lookupRun]uint32
		slots   [lookupRun]int32
		homes   [lookupRun]bool
		entries [lookupRun]*entry
		keys    [lookupRun]string
	)
	for lo := 0; lo < len(ls); lo += lookupRun {
		run := ls[lo:min(lo+lookupRun, len(ls))]
		for i := range run {
			g, h, err := se.groupHash(run[i].Table, run[i].Key)
			if err != nil {
				return lo + i, err
			}
			groups[i], hashes[i] = g, h
			slots[i], homes[i] = g.index.home(h)
		}
		for i := range run {
			entries[i], keys[i] = nil, ""
			if homes[i] {
				e := &groups[i].entries[slots[i]]
				entries[i], keys[i] = e, e.key
			}
		}
		for i := range run {
			l := &run[i]
			if e := entries[i]; e != nil && keys[i] == string(l.Key) {
				l.Value, l.Found = e.value()
				continue
			}
			// Not at its home word: further along the run of words, or
			// absent.
			l.Value, l.Found = groups[i].get(l.Key, hashes[i])
		}
	}
	return 0, nil
}

// Put sets the value of key in t to a copy of value, recording the old
// value and dirty mark in the undo log.
func (se *Session) Put(t *Table, key, value []byte) error {
	g, h, err := se.groupHash(t, key)
	if err != nil {
		return err
	}
	se.sync()
	slot, ok := g.index.find(g.entries, key, h)
	if ok {
		se.record(g, slot)
	} else {
		slot = g.insert(key, h)
		se.log = append(se.log, undo{g: g, slot: slot, off: len(se.arena)})
	}
	g.set(slot, value)
	return nil
}

// Delete removes key from t, recording the old value and dirty mark in the
// undo log. Deleting an absent key records nothing.
func (se *Session) Delete(t *Table, key []byte) error {
	g, h, err := se.groupHash(t, key)
	if err != nil {
		return err
	}
	slot, ok := g.index.find(g.entries, key, h)
	if !ok || !g.entries[slot].present {
		return nil
	}
	se.sync()
	se.record(g, slot)
	g.del(slot)
	return nil
}

// GetKey returns the value of the namespaced key k in t, with Group.Get's
// aliasing rules. Ownership is checked on the key group of k.Route.
func (se *Session) GetKey(t *Table, k Key) ([]byte, bool, error) {
	if k.plain() {
		return se.Get(t, k.Route)
	}
	g, err := se.group(t, k.Route)
	if err != nil {
		return nil, false, err
	}
	se.enc = appendKey(se.enc[:0], k.Route, k.Namespace, k.User)
	v, ok := g.getOrd(se.enc)
	return v, ok, nil
}

// Ref is a handle on an existing namespaced entry, returned by GetKeyRef
// so that a read-modify-write finds the entry once. It stays valid until
// the next Commit, Prepare, RollbackTo or change of the entry's key group
// (import, drop); the zero Ref refers to nothing.
type Ref struct {
	g    *Group
	slot int32
}

// GetKeyRef is GetKey that also returns a Ref on the entry when k has a
// value, for PutRef.
func (se *Session) GetKeyRef(t *Table, k Key) ([]byte, Ref, bool, error) {
	g, h, err := se.groupHash(t, k.Route)
	if err != nil {
		return nil, Ref{}, false, err
	}
	var (
		slot int32
		ok   bool
	)
	if k.plain() {
		slot, ok = g.index.find(g.entries, k.Route, h)
	} else {
		se.enc = appendKey(se.enc[:0], k.Route, k.Namespace, k.User)
		slot, ok, _ = g.findOrd(se.enc)
	}
	if !ok || !g.entries[slot].present {
		return nil, Ref{}, false, nil
	}
	return g.entries[slot].val, Ref{g: g, slot: slot}, true, nil
}

// PutRef sets the value of the entry r refers to to a copy of value, as
// PutKey does (undo logged), without finding the entry again.
func (se *Session) PutRef(r Ref, value []byte) {
	se.sync()
	se.record(r.g, r.slot)
	r.g.set(r.slot, value)
}

// PutKey sets the value of the namespaced key k in t to a copy of value,
// as Put does.
func (se *Session) PutKey(t *Table, k Key, value []byte) error {
	if k.plain() {
		return se.Put(t, k.Route, value)
	}
	g, err := se.group(t, k.Route)
	if err != nil {
		return err
	}
	se.enc = appendKey(se.enc[:0], k.Route, k.Namespace, k.User)
	se.putOrd(g, se.enc, value)
	return nil
}

// DeleteKey removes the namespaced key k from t, as Delete does.
func (se *Session) DeleteKey(t *Table, k Key) error {
	if k.plain() {
		return se.Delete(t, k.Route)
	}
	g, err := se.group(t, k.Route)
	if err != nil {
		return err
	}
	se.enc = appendKey(se.enc[:0], k.Route, k.Namespace, k.User)
	se.delOrd(g, se.enc)
	return nil
}

// putOrd writes the namespaced entry whose encoding is enc, logging undo.
func (se *Session) putOrd(g *Group, enc, value []byte) {
	se.sync()
	slot, ok, h := g.findOrd(enc)
	if ok {
		se.record(g, slot)
	} else {
		slot = g.insertOrd(enc, h)
		se.log = append(se.log, undo{g: g, slot: slot, off: len(se.arena)})
	}
	g.set(slot, value)
}

// delOrd deletes the namespaced entry whose encoding is enc, logging undo.
// It reports whether there was one.
func (se *Session) delOrd(g *Group, enc []byte) bool {
	slot, ok, _ := g.findOrd(enc)
	if !ok || !g.entries[slot].present {
		return false
	}
	se.sync()
	se.record(g, slot)
	g.del(slot)
	return true
}

// Scan calls fn for every key of t with routing key route and, unless
// namespace is empty, namespace namespace, with its value, in order of
// (namespace, user key), committed or not, until fn returns false. With an
// empty namespace it visits every namespace of route, the plain key
// Key{Route: route} first. Its cost is proportional to the entries it
// visits plus the logarithm of the group's size.
//
// The Key and value passed to fn are valid only during the call and must
// not be modified; fn must not write to t. Ownership is checked on route's
// key group.
func (se *Session) Scan(t *Table, route, namespace []byte, fn func(k Key, value []byte) bool) error {
	g, err := se.group(t, route)
	if err != nil {
		return err
	}
	if len(namespace) == 0 {
		if v, ok := g.Get(route); ok && !fn(Key{Route: route}, v) {
			return nil
		}
	}
	if g.ord == nil {
		return nil
	}
	se.enc = appendComponent(se.enc[:0], route)
	if len(namespace) > 0 {
		se.enc = appendComponent(se.enc, namespace)
	}
	prefix := string(se.enc)
	for enc, slot := range g.ord.tree.Ascend(btreemap.GE(prefix), btreemap.Max[string]()) {
		if !strings.HasPrefix(enc, prefix) {
			break
		}
		k, err := decodeKey(bytesOf(enc))
		if err != nil {
			panic(fmt.Sprintf("state: Scan: %v", err)) // encoded by this package
		}
		k.Route = route
		if !fn(k, g.entries[slot].val) {
			break
		}
	}
	return nil
}

// record appends the current state of an existing entry to the undo log.
func (se *Session) record(g *Group, slot int32) {
	e := &g.entries[slot]
	u := undo{g: g, slot: slot, wasPresent: e.present, wasDirty: e.dirty, off: len(se.arena)}
	if e.present {
		se.arena = append(se.arena, e.val...)
		u.n = len(e.val)
	}
	se.log = append(se.log, u)
}

// sync forgets an undo log that a Commit has made obsolete.
func (se *Session) sync() {
	if se.epoch != se.store.epoch {
		se.Reset()
	}
}

// Savepoint returns a mark of the undo log to pass to RollbackTo.
func (se *Session) Savepoint() int {
	se.sync()
	return len(se.log)
}

// RollbackTo undoes every write made through the session since Savepoint
// returned sp, newest first, restoring the exact values, absences and dirty
// marks that were in place. Savepoints taken after sp remain usable only
// until the next write. It panics if sp is not a savepoint of the current
// undo log (the caller's bug: state would silently diverge otherwise).
func (se *Session) RollbackTo(sp int) {
	if se.epoch != se.store.epoch {
		if sp == 0 {
			se.Reset()
			return
		}
		panic(fmt.Sprintf("state: RollbackTo(%d): the savepoint predates a Commit (call Reset after Commit)", sp))
	}
	if sp < 0 || sp > len(se.log) {
		panic(fmt.Sprintf("state: RollbackTo(%d): not a savepoint of the undo log (%d records)", sp, len(se.log)))
	}
	for i := len(se.log) - 1; i >= sp; i-- {
		se.undo(&se.log[i])
	}
	if sp < len(se.log) {
		se.arena = se.arena[:se.log[sp].off]
		clear(se.log[sp:]) // drop group pointers
		se.log = se.log[:sp]
	}
}

func (se *Session) undo(u *undo) {
	g := u.g
	e := &g.entries[u.slot]
	if u.wasPresent {
		e.val = assign(e.val, se.arena[u.off:u.off+u.n])
	} else {
		e.val = e.val[:0]
	}
	if e.present != u.wasPresent {
		g.setPresent(u.slot, u.wasPresent)
	}
	if u.wasDirty {
		g.markDirty(u.slot)
	} else {
		g.clearDirty(u.slot)
		if !u.wasPresent {
			// The key was not in memory before the write.
			g.remove(u.slot)
		}
	}
}

// Len returns the number of records in the undo log.
func (se *Session) Len() int { return len(se.log) }

// Reset forgets the undo log, keeping its storage for reuse. The executor
// calls it after each Prepare or Commit.
func (se *Session) Reset() {
	clear(se.log)
	se.log = se.log[:0]
	if cap(se.arena) > maxRetainedArena {
		se.arena = nil // one huge batch should not pin its memory
	}
	se.arena = se.arena[:0]
	se.epoch = se.store.epoch
}

// maxRetainedArena bounds the old-value arena a Session keeps between
// batches.
const maxRetainedArena = 16 << 20
