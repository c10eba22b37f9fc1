package state

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
)

// The key group export format, version 1. Integers are big-endian;
// uvarint is encoding/binary's.
//
//	"SLUICEKG"                     magic, 8 bytes
//	u8  version (1)
//	u32 key group count of the store exported from
//	u32 key group
//	sections, each:
//	  u8 1 (table)  uvarint len, table name, entries
//	  u8 2 (timers) entries
//	  entries: (uvarint len, key, uvarint len, value)*, then uvarint 0
//	u8 0                           end of sections
//	u32 CRC-32 (Castagnoli) of everything before
//
// A table's keys are key encodings (key.go), a timer's key is a timer key
// (timer.go) with an empty value; both are what Pebble stores after the
// table and key group, so an export is a copy of the group's key ranges.
const (
	exportMagic   = "SLUICEKG"
	exportVersion = 1

	sectionEnd    = 0
	sectionTable  = 1
	sectionTimers = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ExportKeyGroup returns the committed state of key group kg, every
// table's entries and its timers, in a self-describing, versioned format
// that ImportKeyGroup reads.
//
// It exports committed state only and refuses, with an error matching
// ErrUncommitted, a key group that has changes not yet prepared (dirty
// entries or timers, a drop or import) or while a PendingCommit has not
// finished: export after the Commit that follows the group's last write.
// It reads a Pebble snapshot, not memory, but checks the group's dirty
// marks: no writer of kg may run meanwhile; writers of other groups may.
func (s *Store) ExportKeyGroup(kg int) (_ []byte, err error) {
	defer s.health.recoverFatal(&err, false)
	if kg < 0 || kg >= s.groups {
		return nil, fmt.Errorf("state: export key group %d of %s: out of range 0..%d", kg, s.dir, s.groups-1)
	}
	s.readers.RLock()
	defer s.readers.RUnlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, newError(ErrClosed, nil, "state: export key group %d of %s: the store is closed", kg, s.dir)
	}
	why := ""
	switch {
	case s.tail != nil && !s.tail.finished():
		why = "a prepared commit has not finished"
	case s.drops[kg]:
		why = "it was dropped or imported since the last commit"
	case s.timers.groups[kg].Dirty() > 0:
		why = "it has uncommitted timers"
	}
	type tab struct {
		name string
		id   uint32
	}
	var tables []tab
	for _, t := range s.tables {
		if why == "" && t.groups[kg].Dirty() > 0 {
			why = fmt.Sprintf("table %q has uncommitted entries", t.name)
		}
		tables = append(tables, tab{t.name, t.id})
	}
	s.mu.Unlock()
	if why != "" {
		return nil, newError(ErrUncommitted, nil, "state: export key group %d of %s: %s", kg, s.dir, why)
	}

	snap := s.db.NewSnapshot()
	defer func() {
		if cerr := snap.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("state: export key group %d of %s: %w", kg, s.dir, cerr)
		}
	}()
	out := []byte(exportMagic)
	out = append(out, exportVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(s.groups))
	out = binary.BigEndian.AppendUint32(out, uint32(kg))
	section := func(lower []byte) error {
		_, err := scanRange(snap, lower, prefixEnd(lower), func(k, v []byte) bool {
			suffix := k[len(lower):]
			out = binary.AppendUvarint(out, uint64(len(suffix)))
			out = append(out, suffix...)
			out = binary.AppendUvarint(out, uint64(len(v)))
			out = append(out, v...)
			return true
		})
		out = binary.AppendUvarint(out, 0)
		return err
	}
	for _, t := range tables {
		out = append(out, sectionTable)
		out = binary.AppendUvarint(out, uint64(len(t.name)))
		out = append(out, t.name...)
		if err := section(appendGroupPrefix(nil, t.id, kg)); err != nil {
			return nil, fmt.Errorf("state: export key group %d of %s: %w", kg, s.dir, err)
		}
	}
	out = append(out, sectionTimers)
	if err := section(appendTimerGroupPrefix(nil, kg)); err != nil {
		return nil, fmt.Errorf("state: export key group %d of %s: %w", kg, s.dir, err)
	}
	out = append(out, sectionEnd)
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli)), nil
}

