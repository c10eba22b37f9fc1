package txn

import (
	"fmt"
	"sort"
)

// visibleTxn reports whether a version written by transaction w is visible
// to an operation of transaction r: its own transaction's earlier versions
// always are; another's unless that transaction is aborted, as currently
// believed (live for eager abort handling, the pass's snapshot for lazy).
func (x *run) visibleTxn(w, r int32) bool {
	if w == r {
		return true
	}
	if x.eager {
		return x.failCount[w].Load() == 0
	}
	return !x.hidden[w]
}

// read returns the value of ks visible at timestamp ts to transaction txn;
// pos is the latest deterministic writer of ks before ts (-1: none).
func (x *run) read(ks *keyState, pos int32, ts uint64, txn int32) Value {
	have := false
	var best uint64
	var v Value
	for p := pos; p >= 0; p = x.ops[p].prevWriter {
		w := &x.ops[p]
		if w.written && x.visibleTxn(w.txn, txn) {
			have, best, v = true, w.ts, Value{Bytes: w.value, Found: !w.del}
			break
		}
	}
	for i := len(ks.nd) - 1; i >= 0; i-- {
		nv := &ks.nd[i]
		if nv.ts >= ts {
			continue
		}
		if have && nv.ts < best {
			break
		}
		if x.visibleTxn(nv.txn, txn) {
			have, v = true, Value{Bytes: nv.value, Found: !nv.del}
			break
		}
	}
	if !have {
		return Value{Bytes: ks.committed, Found: ks.committedOK}
	}
	return v
}

// latestBefore returns the latest deterministic writer of ks before ts.
func (x *run) latestBefore(ks *keyState, ts uint64) int32 {
	p := ks.last
	for p >= 0 && x.ops[p].ts >= ts {
		p = x.ops[p].prevWriter
	}
	return p
}

// lookup finds the state of k for a non-deterministic operation, creating it
// (and loading its committed value) if the batch has not seen it. create is
// only set for keys of the operation's own table, which it holds exclusively.
// A Store error (a *StoreError) creates nothing: a later lookup tries again.
func (x *run) lookup(k Key, create bool) (*keyState, error) {
	if ks := x.plan.lookup(k); ks != nil {
		return ks, nil
	}
	m := x.dyn[k.Table]
	if ks := m[k.Key]; ks != nil || !create {
		return ks, nil
	}
	v, ok, err := x.store.Get(k)
	if err != nil {
		return nil, &StoreError{Key: k, Err: err}
	}
	ks := &keyState{key: k, committed: v, committedOK: ok, chain: -1, last: -1}
	m[k.Key] = ks
	return ks, nil
}

type ndWrite struct {
	ks    *keyState
	value []byte
	del   bool
}

// access is a worker's Access, reset for every execution.
type access struct {
	x   *run
	w   int
	o   *opState
	buf []ndWrite
	err error
}

func (a *access) fail(err error) error {
	return a.failWith(fmt.Errorf("%w: %v", ErrUndeclared, err))
}

// failWith fails the operation with err (the first error counts) and
// returns it.
func (a *access) failWith(err error) error {
	if a.err == nil {
		a.err = err
	}
	return err
}

func (a *access) Worker() int { return a.w }

func (a *access) Own() ([]byte, bool) {
	if a.o.ks == nil {
		return nil, false
	}
	return a.o.obs.Own.Bytes, a.o.obs.Own.Found
}

func (a *access) Read(i int) ([]byte, bool) {
	if i < 0 || i >= len(a.o.obs.Reads) {
		a.fail(fmt.Errorf("read index %d of %d declared reads", i, len(a.o.obs.Reads)))
		return nil, false
	}
	v := a.o.obs.Reads[i]
	return v.Bytes, v.Found
}

func (a *access) Window(i int) []Version {
	if a.o.op.Window == 0 {
		a.fail(fmt.Errorf("window of read %d: the operation is not a windowed read", i))
		return nil
	}
	if i < 0 || i >= len(a.o.obs.Windows) {
		a.fail(fmt.Errorf("window of read index %d of %d declared reads", i, len(a.o.obs.Windows)))
		return nil
	}
	return a.o.obs.Windows[i]
}

