// Package memstore is an in-memory txn.Store whose cost per lookup does not
// grow with the number of keys it holds, as far as memory allows: a lookup
// touches two cache lines (a slot and the key's record) however many keys
// there are, the garbage collector has nothing in it to scan, and a batch
// of lookups (txn.BatchStore) overlaps their cache misses.
//
// # Layout, and why
//
// Each table is an open-addressing index over an append-only arena:
//
//   - the index is a power-of-two array of uint64 slots, linear probing;
//     a slot holds the upper 24 bits of the key's hash (a tag, so that a
//     probe reads a record only when the tags match) and the offset of the
//     key's latest record in the arena plus one (0 marks an empty slot);
//   - a record is the key's length and the value's length plus one
//     (uvarints; 0 for a deleted key) followed by the key and the value,
//     so that the key compared and the value returned share a cache line.
//
// A txn.MapStore (a Go map keyed by txn.Key) costs about four cache misses
// per lookup once it outgrows the caches (the group's control word, the
// slot, the key's bytes, the value's bytes), hashes the key again after the
// scheduler did, and holds two pointers per entry that every garbage
// collection cycle scans: with millions of keys the collector's marking
// alone slows every goroutine of the process. Here the slots and the arena
// are pointer-free, and the hash is the scheduler's own (txn.KeyHash with
// the store's seed).
//
// The index and the arena of a large table are backed by huge pages where
// the system allows (Linux, transparent huge pages in madvise mode): with
// millions of keys, each lookup's misses would otherwise miss the TLB too.
//
// Records are never written in place: a Put appends a new record and points
// the key's slot at it, so the slices Get returns (and the key strings All
// yields, which alias the arena) never change, as txn.Store requires. The
// superseded records are garbage until Compact, or a Put that finds more
// garbage than live data, copies the live records into a new arena.
//
// A Store is not safe for concurrent writes; any number of goroutines may
// read it (Get, GetBatch, All) while none writes, as txn.Run does.
package memstore

import (
	"encoding/binary"
	"hash/maphash"
	"iter"
	"math/bits"
	"unsafe"

	"github.com/sluicehq/sluice/txn"
)

// Store is an in-memory txn.Store and txn.BatchStore. The zero Store is not
// usable: make one with New.
type Store struct {
	seed   maphash.Seed
	tables []table // by txn.Key.Table
}

// table is one table's index and arena.
type table struct {
	slots []uint64
	mask  uint64
	n     int    // keys held (deleted ones included: their slot stays)
	live  int    // bytes of the arena in current records
	data  []byte // the arena
}

const (
	tagShift = 40
	offMask  = 1<<tagShift - 1
	// maxLoad is the slots' fill, in sixteenths, past which the index
	// doubles.
	maxLoad = 12
)

// New returns an empty store with a new random hash seed.
func New() *Store { return &Store{seed: maphash.MakeSeed()} }

// Seed returns the seed of the store's hash, txn.KeyHash.
func (s *Store) Seed() maphash.Seed { return s.seed }

// Reserve sizes table t for n keys of about recordBytes bytes each (key
// and value), so that loading them neither rehashes nor reallocates.
func (s *Store) Reserve(t uint32, n, recordBytes int) {
	tb := s.table(t)
	if want := slotsFor(n); want > len(tb.slots) {
		tb.resize(s.seed, t, want)
	}
	if need := len(tb.data) + n*(recordBytes+2); need > cap(tb.data) {
		d := newArena(need)[:len(tb.data)]
		copy(d, tb.data)
		tb.data = d
	}
}

// newSlots returns n empty slots, on huge pages where the system allows.
func newSlots(n int) []uint64 {
	s := make([]uint64, n)
	adviseHuge(unsafe.Pointer(unsafe.SliceData(s)), n*8)
	return s
}

// newArena returns an empty arena of capacity n, on huge pages where the
// system allows.
func newArena(n int) []byte {
	d := make([]byte, 0, n)
	adviseHuge(unsafe.Pointer(unsafe.SliceData(d)), n)
	return d
}

// slotsFor returns the number of slots that holds n keys under maxLoad.
func slotsFor(n int) int {
	need := n*16/maxLoad + 1
	return max(16, 1<<bits.Len(uint(need-1)))
}

