package txn

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
)

// History is a WindowStore: a Store of committed values together with the
// versions that the last Window transactions committed, per key, so that
// the windowed reads of a batch see the versions of earlier batches.
//
// The caller runs a batch against the History and then hands the Result to
// Commit, which records the batch's versions (Result.Versions), advances
// the History past the batch and drops every version older than the last
// Window transactions: no windowed read of Window transactions or less can
// read it again. It holds at most Window transactions' writes, whatever
// the length of the stream. Versions may be called concurrently (Run
// does); Commit must not run at the same time as a Run.
//
// The versions are kept in memory. A caller that commits them with its
// state, so that windows reach back across a restart, calls Track and
// then hands Changes' journal to its store at each commit, and Restore
// fills a new History from what it stored.
type History struct {
	Store
	window uint64
	next   uint64                   // sequence number of the next batch's first transaction
	keys   map[Key][]historyVersion // per key, oldest first
	fifo   []historyEntry           // every version held, oldest first, from head on
	head   int

	// The journal of Commit's changes since the last Changes (when
	// tracked): versions recorded, then versions dropped.
	tracked bool
	put     []HistoryVersion
	dropped []HistoryVersion
}

// HistoryVersion is one version a History holds: the value transaction
// Seq wrote to Key (Seq counts every transaction committed to the
// History, from 0). A dropped version's Value is unset.
type HistoryVersion struct {
	Seq   uint64
	Key   Key
	Value Value
}

// HistoryChanges are what Commit changed in a History since the last call
// of Changes: the versions it recorded and those it dropped, in that
// order (a version may be in both), and the sequence number of the next
// transaction.
type HistoryChanges struct {
	Put, Dropped []HistoryVersion
	Next         uint64
}

type historyVersion struct {
	seq   uint64
	value Value
}

type historyEntry struct {
	seq uint64
	key Key
}

// NewHistory returns an empty History over store that keeps the versions
// of the last window transactions.
func NewHistory(store Store, window uint64) (*History, error) {
	if store == nil {
		return nil, fmt.Errorf("txn: history: the store is nil")
	}
	if window == 0 {
		return nil, fmt.Errorf("txn: history: window is 0, want at least 1 transaction")
	}
	return &History{Store: store, window: window, keys: map[Key][]historyVersion{}}, nil
}

// Track makes h keep a journal of what Commit changes, for Changes.
func (h *History) Track() { h.tracked = true }

// Changes returns what Commit changed since the last call (Track must have
// been called) and empties the journal. The slices are valid until the
// next Commit.
func (h *History) Changes() HistoryChanges {
	c := HistoryChanges{Put: h.put, Dropped: h.dropped, Next: h.next}
	h.put, h.dropped = h.put[:0], h.dropped[:0]
	return c
}

