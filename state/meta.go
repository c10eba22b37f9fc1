package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// meta is what a data directory records besides state entries.
type meta struct {
	version   uint32
	groups    int
	tables    map[string]uint32
	positions map[string]uint64
	user      map[string][]byte // Store.SetMeta
	gens      []uint64          // generation per key group (Store.Generation)
}

// readMeta reads the metadata and positions of the store in db. found is
// false when the store has no layout record: it is new (or not Sluice's).
func readMeta(db pebble.Reader, dir string) (m meta, found bool, err error) {
	corrupt := func(err error) error {
		return newError(ErrCorrupt, err, "state: data directory %s", dir)
	}
	v, closer, err := db.Get(metaLayout)
	if errors.Is(err, pebble.ErrNotFound) {
		return meta{}, false, nil
	}
	if err != nil {
		return meta{}, false, fmt.Errorf("state: read metadata in %s: %w", dir, err)
	}
	version, err := decodeU32("layout version", v)
	_ = closer.Close()
	if err != nil {
		return meta{}, false, corrupt(err)
	}
	if version != layoutVersion && version != layoutV1 {
		return meta{}, false, newError(ErrLayout, nil,
			"state: data directory %s uses layout version %d; this build reads versions %d and %d (a newer sluice wrote it)",
			dir, version, layoutV1, layoutVersion)
	}

	v, closer, err = db.Get(metaKeyGroups)
	if err != nil {
		return meta{}, false, corrupt(fmt.Errorf("key group count: %w", err))
	}
	groups, err := decodeU32("key group count", v)
	_ = closer.Close()
	if err != nil {
		return meta{}, false, corrupt(err)
	}
	if groups == 0 || groups > MaxKeyGroups {
		return meta{}, false, corrupt(fmt.Errorf("key group count %d out of range", groups))
	}
	m = meta{version: version, groups: int(groups), tables: map[string]uint32{},
		positions: map[string]uint64{}, user: map[string][]byte{}, gens: make([]uint64, groups)}

	ids := map[uint32]string{}
	err = forEach(db, metaTablePrefix, prefixEnd(metaTablePrefix), func(k, v []byte) error {
		name := string(k[len(metaTablePrefix):])
		id, err := decodeU32(fmt.Sprintf("id of table %q", name), v)
		if err != nil {
			return err
		}
		if other, dup := ids[id]; dup {
			return fmt.Errorf("tables %q and %q share id %d", other, name, id)
		}
		ids[id] = name
		m.tables[name] = id
		return nil
	})
	if err != nil {
		return meta{}, false, corrupt(err)
	}

	err = forEach(db, metaUserPrefix, prefixEnd(metaUserPrefix), func(k, v []byte) error {
		m.user[string(k[len(metaUserPrefix):])] = bytes.Clone(v)
		return nil
	})
	if err != nil {
		return meta{}, false, corrupt(err)
	}

	err = forEach(db, metaGenPrefix, prefixEnd(metaGenPrefix), func(k, v []byte) error {
		if len(k) != len(metaGenPrefix)+2 {
			return fmt.Errorf("generation key %x: want a 2-byte key group", k)
		}
		kg := int(binary.BigEndian.Uint16(k[len(metaGenPrefix):]))
		if kg >= m.groups {
			return fmt.Errorf("generation of key group %d: out of range (%d groups)", kg, m.groups)
		}
		g, err := decodeU64(fmt.Sprintf("generation of key group %d", kg), v)
		if err != nil {
			return err
		}
		m.gens[kg] = g
		return nil
	})
	if err != nil {
		return meta{}, false, corrupt(err)
	}

	posPrefix := []byte{prefixPosition}
	err = forEach(db, posPrefix, prefixEnd(posPrefix), func(k, v []byte) error {
		source := string(k[1:])
		p, err := decodeU64(fmt.Sprintf("position of source %q", source), v)
		if err != nil {
			return err
		}
		m.positions[source] = p
		return nil
	})
	if err != nil {
		return meta{}, false, corrupt(err)
	}
	return m, true, nil
}