// table returns table t, adding empty tables up to it.
func (s *Store) table(t uint32) *table {
	for uint32(len(s.tables)) <= t {
		s.tables = append(s.tables, table{})
	}
	return &s.tables[t]
}

// Len returns the number of keys the store holds.
func (s *Store) Len() int {
	n := 0
	for i := range s.tables {
		for off := range s.tables[i].records() {
			if _, _, ok := s.tables[i].record(off); ok {
				n++
			}
		}
	}
	return n
}

// Get returns the value of k; it never fails.
func (s *Store) Get(k txn.Key) ([]byte, bool, error) {
	if int(k.Table) >= len(s.tables) {
		return nil, false, nil
	}
	v, ok := s.tables[k.Table].get(k.Key, txn.KeyHash(s.seed, k))
	return v, ok, nil
}

// GetBatch loads the values of keys, whose hashes under Seed are hashes,
// into out (all three of the same length); it never fails. The lookups go
// in groups: the group's home slots are read first, then the records they
// point to, so that the cache misses of a group overlap instead of
// following one another; a key not at its home slot is looked up alone.
func (s *Store) GetBatch(keys []txn.Key, hashes []uint64, out []txn.Value) (int, error) {
	const group = 16
	var slot [group]uint64
	for i := 0; i < len(keys); i += group {
		n := min(group, len(keys)-i)
		for j := range n {
			slot[j] = 0
			if t := keys[i+j].Table; int(t) < len(s.tables) {
				if tb := &s.tables[t]; len(tb.slots) > 0 {
					slot[j] = tb.slots[hashes[i+j]&tb.mask]
				}
			}
		}
		for j := range n {
			k, h, v := &keys[i+j], hashes[i+j], slot[j]
			if v == 0 {
				out[i+j] = txn.Value{}
				continue
			}
			tb := &s.tables[k.Table]
			if v>>tagShift == h>>tagShift {
				if key, val, ok := tb.record(v&offMask - 1); key == k.Key {
					out[i+j] = txn.Value{Bytes: val, Found: ok}
					continue
				}
			}
			val, ok := tb.get(k.Key, h)
			out[i+j] = txn.Value{Bytes: val, Found: ok}
		}
	}
	return 0, nil
}

// Put sets k to a copy of v.
func (s *Store) Put(k txn.Key, v []byte) { s.write(k, v, false) }

// Delete removes k.
func (s *Store) Delete(k txn.Key) { s.write(k, nil, true) }

func (s *Store) write(k txn.Key, v []byte, del bool) {
	tb := s.table(k.Table)
	h := txn.KeyHash(s.seed, k)
	if tb.n+1 > len(tb.slots)*maxLoad/16 {
		tb.resize(s.seed, k.Table, slotsFor(tb.n+1)*2)
	}
	i, found := tb.find(k.Key, h)
	if found {
		old := tb.slots[i]&offMask - 1
		tb.live -= tb.recordLen(old)
	} else if del {
		return
	} else {
		tb.n++
	}
	off := tb.appendRecord(k.Key, v, del)
	tb.slots[i] = (h>>tagShift)<<tagShift | (off + 1)
	tb.live += len(tb.data) - int(off)
	if len(tb.data) > 1<<20 && len(tb.data) > 2*tb.live {
		tb.compact(s.seed, k.Table)
	}
}

// Compact copies every table's current records into a new arena, dropping
// those that Puts and Deletes superseded, and the deleted keys.
func (s *Store) Compact() {
	for i := range s.tables {
		s.tables[i].compact(s.seed, uint32(i))
	}
}

// Clone returns a copy of the store, with its seed: a copy of each table's
// slots and live records.
func (s *Store) Clone() *Store {
	c := &Store{seed: s.seed, tables: make([]table, len(s.tables))}
	for i := range s.tables {
		tb := &s.tables[i]
		c.tables[i] = table{
			slots: newSlots(len(tb.slots)), mask: tb.mask, n: tb.n, live: tb.live,
			data: append(newArena(len(tb.data)+len(tb.data)/8), tb.data...),
		}
		copy(c.tables[i].slots, tb.slots)
	}
	return c
}

// All yields every key the store holds with its value, table by table, in
// no particular order within a table. The key strings and values alias the
// store's arena, which is never written in place: they stay valid and
// unchanged after the store changes.
func (s *Store) All() iter.Seq2[txn.Key, []byte] {
	return func(yield func(txn.Key, []byte) bool) {
		for t := range s.tables {
			tb := &s.tables[t]
			for off := range tb.records() {
				key, v, ok := tb.record(off)
				if ok && !yield(txn.Key{Table: uint32(t), Key: key}, v) {
					return
				}
			}
		}
	}
}

