package state

import (
	"bytes"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/RaduBerinde/btreemap"
)

// Table is a named keyed state table: one Group per key group. A Table is
// created by Store.Table and lives as long as its Store.
//
// Concurrency: a Table's groups are independent. Different goroutines may
// use different groups at the same time without locking; one group must be
// used by one goroutine at a time (the executor guarantees it by giving each
// key group to exactly one worker). Commit must not run concurrently with
// writes.
type Table struct {
	store  *Store
	name   string
	id     uint32
	groups []Group
	// persisted reports whether the table's id is recorded in Pebble;
	// guarded by store.mu.
	persisted bool
}

func newTable(s *Store, name string, id uint32, groups int) *Table {
	t := &Table{store: s, name: name, id: id, groups: make([]Group, groups)}
	for kg := range t.groups {
		t.groups[kg].reset(t, kg)
	}
	return t
}

// reset makes g an empty group kg of t.
func (g *Group) reset(t *Table, kg int) {
	*g = Group{table: t, kg: kg}
}

// Name returns the table's name.
func (t *Table) Name() string { return t.name }

// ID returns the table's numeric id, stable for the life of the data
// directory once the table has been committed.
func (t *Table) ID() uint32 { return t.id }

// KeyGroups returns the number of key groups of the table (the store's).
func (t *Table) KeyGroups() int { return len(t.groups) }

// Group returns key group kg of the table. It panics if kg is out of range.
func (t *Table) Group(kg int) *Group { return &t.groups[kg] }

// Len returns the number of entries (keys with a value) in memory,
// committed or not. It reads every group: call it when no writer runs.
func (t *Table) Len() int {
	n := 0
	for kg := range t.groups {
		n += t.groups[kg].live
	}
	return n
}

// Dirty returns the number of entries written or deleted since the last
// Commit. It reads every group: call it when no writer runs.
func (t *Table) Dirty() int {
	n := 0
	for kg := range t.groups {
		n += len(t.groups[kg].dirty)
	}
	return n
}

// Group is the state of one key group of one table, held in memory.
//
// Invariants, relied on by Session's undo log and by Commit:
//   - index maps every plain key in memory to its slot in entries, and
//     ord.index every namespaced key (by its encoding, key.go); a slot in
//     either holds a value (present) or a deletion not yet committed
//     (dirty and not present). Committed deletions leave memory.
//   - ord.tree holds exactly the present namespaced entries, ordered by
//     their encoding, for Session.Scan (and the timers' order).
//   - dirty lists exactly the slots whose entry is dirty, each once.
//   - free lists the slots of entries, unused by any key, that can be reused.
//   - live counts the present entries.
//
// Entries live in a slice indexed by slot rather than behind pointers so
// that a large table costs the garbage collector one slice per group rather
// than one object per key.
type Group struct {
	table   *Table
	kg      int
	index   keyIndex
	entries []entry
	free    []int32
	dirty   []int32
	live    int
	ord     *ordIndex // namespaced entries; nil until the first
}

// ordIndex indexes a group's namespaced entries by their key encoding.
type ordIndex struct {
	index keyIndex // by keyHash of the encoding
	tree  *btreemap.BTreeMap[string, int32]
}

// ordDegree is the degree of the B-trees of namespaced entries.
const ordDegree = 16

type entry struct {
	key     string // the plain key, or the encoding of a namespaced key
	val     []byte
	present bool
	dirty   bool
	ord     bool // a namespaced entry, indexed in Group.ord
}

// ordered returns g's index of namespaced entries, creating it.
func (g *Group) ordered() *ordIndex {
	if g.ord == nil {
		g.ord = &ordIndex{tree: btreemap.New[string, int32](ordDegree, strings.Compare)}
	}
	return g.ord
}

// KeyGroup returns the group's key group number.
func (g *Group) KeyGroup() int { return g.kg }

// Table returns the table the group belongs to.
func (g *Group) Table() *Table { return g.table }