// finished reports whether p's Commit has run to its end.
func (p *PendingCommit) finished() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExportedKeyGroup reads the header of data, an ExportKeyGroup output, and
// returns the key group it holds and the key group count of the store it
// was exported from, after checking its checksum. It does not decode the
// entries (ImportKeyGroup does). It fails with an error matching
// ErrBadExport if data is not an export this build reads.
func ExportedKeyGroup(data []byte) (kg, groups int, err error) {
	_, groups, kg, _, err = exportHeader(data, "state: key group export")
	if err != nil {
		return 0, 0, err
	}
	if groups < 1 || groups > MaxKeyGroups || kg >= groups {
		return 0, 0, newError(ErrBadExport, nil, "state: key group export: key group %d of %d out of range", kg, groups)
	}
	return kg, groups, nil
}

// exportHeader checks data's magic, checksum and version and returns what
// follows the header (up to the checksum), the header's fields and the
// checksum. what names the operation for errors.
func exportHeader(data []byte, what string) (rest []byte, groups, kg int, sum uint32, err error) {
	bad := func(format string, args ...any) error {
		return newError(ErrBadExport, nil, what+": "+format, args...)
	}
	head := len(exportMagic) + 1 + 4 + 4
	if len(data) < head+1+4 || string(data[:len(exportMagic)]) != exportMagic {
		return nil, 0, 0, 0, bad("not a key group export")
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, 0, 0, 0, bad("checksum mismatch: the export is damaged")
	}
	if v := body[len(exportMagic)]; v != exportVersion {
		return nil, 0, 0, 0, bad("export format version %d; this build reads version %d", v, exportVersion)
	}
	groups = int(binary.BigEndian.Uint32(body[len(exportMagic)+1:]))
	kg = int(binary.BigEndian.Uint32(body[len(exportMagic)+5:]))
	return body[head:], groups, kg, sum, nil
}

// exported is a decoded export.
type exported struct {
	tables []exportedTable
	timers [][]byte
}

type exportedTable struct {
	name    string
	entries [][2][]byte // key encoding, value
}

// rawSection is one section of an export, its entries undecoded.
type rawSection struct {
	kind    byte
	name    []byte      // a table's name; nil for the timers
	entries [][2][]byte // key, value, in the export's order
}

// splitExport checks data's framing and checksum and cuts it into its
// sections, decoding no key. what names the operation for errors; the
// returned header fields are the export's own.
func splitExport(data []byte, what string) (groups, kg int, sum uint32, sections []rawSection, err error) {
	bad := func(format string, args ...any) error {
		return newError(ErrBadExport, nil, what+": "+format, args...)
	}
	r, groups, kg, sum, err := exportHeader(data, what)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	next := func() ([]byte, bool) { return nextField(&r) }
	for {
		if len(r) == 0 {
			return 0, 0, 0, nil, bad("truncated")
		}
		sec := rawSection{kind: r[0]}
		r = r[1:]
		switch sec.kind {
		case sectionEnd:
			if len(r) != 0 {
				return 0, 0, 0, nil, bad("%d bytes after the end", len(r))
			}
			return groups, kg, sum, sections, nil
		case sectionTable:
			name, ok := next()
			if !ok {
				return 0, 0, 0, nil, bad("truncated table name")
			}
			sec.name = name
		case sectionTimers:
		default:
			return 0, 0, 0, nil, bad("unknown section %d", sec.kind)
		}
		for {
			k, ok := next()
			if !ok {
				return 0, 0, 0, nil, bad("%s: truncated", sec.title())
			}
			if len(k) == 0 {
				break
			}
			v, ok := next()
			if !ok {
				return 0, 0, 0, nil, bad("%s: truncated", sec.title())
			}
			sec.entries = append(sec.entries, [2][]byte{k, v})
		}
		sections = append(sections, sec)
	}
}

// nextField cuts the next length-prefixed field (a uvarint length, then
// that many bytes) off the front of *r and returns it, or false when *r
// is too short for it.
func nextField(r *[]byte) ([]byte, bool) {
	n, w := binary.Uvarint(*r)
	if w <= 0 || n > uint64(len(*r)-w) {
		return nil, false
	}
	b := (*r)[w : w+int(n)]
	*r = (*r)[w+int(n):]
	return b, true
}

