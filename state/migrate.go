package state

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// migrate rewrites a data directory of layout 1 to the current layout in
// one atomic batch: every state key gets the key encoding of its plain key
// (key.go), and the layout record says so. A crash during the migration
// leaves the directory of layout 1, migrated again at the next Open.
func (s *Store) migrate() error {
	start := time.Now()
	type kv struct{ k, v []byte }
	var rewritten []kv
	lower := []byte{prefixState}
	err := forEach(s.db, lower, prefixEnd(lower), func(k, v []byte) error {
		id, kg, key, err := parseStateKey(k)
		if err != nil {
			return err
		}
		if kg >= s.groups {
			return fmt.Errorf("state key %x: key group %d out of range (%d groups)", k, kg, s.groups)
		}
		nk := appendKey(appendGroupPrefix(nil, id, kg), key, nil, nil)
		rewritten = append(rewritten, kv{nk, append([]byte(nil), v...)})
		return nil
	})
	if err != nil {
		return newError(ErrCorrupt, err, "state: migrate %s from layout %d", s.dir, layoutV1)
	}
	b := s.db.NewBatch()
	defer b.Close()
	// The old keys go first, as one range deletion: a new key may equal an
	// old one, and the writes after the deletion survive it.
	err = b.DeleteRange(lower, prefixEnd(lower), nil)
	for _, e := range rewritten {
		if err == nil {
			err = b.Set(e.k, e.v, nil)
		}
	}
	if err == nil {
		err = b.Set(metaLayout, encodeU32(layoutVersion), nil)
	}
	if err == nil {
		err = s.db.Apply(b, pebble.Sync)
	}
	if err != nil {
		return fmt.Errorf("state: migrate %s from layout %d to %d: %w", s.dir, layoutV1, layoutVersion, err)
	}
	s.log.Info("state layout migrated", "from", layoutV1, "to", layoutVersion,
		"keys", len(rewritten), "duration", time.Since(start))
	return nil
}