// Len returns the number of keys with a value in the group, plain and
// namespaced.
func (g *Group) Len() int { return g.live }

// Dirty returns the number of entries written or deleted since the last
// Commit.
func (g *Group) Dirty() int { return len(g.dirty) }

// Get returns the value of key and true, or nil and false when key has no
// value. It does not allocate. The returned slice aliases the group's
// memory: it is valid until the next write (Put, Delete, rollback) of key,
// and must not be modified.
func (g *Group) Get(key []byte) ([]byte, bool) { return g.get(key, keyHash(key)) }

// get is Get of key, whose keyHash is h.
func (g *Group) get(key []byte, h uint32) ([]byte, bool) {
	slot, ok := g.index.find(g.entries, key, h)
	if !ok {
		return nil, false
	}
	return g.entries[slot].value()
}

// value returns the entry's value and true, or nil and false when it has
// none (a deletion not yet committed).
func (e *entry) value() ([]byte, bool) {
	if !e.present {
		return nil, false
	}
	return e.val, true
}

// Put sets the value of key to a copy of value and marks it dirty. The
// write is not undoable: workers write through a Session.
func (g *Group) Put(key, value []byte) {
	h := keyHash(key)
	slot, ok := g.index.find(g.entries, key, h)
	if !ok {
		slot = g.insert(key, h)
	}
	g.set(slot, value)
}

// Update is Put that leaves a key whose value already equals value as it
// is, neither copied nor marked dirty, so that the next Prepare does not
// write it again; it reports whether it wrote. Like Put it is not
// undoable: it is for writers that apply a change set known to be final
// (a transactional operator's, at commit), which need no undo log.
func (g *Group) Update(key, value []byte) bool {
	h := keyHash(key)
	slot, ok := g.index.find(g.entries, key, h)
	return g.update(key, h, slot, ok, value, false)
}

// update is Update of key (keyHash h), or with del Delete, where slot is
// the key's slot when ok (found in the index); it reports whether it
// wrote.
func (g *Group) update(key []byte, h uint32, slot int32, ok bool, value []byte, del bool) bool {
	switch {
	case del:
		if !ok || !g.entries[slot].present {
			return false
		}
		g.del(slot)
		return true
	case !ok:
		slot = g.insert(key, h)
	case g.entries[slot].present && bytes.Equal(g.entries[slot].val, value):
		return false
	}
	g.set(slot, value)
	return true
}

// Write is one change of Table.WriteAll: Key set to Value (as
// Group.Update), or with Delete removed.
type Write struct {
	Key, Value []byte
	Delete     bool
}

// WriteAll applies ws in order, each to its key's group, as Group.Update
// and Group.Delete do, faster beyond the caches than one after the other:
// it takes them a run at a time and loads the index words and entries of
// a run before it writes any, so that their cache misses are waited for
// together (see Session.GetAll). It is not undoable, and is for a writer
// that owns every group it writes (a transactional operator's commit).
func (t *Table) WriteAll(ws []Write) { t.writePart(ws, 0, 1) }

// parallelWrites is the fewest writes WriteAllParallel spreads over
// goroutines: below it, starting them costs more than it saves.
const parallelWrites = 1024

// WriteAllParallel is WriteAll on up to parts goroutines, each applying
// the writes of the key groups kg with kg % parts equal to its number, in
// their order: a key is in one group, so its writes keep their order, and
// groups share nothing, so the goroutines need no lock. Each reads all of
// ws and hashes every key; the cache misses of the groups, the larger
// cost, are split between them.
func (t *Table) WriteAllParallel(ws []Write, parts int) {
	if parts <= 1 || len(ws) < parallelWrites {
		t.WriteAll(ws)
		return
	}
	var wg sync.WaitGroup
	for part := 1; part < parts; part++ {
		wg.Go(func() { t.writePart(ws, part, parts) })
	}
	t.writePart(ws, 0, parts)
	wg.Wait()
}

