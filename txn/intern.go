package txn

import (
	"hash/maphash"
	"math/bits"
)

// KeyHash hashes a key with seed: the table is mixed in so that equal
// strings in two tables land apart. It never returns 0. The plan hashes
// every key it interns with it once, and hands the hashes to a BatchStore,
// whose Seed it uses, so that the store need not hash the key again.
func KeyHash(seed maphash.Seed, k Key) uint64 {
	h := maphash.String(seed, k.Key) ^ (uint64(k.Table)+1)*0x9e3779b97f4a7c15
	if h == 0 {
		h = 1
	}
	return h
}

// partOf returns the partition, of n, that owns the keys of hash h. It uses
// the upper half of the hash, as the tags of keyTable do; the slot index
// uses the lower half.
func partOf(h uint64, n int) int { return int((h >> 32) * uint64(n) >> 32) }

// keyTable interns the keys of one partition of a batch: it maps a Key to
// its keyState in the partition's slab.
//
// It is an open-addressing table with linear probing over a power-of-two
// array of slots, kept from batch to batch and sized to twice the
// partition's key accesses, so a batch of the same size neither allocates
// nor rehashes, and clearing it is one memclr. A slot holds the upper 32
// bits of the key's hash (a tag, so that a probe compares keys only when the
// tags match) and the slab index plus one (0 marks an empty slot). A Go map
// costs about twice as much per access, in its generic hashing and group
// probing, and is cleared bucket by bucket.
//
// The table is written only while the plan is built, by the worker that
// owns its partition; afterwards any number of workers may call find.
type keyTable struct {
	slots []uint64
	mask  uint64
}

// reset empties the table and sizes it for up to n distinct keys.
func (t *keyTable) reset(n int) {
	size := 16
	if n > 4 {
		size = max(size, 1<<bits.Len(uint(2*n-1)))
	}
	t.slots = reuse(t.slots, size)
	t.mask = uint64(size - 1)
}

// intern returns the slab index of k, whose hash is h, and whether it was
// added: a new key is appended to slab as a keyState with only its key set
// (the caller fills in the rest). The slab must have room for every key
// (the caller sizes it), so that pointers into it stay valid.
func (t *keyTable) intern(k Key, h uint64, slab *[]keyState) (int32, bool) {
	tag := h &^ 0xffffffff
	s := *slab
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		v := t.slots[i]
		if v == 0 {
			idx := int32(len(s))
			t.slots[i] = tag | uint64(idx+1)
			*slab = append(s, keyState{key: k})
			return idx, true
		}
		if v&^0xffffffff == tag {
			idx := int32(v&0xffffffff) - 1
			if s[idx].key == k {
				return idx, false
			}
		}
	}
}

// find returns the slab index of k, whose hash is h, or -1 if the table
// does not hold it.
func (t *keyTable) find(k Key, h uint64, slab []keyState) int32 {
	if len(t.slots) == 0 {
		return -1
	}
	tag := h &^ 0xffffffff
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		v := t.slots[i]
		if v == 0 {
			return -1
		}
		if v&^0xffffffff == tag {
			idx := int32(v&0xffffffff) - 1
			if slab[idx].key == k {
				return idx
			}
		}
	}
}
