package state

import "github.com/cespare/xxhash/v2"

// keyIndex maps a group's keys to their slots in Group.entries: its plain
// keys (Group.index), or the encodings of its namespaced keys
// (ordIndex.index).
//
// It is an open-addressing table with linear probing over a power-of-two
// array of words. A word holds the high 32 bits of the key's XXH64 hash
// (the hash KeyGroup routes by, so a Session hashes a key once for both)
// above the slot + 1; 0 is an empty word. The key itself is read from the
// entry only when the hash bits match. The high bits are used because
// every key of a group shares its hash modulo the group count, which with
// a power-of-two count fixes the low bits.
//
// Compared with a map[string]int32 it holds no pointers, so the garbage
// collector does not scan it however many keys a table has; it takes 8
// bytes a word at a load of at most 3/4; and a lookup touches one word
// before the entry, without hashing the key again.
//
// A deletion moves back the words after it that would otherwise be cut
// off from their home (no tombstones), so a lookup ends at the first
// empty word.
type keyIndex struct {
	words []uint64
	n     int
}

// keyHash returns the bits of key's XXH64 hash that keyIndex indexes by.
func keyHash(key []byte) uint32 { return indexBits(xxhash.Sum64(key)) }

// indexBits returns the bits of a key's XXH64 hash that keyIndex indexes by.
func indexBits(h uint64) uint32 { return uint32(h >> 32) }

// find returns the slot of key, whose keyHash is h.
func (x *keyIndex) find(entries []entry, key []byte, h uint32) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := uint32(len(x.words) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		w := x.words[i]
		if w == 0 {
			return 0, false
		}
		if uint32(w>>32) == h {
			if slot := int32(uint32(w)) - 1; entries[slot].key == string(key) {
				return slot, true
			}
		}
	}
}

// home returns the slot that the word at the home of a key whose keyHash
// is h holds, when that word bears h: the key's slot, unless another key
// with the same hash bits is there (the caller compares the keys). It
// loads one word, so that Session.GetAll and Table.WriteAll can load the
// words of several keys before they look at any entry.
func (x *keyIndex) home(h uint32) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	w := x.words[h&uint32(len(x.words)-1)]
	return int32(uint32(w)) - 1, w != 0 && uint32(w>>32) == h
}

// insert adds slot for a key, whose keyHash is h, that is not in the index.
func (x *keyIndex) insert(h uint32, slot int32) {
	if (x.n+1)*4 > len(x.words)*3 {
		x.grow()
	}
	x.put(h, uint64(h)<<32|uint64(uint32(slot)+1))
	x.n++
}

// put stores w in the first empty word from h's home on.
func (x *keyIndex) put(h uint32, w uint64) {
	mask := uint32(len(x.words) - 1)
	i := h & mask
	for x.words[i] != 0 {
		i = (i + 1) & mask
	}
	x.words[i] = w
}

// grow doubles the table (to 8 words at first) and places every word again.
func (x *keyIndex) grow() {
	old := x.words
	x.words = make([]uint64, max(8, 2*len(old)))
	for _, w := range old {
		if w != 0 {
			x.put(uint32(w>>32), w)
		}
	}
}

// remove takes slot, whose key's keyHash is h, out of the index. The slot
// must be in it.
func (x *keyIndex) remove(h uint32, slot int32) {
	mask := uint32(len(x.words) - 1)
	want := uint64(h)<<32 | uint64(uint32(slot)+1)
	i := h & mask
	for x.words[i] != want {
		i = (i + 1) & mask
	}
	// Move back every later word of the run whose home is not in the
	// cyclic interval (i, j]: a lookup from its home would stop at the hole.
	for j := (i + 1) & mask; x.words[j] != 0; j = (j + 1) & mask {
		home := uint32(x.words[j]>>32) & mask
		var stays bool
		if i <= j {
			stays = i < home && home <= j
		} else {
			stays = i < home || home <= j
		}
		if !stays {
			x.words[i] = x.words[j]
			i = j
		}
	}
	x.words[i] = 0
	x.n--
}

// len returns the number of keys in the index.
func (x *keyIndex) len() int { return x.n }