// Restore fills h, which must be new, with versions (in any order) and
// the sequence number of the next transaction, as a store kept them from
// Changes, or as Held and Next give them: the History goes on as the one
// that made them. Versions older than h's window are left out (the window
// may be smaller than theirs), as dropped ones in the journal when h is
// tracked.
func (h *History) Restore(next uint64, versions []HistoryVersion) error {
	if h.next != 0 || h.Len() != 0 {
		return fmt.Errorf("txn: history: restore into a history in use")
	}
	lo := uint64(0)
	if next > h.window {
		lo = next - h.window
	}
	vs := slices.Clone(versions)
	slices.SortStableFunc(vs, func(a, b HistoryVersion) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, v := range vs {
		if v.Seq >= next {
			return fmt.Errorf("txn: history: a version of transaction %d, at or after the next one (%d)", v.Seq, next)
		}
		if v.Seq < lo {
			if h.tracked {
				h.dropped = append(h.dropped, HistoryVersion{Seq: v.Seq, Key: v.Key})
			}
			continue
		}
		h.keys[v.Key] = append(h.keys[v.Key], historyVersion{seq: v.Seq, value: v.Value})
		h.fifo = append(h.fifo, historyEntry{seq: v.Seq, key: v.Key})
	}
	h.next = next
	return nil
}

// Held returns every version h holds, oldest first.
func (h *History) Held() []HistoryVersion {
	out := make([]HistoryVersion, 0, h.Len())
	seen := map[Key]int{} // versions of each key listed so far
	for _, e := range h.fifo[h.head:] {
		v := h.keys[e.key][seen[e.key]]
		seen[e.key]++
		out = append(out, HistoryVersion{Seq: v.seq, Key: e.key, Value: v.value})
	}
	return out
}

// Next returns the sequence number of the next transaction: the number of
// transactions committed to h.
func (h *History) Next() uint64 { return h.next }

// Window returns the number of transactions whose versions h keeps.
func (h *History) Window() uint64 { return h.window }

// Len returns the number of versions h holds.
func (h *History) Len() int { return len(h.fifo) - h.head }

// Versions returns the versions of k committed by the last n transactions
// before the next batch, oldest first. n larger than the History's window
// fails with ErrWindow.
func (h *History) Versions(k Key, n uint64) ([]Version, error) {
	if n > h.window {
		return nil, fmt.Errorf("%w: a read of %v over %d transactions, the history keeps %d", ErrWindow, k, n, h.window)
	}
	vs := h.keys[k]
	lo := uint64(0)
	if h.next > n {
		lo = h.next - n
	}
	i := sort.Search(len(vs), func(i int) bool { return vs[i].seq >= lo })
	if i == len(vs) {
		return nil, nil
	}
	out := make([]Version, len(vs)-i)
	for j, v := range vs[i:] {
		out[j] = Version{Back: h.next - v.seq, Value: v.value}
	}
	return out, nil
}

// Commit records the versions of a batch run against h (res.Versions),
// advances h past the batch and drops the versions older than its window.
func (h *History) Commit(res *Result) {
	for _, w := range res.Versions {
		seq := h.next + uint64(w.Txn)
		vs := h.keys[w.Key]
		if h.tracked {
			h.put = append(h.put, HistoryVersion{Seq: seq, Key: w.Key, Value: w.Value})
		}
		if n := len(vs); n > 0 && vs[n-1].seq == seq {
			vs[n-1].value = w.Value
			continue
		}
		h.keys[w.Key] = append(vs, historyVersion{seq: seq, value: w.Value})
		h.fifo = append(h.fifo, historyEntry{seq: seq, key: w.Key})
	}
	h.next += uint64(len(res.Committed))
	if h.next <= h.window {
		return
	}
	lo := h.next - h.window
	for h.head < len(h.fifo) && h.fifo[h.head].seq < lo {
		k := h.fifo[h.head].key
		if h.tracked {
			h.dropped = append(h.dropped, HistoryVersion{Seq: h.fifo[h.head].seq, Key: k})
		}
		h.fifo[h.head] = historyEntry{}
		h.head++
		if vs := h.keys[k]; len(vs) <= 1 {
			delete(h.keys, k)
		} else {
			vs[0] = historyVersion{}
			h.keys[k] = vs[1:]
		}
	}
	if h.head > len(h.fifo)/2 {
		n := copy(h.fifo, h.fifo[h.head:])
		clear(h.fifo[n:])
		h.fifo, h.head = h.fifo[:n], 0
	}
}

// addWrite records transaction t's write of k in vs, whose entries from
// start on are t's: a key it wrote already keeps its place and takes the
// new value.
func addWrite(vs []Write, start, t int, k Key, v Value) []Write {
	for i := start; i < len(vs); i++ {
		if vs[i].Key == k {
			vs[i].Value = v
			return vs
		}
	}
	return append(vs, Write{Txn: t, Key: k, Value: v})
}

// windowKeys returns the keys that a batch's windowed reads read, nil if
// it has none: the serial executor and S-Store keep the versions of these
// keys only.
func windowKeys(batch []Txn) map[Key]bool {
	var keys map[Key]bool
	for t := range batch {
		for m := range batch[t].Ops {
			op := &batch[t].Ops[m]
			if op.Window == 0 {
				continue
			}
			if keys == nil {
				keys = map[Key]bool{}
			}
			for _, k := range op.Reads {
				keys[k] = true
			}
		}
	}
	return keys
}

// txnVersion is a committed version in the serial executor and S-Store.
type txnVersion struct {
	txn   int
	value Value
}

// windowOf returns the window of w transactions before transaction t over
// vs (the key's versions in the batch, by transaction) and, when store is
// a WindowStore, the versions of earlier batches.
func windowOf(store Store, k Key, vs []txnVersion, t int, w uint32) ([]Version, error) {
	lo := t - int(w)
	var out []Version
	if lo < 0 {
		if ws, ok := store.(WindowStore); ok {
			hv, err := ws.Versions(k, uint64(-lo))
			if err != nil {
				return nil, err
			}
			out = make([]Version, len(hv), len(hv)+len(vs))
			for i, v := range hv {
				out[i] = Version{Back: v.Back + uint64(t), Value: v.Value}
			}
		}
	}
	i := sort.Search(len(vs), func(i int) bool { return vs[i].txn >= lo })
	for ; i < len(vs) && vs[i].txn < t; i++ {
		out = append(out, Version{Back: uint64(t - vs[i].txn), Value: vs[i].value})
	}
	return out, nil
}

// window returns the window of w transactions before transaction txn over
// ks, as of the current pass: pos is the key's latest deterministic writer
// before the reader. tmp is scratch.
func (x *run) window(ks *keyState, pos int32, txn int32, w uint32, tmp []windowCand) ([]Version, []windowCand, error) {
	lo := int64(txn) - int64(w)
	cands := tmp[:0]
	for p := pos; p >= 0; p = x.ops[p].prevWriter {
		o := &x.ops[p]
		if o.txn >= txn {
			continue
		}
		if int64(o.txn) < lo {
			break
		}
		if o.written && x.visibleTxn(o.txn, txn) {
			cands = append(cands, windowCand{ts: o.ts, txn: o.txn, value: versionValue(o.value, o.del)})
		}
	}
	nDet := len(cands)
	start := makeTS(int(txn), 0)
	for i := len(ks.nd) - 1; i >= 0; i-- {
		nv := &ks.nd[i]
		if nv.ts >= start {
			continue
		}
		if int64(nv.txn) < lo {
			break
		}
		if x.visibleTxn(nv.txn, txn) {
			cands = append(cands, windowCand{ts: nv.ts, txn: nv.txn, value: versionValue(nv.value, nv.del)})
		}
	}
	if len(cands) > nDet && nDet > 0 {
		slices.SortFunc(cands, func(a, b windowCand) int {
			switch {
			case a.ts > b.ts:
				return -1
			case a.ts < b.ts:
				return 1
			}
			return 0
		})
	}
	var out []Version
	if lo < 0 {
		if ws, ok := x.store.(WindowStore); ok {
			hv, err := ws.Versions(ks.key, uint64(-lo))
			if err != nil {
				return nil, cands, err
			}
			out = make([]Version, len(hv), len(hv)+len(cands))
			for i, v := range hv {
				out[i] = Version{Back: v.Back + uint64(txn), Value: v.Value}
			}
		}
	}
	// cands are newest first: the first of each transaction is its last
	// write.
	for i := len(cands) - 1; i >= 0; i-- {
		c := &cands[i]
		if i > 0 && cands[i-1].txn == c.txn {
			continue
		}
		out = append(out, Version{Back: uint64(txn - c.txn), Value: c.value})
	}
	return out, cands, nil
}

// versionValue is a version's value: a deletion holds no bytes.
func versionValue(b []byte, del bool) Value {
	if del {
		return Value{}
	}
	return Value{Bytes: b, Found: true}
}

type windowCand struct {
	ts    uint64
	txn   int32
	value Value
}

// windows computes the windows of a windowed read o into o.obs.Windows.
func (x *run) windows(o *opState, tmp []windowCand) ([]windowCand, error) {
	for i := range o.obs.Windows {
		r := o.r0 + int32(i)
		v, t, err := x.window(x.readKS[r], x.readPos[r], o.txn, o.op.Window, tmp)
		tmp = t
		if err != nil {
			return tmp, err
		}
		o.obs.Windows[i] = v
	}
	return tmp, nil
}

// sameWindows reports whether o's windows would be what it read.
func (x *run) sameWindows(o *opState) bool {
	var tmp []windowCand
	for i, was := range o.obs.Windows {
		r := o.r0 + int32(i)
		v, t, err := x.window(x.readKS[r], x.readPos[r], o.txn, o.op.Window, tmp)
		tmp = t
		if err != nil {
			// The History answers the same read the same way: unchanged
			// if it failed the operation before.
			return o.err != nil
		}
		if !sameVersions(v, was) {
			return false
		}
	}
	return true
}

func sameVersions(a, b []Version) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Back != b[i].Back || !a[i].Value.Equal(b[i].Value) {
			return false
		}
	}
	return true
}
