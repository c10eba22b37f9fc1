package state

import (
	"bytes"
	"container/heap"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// scanTable calls fn for every entry of table id in Pebble, in key order
// (route, namespace, user key), by merging one iterator per key group over
// one snapshot.
func scanTable(db *pebble.DB, dir, name string, id uint32, groups int, fn func(key Key, value []byte) error) (err error) {
	snap := db.NewSnapshot()
	var h cursorHeap
	fail := func(e error) error { return fmt.Errorf("state: scan table %q in %s: %w", name, dir, e) }
	defer func() {
		// Close errors are joined to err only when there are some, so that an
		// error returned by fn comes back unchanged.
		var closeErrs []error
		for _, c := range h {
			closeErrs = append(closeErrs, c.it.Close())
		}
		closeErrs = append(closeErrs, snap.Close())
		if cerr := errors.Join(closeErrs...); cerr != nil {
			err = errors.Join(err, fail(cerr))
		}
	}()

	for kg := range groups {
		lower := appendGroupPrefix(nil, id, kg)
		it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
		if err != nil {
			return fail(err)
		}
		if !it.First() {
			err := it.Close()
			if err != nil {
				return fail(err)
			}
			continue
		}
		h = append(h, &cursor{it: it})
	}
	heap.Init(&h)
	for len(h) > 0 {
		c := h[0]
		v, err := c.it.ValueAndErr()
		if err != nil {
			return fail(err)
		}
		key, err := decodeKey(c.key())
		if err != nil {
			return fail(err)
		}
		if err := fn(key, v); err != nil {
			return err
		}
		if c.it.Next() {
			heap.Fix(&h, 0)
			continue
		}
		heap.Pop(&h)
		if err := c.it.Close(); err != nil {
			return fail(err)
		}
	}
	return nil
}

// cursor is one key group's iterator in the merge.
type cursor struct{ it *pebble.Iterator }

func (c *cursor) key() []byte { return c.it.Key()[stateHeaderLen:] }

// cursorHeap orders cursors by their current key encoding.
type cursorHeap []*cursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return bytes.Compare(h[i].key(), h[j].key()) < 0 }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return c
}