// title names the section in errors: `table "name"` or "timers".
func (s *rawSection) title() string {
	if s.kind == sectionTimers {
		return "timers"
	}
	return fmt.Sprintf("table %q", s.name)
}

// parseExport decodes and checks an export of key group kg among groups.
func parseExport(data []byte, kg, groups int) (*exported, error) {
	what := fmt.Sprintf("state: import key group %d", kg)
	bad := func(format string, args ...any) error {
		return newError(ErrBadExport, nil, what+": "+format, args...)
	}
	n, g, _, sections, err := splitExport(data, what)
	if err != nil {
		return nil, err
	}
	if n != groups {
		return nil, bad("exported from a store of %d key groups; this one has %d", n, groups)
	}
	if g != kg {
		return nil, bad("the export holds key group %d", g)
	}
	x := &exported{}
	for _, sec := range sections {
		if sec.kind == sectionTimers {
			for _, e := range sec.entries {
				tm, err := decodeTimer(e[0])
				if err != nil {
					return nil, bad("timers: %v", err)
				}
				if got := KeyGroup(tm.Route, groups); got != kg {
					return nil, bad("timer %q of route %q belongs to key group %d", tm.Name, tm.Route, got)
				}
				x.timers = append(x.timers, e[0])
			}
			continue
		}
		t := exportedTable{name: string(sec.name), entries: sec.entries}
		for _, e := range sec.entries {
			key, err := decodeKey(e[0])
			if err != nil {
				return nil, bad("table %q: %v", sec.name, err)
			}
			if got := KeyGroup(key.Route, groups); got != kg {
				return nil, bad("table %q: key %s belongs to key group %d", sec.name, key, got)
			}
		}
		x.tables = append(x.tables, t)
	}
	return x, nil
}

// ImportKeyGroup replaces the content of key group kg, in every table and
// the timer index, with data, an ExportKeyGroup of kg from a store with
// the same key group count; tables it names are created. The change is
// made in memory, marked dirty, and made durable by the next Commit, which
// also deletes what the group held in Pebble.
//
// It fails with an error matching ErrBadExport, changing nothing, if data
// is not such an export. Like Prepare, it must not run while a writer
// runs, and it ends the Sessions' undo epoch.
func (s *Store) ImportKeyGroup(kg int, data []byte) error {
	if kg < 0 || kg >= s.groups {
		return fmt.Errorf("state: import key group %d into %s: out of range 0..%d", kg, s.dir, s.groups-1)
	}
	x, err := parseExport(data, kg, s.groups)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return newError(ErrClosed, nil, "state: import key group %d into %s: the store is closed", kg, s.dir)
	}
	s.dropLocked(kg)
	for _, xt := range x.tables {
		g := s.tableLocked(xt.name).Group(kg)
		for _, e := range xt.entries {
			key, _ := decodeKey(e[0]) // checked by parseExport
			if key.plain() {
				g.Put(key.Route, e[1])
			} else {
				g.putOrd(e[0], e[1])
			}
		}
	}
	g := &s.timers.groups[kg]
	for _, k := range x.timers {
		g.putOrd(k, nil)
	}
	return nil
}

// DropKeyGroup removes every entry and timer of key group kg from memory
// and stages a range deletion of the group's keys in Pebble, made durable
// by the next Commit. Like Prepare, it must not run while a writer runs,
// and it ends the Sessions' undo epoch.
func (s *Store) DropKeyGroup(kg int) error {
	if kg < 0 || kg >= s.groups {
		return fmt.Errorf("state: drop key group %d of %s: out of range 0..%d", kg, s.dir, s.groups-1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return newError(ErrClosed, nil, "state: drop key group %d of %s: the store is closed", kg, s.dir)
	}
	s.dropLocked(kg)
	return nil
}

// dropLocked empties key group kg in memory and stages its range deletion.
func (s *Store) dropLocked(kg int) {
	for _, t := range append(slices.Clip(s.tables), s.timers) {
		t.groups[kg].reset(t, kg)
	}
	s.drops[kg] = true
	s.epoch++
}
