package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/cespare/xxhash/v2"
)

// ExportIndex describes an export (ExportKeyGroup's output) entry by
// entry, by 64-bit hashes of each entry's key and value, so that
// ExportDelta can tell what a later export of the group changed without
// the earlier export at hand: 16 bytes an entry where the export holds the
// keys and values.
type ExportIndex struct {
	groups, kg int
	sum        uint32 // the export's checksum, which names it
	size       int
	sections   []indexSection
}

// indexSection is the index of one section of an export.
type indexSection struct {
	kind byte
	name string
	keys []uint64 // hash of each entry's key, in the export's order
	vals []uint64 // hash of each entry's value
}

// IndexExport indexes data, an export. It fails with an error matching
// ErrBadExport if data is not an export this build reads.
func IndexExport(data []byte) (*ExportIndex, error) {
	groups, kg, sum, sections, err := splitExport(data, "state: index a key group export")
	if err != nil {
		return nil, err
	}
	x := &ExportIndex{groups: groups, kg: kg, sum: sum, size: len(data), sections: make([]indexSection, len(sections))}
	for i, sec := range sections {
		is := &x.sections[i]
		is.kind, is.name = sec.kind, string(sec.name)
		is.keys, is.vals = make([]uint64, len(sec.entries)), make([]uint64, len(sec.entries))
		for j, e := range sec.entries {
			is.keys[j], is.vals[j] = xxhash.Sum64(e[0]), xxhash.Sum64(e[1])
		}
	}
	return x, nil
}

// KeyGroup returns the key group of the indexed export.
func (x *ExportIndex) KeyGroup() int { return x.kg }

// Size returns the indexed export's length in bytes.
func (x *ExportIndex) Size() int { return x.size }

// The delta format, version 1: what turns one export of a key group (the
// base) into a later one (the next). Integers are big-endian; uvarint is
// encoding/binary's.
//
//	"SLUICEKD"                     magic, 8 bytes
//	u8  version (1)
//	u32 key group count
//	u32 key group
//	u32 the base export's checksum
//	u32 the next export's checksum
//	sections, in the next export's order, each:
//	  u8 1 (table)  uvarint len, table name   or   u8 2 (timers)
//	  uvarint n, then n u64: hashes of the base's keys the next lacks
//	  puts: (uvarint len, key, uvarint len, value)*, then uvarint 0
//	u8 0                           end of sections
//	u32 CRC-32 (Castagnoli) of everything before
//
// A section's next entries are the base section's (same kind and name)
// less the keys listed, with the puts merged in key order, a put
// replacing the base's entry of the same key. The next export's checksum
// checks the result whole.
const (
	deltaMagic   = "SLUICEKD"
	deltaVersion = 1
)

// ExportDelta returns what turns the export base indexes into next, a
// later export of the same key group: the entries next adds or changes,
// and the hashes of the keys it drops. Applied to base by
// ApplyExportDelta, it makes next byte for byte. It fails with an error
// matching ErrBadExport if next is not an export this build reads, or is
// of another key group or key group count than base.
func ExportDelta(base *ExportIndex, next []byte) ([]byte, error) {
	what := fmt.Sprintf("state: delta of key group %d", base.kg)
	groups, kg, sum, sections, err := splitExport(next, what)
	if err != nil {
		return nil, err
	}
	if groups != base.groups || kg != base.kg {
		return nil, newError(ErrBadExport, nil, "%s: the export is of key group %d of %d, the base of %d of %d", what, kg, groups, base.kg, base.groups)
	}
	out := []byte(deltaMagic)
	out = append(out, deltaVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(groups))
	out = binary.BigEndian.AppendUint32(out, uint32(kg))
	out = binary.BigEndian.AppendUint32(out, base.sum)
	out = binary.BigEndian.AppendUint32(out, sum)
	for _, sec := range sections {
		out = append(out, sec.kind)
		if sec.kind == sectionTable {
			out = binary.AppendUvarint(out, uint64(len(sec.name)))
			out = append(out, sec.name...)
		}
		// The base's entries by key hash; those left at the end are the
		// keys next dropped.
		var had map[uint64]uint64
		var order []uint64
		if is := base.section(sec.kind, string(sec.name)); is != nil {
			had = make(map[uint64]uint64, len(is.keys))
			for j, k := range is.keys {
				had[k] = is.vals[j]
			}
			order = is.keys
		}
		puts := make([][2][]byte, 0, 16)
		for _, e := range sec.entries {
			k := xxhash.Sum64(e[0])
			if v, ok := had[k]; ok {
				delete(had, k)
				if v == xxhash.Sum64(e[1]) {
					continue
				}
			}
			puts = append(puts, e)
		}
		out = binary.AppendUvarint(out, uint64(len(had)))
		for _, k := range order {
			if _, ok := had[k]; ok {
				out = binary.BigEndian.AppendUint64(out, k)
			}
		}
		for _, e := range puts {
			out = binary.AppendUvarint(out, uint64(len(e[0])))
			out = append(out, e[0]...)
			out = binary.AppendUvarint(out, uint64(len(e[1])))
			out = append(out, e[1]...)
		}
		out = binary.AppendUvarint(out, 0)
	}
	out = append(out, sectionEnd)
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli)), nil
}