// writeRun is up to lookupRun writes of WriteAll whose entries are being
// looked up together.
type writeRun struct {
	n      int
	ws     [lookupRun]*Write
	groups [lookupRun]*Group
	hashes [lookupRun]uint32
	slots  [lookupRun]int32
	keys   [lookupRun]string
}

// writePart applies the writes of ws to the groups kg with kg % parts ==
// part, in order, a run at a time.
func (t *Table) writePart(ws []Write, part, parts int) {
	var r writeRun
	for i := range ws {
		w := &ws[i]
		h := xxhash.Sum64(w.Key)
		kg := keyGroupOf(h, len(t.groups))
		if kg%parts != part {
			continue
		}
		g := &t.groups[kg]
		n := r.n
		r.ws[n], r.groups[n], r.hashes[n] = w, g, indexBits(h)
		slot, ok := g.index.home(r.hashes[n])
		r.slots[n], r.keys[n] = -1, ""
		if ok {
			r.slots[n], r.keys[n] = slot, g.entries[slot].key
		}
		if r.n++; r.n == lookupRun {
			r.apply()
		}
	}
	r.apply()
}

// apply writes the run, whose index words and entries were loaded, and
// empties it.
func (r *writeRun) apply() {
	for i := range r.n {
		w, g, h := r.ws[i], r.groups[i], r.hashes[i]
		// A key at its home word keeps its slot through the writes of
		// the run before it (a deletion keeps the entry until the
		// commit); any other is found again.
		slot, ok := r.slots[i], r.slots[i] >= 0 && r.keys[i] == string(w.Key)
		if !ok {
			slot, ok = g.index.find(g.entries, w.Key, h)
		}
		g.update(w.Key, h, slot, ok, w.Value, w.Delete)
		r.ws[i], r.keys[i] = nil, ""
	}
	r.n = 0
}

// Delete removes key and marks the deletion dirty; deleting an absent key
// does nothing. The write is not undoable: workers write through a Session.
func (g *Group) Delete(key []byte) {
	h := keyHash(key)
	slot, ok := g.index.find(g.entries, key, h)
	g.update(key, h, slot, ok, nil, true)
}

// Range calls fn for every plain key with a value in the group, committed
// or not, in no particular order, until fn returns false. Namespaced keys
// are visited by Session.Scan. fn must not write to
// the group; value is valid only during the call.
func (g *Group) Range(fn func(key, value []byte) bool) {
	for i := range g.entries {
		e := &g.entries[i]
		if e.present && !e.ord && !fn([]byte(e.key), e.val) {
			return
		}
	}
}

// insert adds key, whose keyHash is h, to the index with an entry that is
// neither present nor dirty; the caller sets it at once.
func (g *Group) insert(key []byte, h uint32) int32 {
	slot := g.newSlot()
	g.entries[slot].key = string(key)
	g.index.insert(h, slot)
	return slot
}

// findOrd returns the slot of the namespaced key whose encoding is enc,
// and the encoding's keyHash (for insertOrd).
func (g *Group) findOrd(enc []byte) (int32, bool, uint32) {
	h := keyHash(enc)
	if g.ord == nil {
		return 0, false, h
	}
	slot, ok := g.ord.index.find(g.entries, enc, h)
	return slot, ok, h
}

// insertOrd adds the namespaced key whose encoding is enc (keyHash h), as
// insert does.
func (g *Group) insertOrd(enc []byte, h uint32) int32 {
	o := g.ordered()
	slot := g.newSlot()
	e := &g.entries[slot]
	e.key, e.ord = string(enc), true
	o.index.insert(h, slot)
	return slot
}

// putOrd sets the namespaced key whose encoding is enc, as Put does.
func (g *Group) putOrd(enc, value []byte) {
	slot, ok, h := g.findOrd(enc)
	if !ok {
		slot = g.insertOrd(enc, h)
	}
	g.set(slot, value)
}

