package state

import (
	"encoding/binary"
	"fmt"
)

// The Pebble key layout. doc.go describes it; every byte written to Pebble
// is produced by the functions in this file.
const (
	prefixMeta     byte = 0x00
	prefixPosition byte = 0x01
	prefixState    byte = 0x02
	prefixTimer    byte = 0x03

	// layoutVersion is stored under metaLayout and checked at open. Layout
	// 1 stored a state key as is after its table and key group; layout 2
	// stores the key encoding of key.go, and adds timers and user metadata.
	// Open migrates a directory of layout 1 (migrate.go).
	layoutVersion uint32 = 2
	layoutV1      uint32 = 1

	// stateHeaderLen is prefixState + table id (u32) + key group (u16).
	stateHeaderLen = 1 + 4 + 2
	// timerPrefixLen is prefixTimer + key group (u16).
	timerPrefixLen = 1 + 2
)

var (
	metaLayout      = []byte{prefixMeta, 'l', 'a', 'y', 'o', 'u', 't'}
	metaKeyGroups   = []byte{prefixMeta, 'k', 'e', 'y', '-', 'g', 'r', 'o', 'u', 'p', 's'}
	metaTablePrefix = []byte{prefixMeta, 't', 'a', 'b', 'l', 'e', '/'}
	metaUserPrefix  = []byte{prefixMeta, 'm', 'e', 't', 'a', '/'}
	metaGenPrefix   = []byte{prefixMeta, 'g', 'e', 'n', '/'}
)

// appendGenKey appends the metadata key of key group kg's generation.
func appendGenKey(dst []byte, kg int) []byte {
	dst = append(dst, metaGenPrefix...)
	return binary.BigEndian.AppendUint16(dst, uint16(kg))
}

// metaUserKey is the metadata key of the user metadata name (Store.SetMeta).
func metaUserKey(name string) []byte {
	k := make([]byte, 0, len(metaUserPrefix)+len(name))
	k = append(k, metaUserPrefix...)
	return append(k, name...)
}

// appendTimerGroupPrefix appends the prefix of every timer of key group kg.
func appendTimerGroupPrefix(dst []byte, kg int) []byte {
	dst = append(dst, prefixTimer)
	return binary.BigEndian.AppendUint16(dst, uint16(kg))
}

// metaTableKey is the metadata key recording the id of table name.
func metaTableKey(name string) []byte {
	k := make([]byte, 0, len(metaTablePrefix)+len(name))
	k = append(k, metaTablePrefix...)
	return append(k, name...)
}

// appendPositionKey appends the key of source's committed position.
func appendPositionKey(dst []byte, source string) []byte {
	dst = append(dst, prefixPosition)
	return append(dst, source...)
}

// appendGroupPrefix appends the prefix shared by every key of one key group
// of one table.
func appendGroupPrefix(dst []byte, table uint32, kg int) []byte {
	dst = append(dst, prefixState)
	dst = binary.BigEndian.AppendUint32(dst, table)
	return binary.BigEndian.AppendUint16(dst, uint16(kg))
}

// appendStateKey appends the Pebble key of the entry e in key group kg of
// table.
func appendStateKey(dst []byte, table uint32, kg int, e *entry) []byte {
	dst = appendGroupPrefix(dst, table, kg)
	if e.ord {
		return append(dst, e.key...)
	}
	return appendRouteKey(dst, e.key)
}

// parseStateKey splits a Pebble state key; key is the key encoding (layout
// 2) or the plain key (layout 1).
func parseStateKey(k []byte) (table uint32, kg int, key []byte, err error) {
	if len(k) < stateHeaderLen || k[0] != prefixState {
		return 0, 0, nil, fmt.Errorf("state key %x is too short", k)
	}
	return binary.BigEndian.Uint32(k[1:5]), int(binary.BigEndian.Uint16(k[5:7])), k[stateHeaderLen:], nil
}

// prefixEnd returns the smallest key greater than every key starting with
// prefix, for an exclusive iterator upper bound, or nil if there is none.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

func encodeU32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func decodeU32(what string, b []byte) (uint32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("%s: %d-byte value, want 4", what, len(b))
	}
	return binary.BigEndian.Uint32(b), nil
}

func decodeU64(what string, b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%s: %d-byte value, want 8", what, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}