// records yields the arena offset of every key's current record.
func (tb *table) records() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		for _, v := range tb.slots {
			if v != 0 && !yield(v&offMask-1) {
				return
			}
		}
	}
}

// record decodes the record at off: its key, its value, and whether the
// key exists (false: a deleted key).
func (tb *table) record(off uint64) (string, []byte, bool) {
	d := tb.data[off:]
	kl, n := binary.Uvarint(d)
	vl, m := binary.Uvarint(d[n:])
	d = d[n+m:]
	key := unsafe.String(unsafe.SliceData(d), int(kl))
	if vl == 0 {
		return key, nil, false
	}
	v := d[kl : kl+vl-1 : kl+vl-1]
	return key, v, true
}

// recordLen returns the length of the record at off.
func (tb *table) recordLen(off uint64) int {
	d := tb.data[off:]
	kl, n := binary.Uvarint(d)
	vl, m := binary.Uvarint(d[n:])
	return n + m + int(kl) + int(max(vl, 1)-1)
}

// appendRecord appends k's record to the arena and returns its offset.
func (tb *table) appendRecord(key string, v []byte, del bool) uint64 {
	off := uint64(len(tb.data))
	if off+uint64(len(key)+len(v)+20) > offMask {
		panic("memstore: a table's arena is larger than 1 TiB")
	}
	tb.data = binary.AppendUvarint(tb.data, uint64(len(key)))
	vl := uint64(0)
	if !del {
		vl = uint64(len(v)) + 1
	}
	tb.data = binary.AppendUvarint(tb.data, vl)
	tb.data = append(tb.data, key...)
	tb.data = append(tb.data, v...)
	return off
}

// find returns the slot of key (hash h) and whether it holds the key; when
// it does not, the slot is the empty one where the key goes.
func (tb *table) find(key string, h uint64) (uint64, bool) {
	tag := h >> tagShift
	for i := h & tb.mask; ; i = (i + 1) & tb.mask {
		v := tb.slots[i]
		if v == 0 {
			return i, false
		}
		if v>>tagShift == tag && tb.keyAt(v&offMask-1) == key {
			return i, true
		}
	}
}

// keyAt returns the key of the record at off, aliasing the arena.
func (tb *table) keyAt(off uint64) string {
	d := tb.data[off:]
	kl, n := binary.Uvarint(d)
	_, m := binary.Uvarint(d[n:])
	return unsafe.String(unsafe.SliceData(d[n+m:]), int(kl))
}

// get returns the value of key (hash h).
func (tb *table) get(key string, h uint64) ([]byte, bool) {
	if len(tb.slots) == 0 {
		return nil, false
	}
	i, ok := tb.find(key, h)
	if !ok {
		return nil, false
	}
	_, v, ok := tb.record(tb.slots[i]&offMask - 1)
	return v, ok
}

// resize rebuilds the index of table t with size slots.
func (tb *table) resize(seed maphash.Seed, t uint32, size int) {
	old := tb.slots
	tb.slots, tb.mask = newSlots(size), uint64(size-1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		key := tb.keyAt(v&offMask - 1)
		h := txn.KeyHash(seed, txn.Key{Table: t, Key: key})
		i, _ := tb.find(key, h)
		tb.slots[i] = v
	}
}

// compact copies the current records of the keys that exist into a new
// arena, and rebuilds the index of table t without the deleted keys.
func (tb *table) compact(seed maphash.Seed, t uint32) {
	data := newArena(tb.live + tb.live/4)
	n := 0
	for i, v := range tb.slots {
		if v == 0 {
			continue
		}
		off := v&offMask - 1
		if _, _, ok := tb.record(off); !ok {
			tb.slots[i] = 0
			continue
		}
		l := tb.recordLen(off)
		tb.slots[i] = v&^offMask | uint64(len(data)+1)
		data = append(data, tb.data[off:off+uint64(l)]...)
		n++
	}
	tb.data, tb.live, tb.n = data, len(data), n
	// Deleted keys leave holes in the probe sequences: rebuild the index.
	tb.resize(seed, t, len(tb.slots))
}