func (a *access) Get(k Key) ([]byte, bool, error) {
	op := a.o.op
	for i := range a.buf {
		if a.buf[i].ks.key == k {
			return a.buf[i].value, !a.buf[i].del, nil
		}
	}
	idx, err := checkGet(op, k)
	if err != nil {
		return nil, false, a.fail(err)
	}
	switch {
	case idx == getOwn:
		return a.o.obs.Own.Bytes, a.o.obs.Own.Found, nil
	case idx >= 0:
		v := a.o.obs.Reads[idx]
		return v.Bytes, v.Found, nil
	}
	ks, err := a.x.lookup(k, true)
	if err != nil {
		return nil, false, a.failWith(err)
	}
	v := a.x.read(ks, a.x.latestBefore(ks, a.o.ts), a.o.ts, a.o.txn)
	a.o.obs.Gets = append(a.o.obs.Gets, KeyValue{Key: k, Value: v})
	return v.Bytes, v.Found, nil
}

func (a *access) Put(k Key, v []byte) error { return a.write(k, v, false) }

func (a *access) Delete(k Key) error { return a.write(k, nil, true) }

func (a *access) write(k Key, v []byte, del bool) error {
	if err := checkPut(a.o.op, k); err != nil {
		return a.fail(err)
	}
	for i := range a.buf {
		if a.buf[i].ks.key == k {
			a.buf[i].value, a.buf[i].del = v, del
			return nil
		}
	}
	ks, err := a.x.lookup(k, true)
	if err != nil {
		return a.failWith(err)
	}
	a.buf = append(a.buf, ndWrite{ks: ks, value: v, del: del})
	return nil
}

const (
	getOwn   = -1
	getScope = -2
)

// checkGet says how an operation may Get k: its own key (getOwn), declared
// read i (i >= 0), a key of its non-deterministic scope (getScope), or not.
func checkGet(op *Op, k Key) (int, error) {
	for i := range op.Reads {
		if op.Reads[i] == k {
			return i, nil
		}
	}
	if op.NonDet {
		if k.Table == op.Table {
			return getScope, nil
		}
		return 0, fmt.Errorf("get %v: non-deterministic operation is scoped to table %d", k, op.Table)
	}
	if op.Write == k {
		return getOwn, nil
	}
	return 0, fmt.Errorf("get %v: not the operation's key %v nor a declared read", k, op.Write)
}

// checkPut says whether an operation may Put or Delete k.
func checkPut(op *Op, k Key) error {
	if !op.NonDet {
		return fmt.Errorf("write %v: a deterministic operation writes only its key %v, through its Effect", k, op.Write)
	}
	if k.Table != op.Table {
		return fmt.Errorf("write %v: non-deterministic operation is scoped to table %d", k, op.Table)
	}
	return nil
}

// undoND removes the versions a non-deterministic operation published.
func (x *run) undoND(o *opState) {
	for _, ks := range o.ndWrites {
		for i := range ks.nd {
			if ks.nd[i].ts == o.ts {
				ks.nd = append(ks.nd[:i], ks.nd[i+1:]...)
				break
			}
		}
	}
	o.ndWrites = o.ndWrites[:0]
}

// publishND inserts a non-deterministic operation's writes as versions.
func (x *run) publishND(o *opState, buf []ndWrite) {
	for _, w := range buf {
		ks := w.ks
		i := sort.Search(len(ks.nd), func(i int) bool { return ks.nd[i].ts > o.ts })
		ks.nd = append(ks.nd, ndVersion{})
		copy(ks.nd[i+1:], ks.nd[i:])
		ks.nd[i] = ndVersion{ts: o.ts, txn: o.txn, value: w.value, del: w.del}
		o.ndWrites = append(o.ndWrites, ks)
	}
}
