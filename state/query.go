package state

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// ErrBadQuery: a Query asks for something that cannot be read: a key group
// out of range, a limit below 1, a cursor no page returned.
var ErrBadQuery = errors.New("bad state query")

// MaxQueryLimit bounds Query.Limit.
const MaxQueryLimit = 10000

// Query selects committed entries for one page of Store.Read or
// Reader.Read.
type Query struct {
	// Table names the one table to read; "": every table.
	Table string
	// Prefix keeps only the keys whose routing key starts with it.
	Prefix []byte
	// KeyGroup keeps only the keys of that key group; -1: every group.
	KeyGroup int
	// After is the Next of the previous page; "": from the start.
	After string
	// Limit is the most entries the page holds, 1..MaxQueryLimit.
	Limit int
}

// Entry is one committed key of a table. Key is the routing key; a
// namespaced key also has a Namespace or User (nil for a plain key).
type Entry struct {
	Table     string
	Key       []byte
	Namespace []byte
	User      []byte
	Value     []byte
	KeyGroup  int
}

// Page is one answer of Read: entries in the order Read documents, and
// the cursor of the next page, "" when there is none.
type Page struct {
	Entries []Entry
	Next    string
}

// Read returns one page of the committed entries q selects, from one
// consistent snapshot of Pebble: writes not yet committed are not seen and
// a Commit running at the same time is seen entirely or not at all. Each
// page is its own snapshot: a Commit between two pages may be seen by the
// second. Entries come in the order they are stored: by table (in the
// order tables were created), then key group, then key.
//
// It fails with ErrUnknownTable for a q.Table the store does not have and
// with ErrBadQuery for a query out of range. Read is safe while the
// executor runs: it reads Pebble, never the tables in memory.
func (s *Store) Read(q Query) (_ Page, err error) {
	defer s.health.recoverFatal(&err, false)
	s.readers.RLock()
	defer s.readers.RUnlock()
	s.mu.Lock()
	closed := s.closed
	tables := make(map[string]uint32, len(s.byName))
	for name, t := range s.byName {
		tables[name] = t.id
	}
	s.mu.Unlock()
	if closed {
		return Page{}, newError(ErrClosed, nil, "state: read %s: the store is closed", s.dir)
	}
	return readPage(s.db, s.dir, tables, s.groups, q)
}

// Read returns one page of the committed entries q selects, as Store.Read
// does.
func (r *Reader) Read(q Query) (_ Page, err error) {
	defer r.health.recoverFatal(&err, false)
	if r.closed {
		return Page{}, newError(ErrClosed, nil, "state: read %s: the store is closed", r.dir)
	}
	return readPage(r.db, r.dir, r.meta.tables, r.meta.groups, q)
}

// readPage serves Read over db, whose tables and key group count are given.
func readPage(db *pebble.DB, dir string, tables map[string]uint32, groups int, q Query) (_ Page, err error) {
	if q.Limit < 1 || q.Limit > MaxQueryLimit {
		return Page{}, newError(ErrBadQuery, nil, "state: read %s: limit %d out of range 1..%d", dir, q.Limit, MaxQueryLimit)
	}
	if q.KeyGroup < -1 || q.KeyGroup >= groups {
		return Page{}, newError(ErrBadQuery, nil, "state: read %s: key group %d out of range 0..%d", dir, q.KeyGroup, groups-1)
	}
	var after []byte
	if q.After != "" {
		after, err = base64.RawURLEncoding.DecodeString(q.After)
		if err == nil {
			_, _, _, err = parseStateKey(after)
		}
		if err != nil {
			return Page{}, newError(ErrBadQuery, nil, "state: read %s: cursor %q is not one a page returned", dir, q.After)
		}
	}
	names := make(map[uint32]string, len(tables))
	var ids []uint32
	for name, id := range tables {
		if q.Table == "" || q.Table == name {
			names[id] = name
			ids = append(ids, id)
		}
	}
	if q.Table != "" && len(ids) == 0 {
		return Page{}, newError(ErrUnknownTable, nil, "state: read table %q in %s: no such table", q.Table, dir)
	}
	slices.Sort(ids)
	first, last := 0, groups-1
	if q.KeyGroup >= 0 {
		first, last = q.KeyGroup, q.KeyGroup
	}

	snap := db.NewSnapshot()
	defer func() {
		if cerr := snap.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("state: read %s: %w", dir, cerr)
		}
	}()
	var page Page
	var lastKey []byte
	var derr error // a key that does not decode
	for _, id := range ids {
		for kg := first; kg <= last; kg++ {
			lower := appendEscaped(appendGroupPrefix(nil, id, kg), q.Prefix)
			upper := prefixEnd(lower)
			if after != nil {
				if upper != nil && bytes.Compare(after, upper) >= 0 {
					continue
				}
				if bytes.Compare(after, lower) >= 0 {
					// The smallest key after the cursor.
					lower = append(slices.Clip(after), 0)
				}
			}
			full, err := scanRange(snap, lower, upper, func(k, v []byte) bool {
				if len(page.Entries) == q.Limit {
					page.Next = base64.RawURLEncoding.EncodeToString(lastKey)
					return false
				}
				_, _, enc, _ := parseStateKey(k)
				var key Key
				key, derr = decodeKey(enc)
				if derr != nil {
					return false
				}
				e := Entry{Table: names[id], Key: bytes.Clone(key.Route), Value: bytes.Clone(v), KeyGroup: kg}
				if !key.plain() {
					e.Namespace, e.User = bytes.Clone(key.Namespace), bytes.Clone(key.User)
					if e.Namespace == nil {
						e.Namespace = []byte{}
					}
					if e.User == nil {
						e.User = []byte{}
					}
				}
				page.Entries = append(page.Entries, e)
				lastKey = append(lastKey[:0], k...)
				return true
			})
			if err != nil {
				return Page{}, fmt.Errorf("state: read %s: %w", dir, err)
			}
			if derr != nil {
				return Page{}, newError(ErrCorrupt, derr, "state: read %s", dir)
			}
			if !full {
				return page, nil
			}
		}
	}
	return page, nil
}

// scanRange calls fn for each entry of snap in [lower, upper) until fn
// returns false; full reports that fn never did.
func scanRange(snap *pebble.Snapshot, lower, upper []byte, fn func(k, v []byte) bool) (full bool, err error) {
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return false, err
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return false, err
		}
		if !fn(it.Key(), v) {
			return false, nil
		}
	}
	return true, it.Error()
}
