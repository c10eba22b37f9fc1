package state

import "github.com/cespare/xxhash/v2"

// DefaultKeyGroups is the number of key groups a new data directory gets
// when Options.KeyGroups is zero.
const DefaultKeyGroups = 128

// MaxKeyGroups is the largest key group count: the persisted layout stores
// a key group as a 16-bit number.
const MaxKeyGroups = 1 << 16

// KeyGroup returns the key group of key among groups key groups: the
// 64-bit XXH64 hash of key with seed 0, modulo groups.
//
// The function is part of the persisted layout and must never change: a
// data directory written with one mapping and read with another would serve
// every key from the wrong group. XXH64 is a published, versioned algorithm
// (not Go's randomly seeded map hash and not hash/maphash), fast on short
// keys, and well mixed in its low bits, so the modulo spreads keys evenly
// even when groups is a power of two.
//
// groups must be between 1 and MaxKeyGroups; KeyGroup panics otherwise.
func KeyGroup(key []byte, groups int) int {
	if groups <= 0 || groups > MaxKeyGroups {
		panic("state: KeyGroup: group count out of range")
	}
	return keyGroupOf(xxhash.Sum64(key), groups)
}

// keyGroupOf is KeyGroup of a key whose XXH64 hash is h.
func keyGroupOf(h uint64, groups int) int { return int(h % uint64(groups)) }