// section returns the index of base's section of kind and name, nil when
// it has none.
func (x *ExportIndex) section(kind byte, name string) *indexSection {
	for i := range x.sections {
		if s := &x.sections[i]; s.kind == kind && s.name == name {
			return s
		}
	}
	return nil
}

// ApplyExportDelta returns the export that delta (an ExportDelta output)
// makes of base. It fails with an error matching ErrBadExport, naming the
// fault, when delta is damaged or not a delta, when base is not the export
// delta was made against (its checksum differs), or when the result is not
// the export delta was made from.
func ApplyExportDelta(base, delta []byte) ([]byte, error) {
	groups, kg, baseSum, sections, err := splitExport(base, "state: apply a key group delta: its base")
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("state: apply a delta to key group %d", kg)
	bad := func(format string, args ...any) error {
		return newError(ErrBadExport, nil, what+": "+format, args...)
	}
	head := len(deltaMagic) + 1 + 4*4
	if len(delta) < head+1+4 || string(delta[:len(deltaMagic)]) != deltaMagic {
		return nil, bad("not a key group delta")
	}
	body, sum := delta[:len(delta)-4], binary.BigEndian.Uint32(delta[len(delta)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, bad("checksum mismatch: the delta is damaged")
	}
	if v := body[len(deltaMagic)]; v != deltaVersion {
		return nil, bad("delta format version %d; this build reads version %d", v, deltaVersion)
	}
	h := body[len(deltaMagic)+1:]
	dGroups, dKG := int(binary.BigEndian.Uint32(h)), int(binary.BigEndian.Uint32(h[4:]))
	dBase, nextSum := binary.BigEndian.Uint32(h[8:]), binary.BigEndian.Uint32(h[12:])
	if dGroups != groups || dKG != kg {
		return nil, bad("the delta is of key group %d of %d, the base of %d of %d", dKG, dGroups, kg, groups)
	}
	if dBase != baseSum {
		return nil, bad("the delta was made against another export of the group (checksum %08x, the base's %08x)", dBase, baseSum)
	}
	r := body[head:]
	next := func() ([]byte, bool) { return nextField(&r) }
	out := make([]byte, 0, len(base)+len(delta))
	out = append(out, exportMagic...)
	out = append(out, exportVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(groups))
	out = binary.BigEndian.AppendUint32(out, uint32(kg))
	entry := func(k, v []byte) {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
	for {
		if len(r) == 0 {
			return nil, bad("truncated")
		}
		kind := r[0]
		r = r[1:]
		var name []byte
		switch kind {
		case sectionEnd:
			if len(r) != 0 {
				return nil, bad("%d bytes after the end", len(r))
			}
			out = append(out, sectionEnd)
			out = binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
			if got := binary.BigEndian.Uint32(out[len(out)-4:]); got != nextSum {
				return nil, bad("the result's checksum is %08x, not the %08x of the export the delta was made from", got, nextSum)
			}
			return out, nil
		case sectionTable:
			var ok bool
			if name, ok = next(); !ok {
				return nil, bad("truncated table name")
			}
			out = append(out, sectionTable)
			out = binary.AppendUvarint(out, uint64(len(name)))
			out = append(out, name...)
		case sectionTimers:
			out = append(out, sectionTimers)
		default:
			return nil, bad("unknown section %d", kind)
		}
		n, w := binary.Uvarint(r)
		if w <= 0 || n > uint64(len(r)-w)/8 {
			return nil, bad("truncated list of dropped keys")
		}
		r = r[w:]
		dropped := make(map[uint64]bool, n)
		for range n {
			dropped[binary.BigEndian.Uint64(r)] = true
			r = r[8:]
		}
		var had [][2][]byte
		for i := range sections {
			if s := &sections[i]; s.kind == kind && bytes.Equal(s.name, name) {
				had = s.entries
				break
			}
		}
		// Merge the base's entries that stay with the puts, in key order.
		i := 0
		for {
			k, ok := next()
			if !ok {
				return nil, bad("truncated puts")
			}
			if len(k) == 0 {
				break
			}
			v, ok := next()
			if !ok {
				return nil, bad("truncated puts")
			}
			for ; i < len(had) && bytes.Compare(had[i][0], k) < 0; i++ {
				if !dropped[xxhash.Sum64(had[i][0])] {
					entry(had[i][0], had[i][1])
				}
			}
			if i < len(had) && bytes.Equal(had[i][0], k) {
				i++ // replaced
			}
			entry(k, v)
		}
		for ; i < len(had); i++ {
			if !dropped[xxhash.Sum64(had[i][0])] {
				entry(had[i][0], had[i][1])
			}
		}
		out = binary.AppendUvarint(out, 0)
	}
}