// getOrd returns the value of the namespaced key whose encoding is enc.
func (g *Group) getOrd(enc []byte) ([]byte, bool) {
	slot, ok, _ := g.findOrd(enc)
	if !ok {
		return nil, false
	}
	return g.entries[slot].value()
}

// setPresent marks the entry in slot present or absent, keeping live and
// the B-tree of namespaced entries in step.
func (g *Group) setPresent(slot int32, present bool) {
	e := &g.entries[slot]
	if e.present == present {
		return
	}
	e.present = present
	if present {
		g.live++
		if e.ord {
			g.ord.tree.ReplaceOrInsert(e.key, slot)
		}
	} else {
		g.live--
		if e.ord {
			g.ord.tree.Delete(e.key)
		}
	}
}

// newSlot returns an unused slot, reusing a freed one first.
func (g *Group) newSlot() int32 {
	if n := len(g.free); n > 0 {
		slot := g.free[n-1]
		g.free = g.free[:n-1]
		return slot
	}
	g.entries = append(g.entries, entry{})
	return int32(len(g.entries) - 1)
}

// remove takes a slot that is neither present nor dirty out of the index
// and makes it reusable, keeping its value buffer for the next key.
func (g *Group) remove(slot int32) {
	e := &g.entries[slot]
	if e.ord {
		g.ord.index.remove(keyHash(bytesOf(e.key)), slot)
		e.ord = false
	} else {
		g.index.remove(keyHash(bytesOf(e.key)), slot)
	}
	e.key = ""
	e.val = e.val[:0]
	g.free = append(g.free, slot)
}

// set stores a copy of value in slot, reusing its buffer when the buffer
// fits without wasting much, and marks it present and dirty.
func (g *Group) set(slot int32, value []byte) {
	e := &g.entries[slot]
	e.val = assign(e.val, value)
	if !e.present {
		g.setPresent(slot, true)
	}
	g.markDirty(slot)
}

// del marks slot absent and dirty.
func (g *Group) del(slot int32) {
	e := &g.entries[slot]
	e.val = e.val[:0]
	if e.present {
		g.setPresent(slot, false)
	}
	g.markDirty(slot)
}

func (g *Group) markDirty(slot int32) {
	e := &g.entries[slot]
	if !e.dirty {
		e.dirty = true
		g.dirty = append(g.dirty, slot)
	}
}

// clearDirty removes slot's dirty mark. Undo runs in reverse order of the
// writes, so the slot is almost always the last of the dirty list; the
// search backwards covers writes interleaved through Group directly.
func (g *Group) clearDirty(slot int32) {
	e := &g.entries[slot]
	if !e.dirty {
		return
	}
	e.dirty = false
	for i := len(g.dirty) - 1; i >= 0; i-- {
		if g.dirty[i] == slot {
			last := len(g.dirty) - 1
			g.dirty[i] = g.dirty[last]
			g.dirty = g.dirty[:last]
			return
		}
	}
}

// assign copies value into buf's storage when it fits and buf is not much
// larger than needed (so one large value does not pin memory forever), or
// into a new slice otherwise.
func assign(buf, value []byte) []byte {
	if c := cap(buf); c >= len(value) && (c <= 64 || c <= 2*len(value)) {
		buf = buf[:len(value)]
		copy(buf, value)
		return buf
	}
	return append(make([]byte, 0, len(value)), value...)
}

// load adds a committed entry read from Pebble: the plain key key, or with
// ord the namespaced key whose encoding is key. key and value are owned by
// the group (see slab).
func (g *Group) load(key string, ord bool, value []byte) {
	var (
		slot int32
		ok   bool
		h    uint32
	)
	index := &g.index
	if ord {
		index = &g.ordered().index
	}
	h = keyHash(bytesOf(key))
	slot, ok = index.find(g.entries, bytesOf(key), h)
	if !ok {
		slot = g.newSlot()
		e := &g.entries[slot]
		e.key, e.ord = key, ord
		index.insert(h, slot)
	}
	g.entries[slot].val = value
	g.setPresent(slot, true)
}
