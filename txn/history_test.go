package txn_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn"
)

// TestHistoryRestore commits random batches' versions to a tracked
// History, keeps its journal (Changes) as a store would, and restores new
// Histories from what is kept (or from the History's Held versions) at
// random points, some with a smaller window: each answers every windowed
// read as the original does, and goes on alike through the next batches.
func TestHistoryRestore(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		window := uint64(rapid.IntRange(1, 20).Draw(rt, "window"))
		keys := []txn.Key{{Table: 0, Key: "a"}, {Table: 0, Key: "b"}, {Table: 1, Key: "a"}}
		orig, _ := txn.NewHistory(txn.MapStore{}, window)
		orig.Track()
		type stored struct {
			seq uint64
			key txn.Key
		}
		kept := map[stored]txn.Value{}
		var next uint64
		var restored []*txn.History
		var windows []uint64
		commit := func(h *txn.History, res *txn.Result) { h.Commit(res) }
		for b := range rapid.IntRange(1, 12).Draw(rt, "batches") {
			n := rapid.IntRange(1, 8).Draw(rt, "transactions")
			res := &txn.Result{Committed: make([]bool, n)}
			for i := range n {
				res.Committed[i] = true
				for k, key := range keys {
					if rapid.IntRange(0, 2).Draw(rt, "write") == 0 {
						v := txn.Value{Bytes: []byte(fmt.Sprintf("%d.%d.%d", b, i, k)), Found: rapid.IntRange(0, 4).Draw(rt, "delete") > 0}
						res.Versions = append(res.Versions, txn.Write{Txn: i, Key: key, Value: v})
					}
				}
			}
			commit(orig, res)
			for _, h := range restored {
				commit(h, res)
			}
			c := orig.Changes()
			for _, v := range c.Put {
				kept[stored{v.Seq, v.Key}] = v.Value
			}
			for _, v := range c.Dropped {
				delete(kept, stored{v.Seq, v.Key})
			}
			next = c.Next
			if rapid.Bool().Draw(rt, "restore") {
				w := window - uint64(rapid.IntRange(0, int(window-1)).Draw(rt, "smaller by"))
				h, _ := txn.NewHistory(txn.MapStore{}, w)
				var vs []txn.HistoryVersion
				for s, v := range kept {
					vs = append(vs, txn.HistoryVersion{Seq: s.seq, Key: s.key, Value: v})
				}
				from := next
				if rapid.Bool().Draw(rt, "from held") {
					// What a swap hands over: the History's own versions.
					vs, from = orig.Held(), orig.Next()
				}
				if err := h.Restore(from, vs); err != nil {
					rt.Fatal(err)
				}
				restored, windows = append(restored, h), append(windows, w)
			}
			if orig.Len() != len(kept) {
				rt.Fatalf("batch %d: the store keeps %d versions, the History holds %d", b, len(kept), orig.Len())
			}
			for r, h := range restored {
				for _, key := range keys {
					for w := uint64(1); w <= windows[r]; w++ {
						got, err1 := h.Versions(key, w)
						want, err2 := orig.Versions(key, w)
						if err1 != nil || err2 != nil || !slices.EqualFunc(got, want, func(a, b txn.Version) bool { return a.Back == b.Back && a.Value.Equal(b.Value) }) {
							rt.Fatalf("batch %d, history %d (window %d): versions of %v over %d: %v, %v; want %v", b, r, windows[r], key, w, got, err1, want)
						}
					}
				}
			}
		}
	})
}

// Restore refuses a History in use and a version not before the next
// transaction.
func TestHistoryRestoreErrors(t *testing.T) {
	h, _ := txn.NewHistory(txn.MapStore{}, 4)
	if err := h.Restore(3, []txn.HistoryVersion{{Seq: 3, Key: txn.Key{Key: "a"}}}); err == nil {
		t.Error("a version of the next transaction restored")
	}
	h, _ = txn.NewHistory(txn.MapStore{}, 4)
	h.Commit(&txn.Result{Committed: []bool{true}, Versions: []txn.Write{{Key: txn.Key{Key: "a"}}}})
	if err := h.Restore(5, nil); err == nil {
		t.Error("a History in use restored")
	}
}
