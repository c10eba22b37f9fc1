package state

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Reader reads the committed contents of a data directory without loading
// them into memory and without writing to it, for `sluice state dump` and
// other tools.
//
// Pebble locks a data directory against every other opener, readers
// included: OpenReadOnly fails with ErrLocked while a pipeline has the
// directory open. Read a running pipeline's state through its Store
// (Store.Read; the HTTP API's /api/v1/state), or stop it first. On a
// read-only file system, where the lock file cannot be created and no
// process can write the directory through that mount, OpenReadOnly reads
// without the lock.
type Reader struct {
	dir    string
	db     *pebble.DB
	lock   *pebble.Lock
	health *health
	meta   meta
	closed bool
}

// OpenReadOnly opens the data directory dir for reading. The directory must
// hold a Sluice store.
func OpenReadOnly(dir string) (_ *Reader, err error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("state: open data directory: %w", err)
	}
	log := slog.New(slog.DiscardHandler)
	h := newHealth(dir, log)
	defer h.recoverFatal(&err, false)
	db, lock, err := openPebble(dir, pebbleConfig{log: log, health: h, readOnly: true, sync: true})
	if err != nil {
		return nil, err
	}
	r := &Reader{dir: dir, db: db, lock: lock, health: h}
	m, found, err := readMeta(db, dir)
	if err == nil && !found {
		err = newError(ErrCorrupt, nil, "state: %s holds no Sluice state (no layout record)", dir)
	}
	if err == nil && m.version != layoutVersion {
		err = newError(ErrLayout, nil,
			"state: %s uses layout version %d of an older sluice, which read-only access cannot migrate; "+
				"open it once with a writable store (`sluice run` on it migrates it), then read it", dir, m.version)
	}
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	r.meta = m
	return r, nil
}

// KeyGroups returns the directory's key group count.
func (r *Reader) KeyGroups() int { return r.meta.groups }

// Tables returns the names of the committed tables, sorted.
func (r *Reader) Tables() []string { return slices.Sorted(maps.Keys(r.meta.tables)) }

// Positions returns the committed source positions.
func (r *Reader) Positions() map[string]uint64 { return maps.Clone(r.meta.positions) }

// Scan calls fn for every plain key of table, in key order, as Store.Scan
// does.
func (r *Reader) Scan(table string, fn func(key, value []byte) error) error {
	return r.ScanKeys(table, func(k Key, v []byte) error {
		if !k.plain() {
			return nil
		}
		return fn(k.Route, v)
	})
}

// ScanKeys calls fn for every key of table, as Store.ScanKeys does.
func (r *Reader) ScanKeys(table string, fn func(key Key, value []byte) error) (err error) {
	defer r.health.recoverFatal(&err, false)
	if r.closed {
		return newError(ErrClosed, nil, "state: scan table %q in %s: the store is closed", table, r.dir)
	}
	id, ok := r.meta.tables[table]
	if !ok {
		return newError(ErrUnknownTable, nil, "state: scan table %q in %s: no such table", table, r.dir)
	}
	return scanTable(r.db, r.dir, table, id, r.meta.groups, fn)
}

// Close releases the directory. It is idempotent.
func (r *Reader) Close() (err error) {
	defer r.health.recoverFatal(&err, false)
	if r.closed {
		return nil
	}
	r.closed = true
	if err := r.health.Err(); err != nil {
		return err
	}
	r.health.closing.Store(true)
	err = r.db.Close()
	if lerr := r.lock.Close(); err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("state: close %s: %w", r.dir, err)
	}
	return nil
}
