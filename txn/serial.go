package txn

import (
	"context"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync/atomic"
	"time"
)

// entry is a value written in the batch (or its deletion).
type entry struct {
	value []byte
	del   bool
}

type keyEntry struct {
	key Key
	entry
}

// txnExec runs one transaction alone, the way the serial executor does:
// operations in order, each reading its transaction's own earlier writes,
// then state through get; it stops at the first abort or error. writes
// receives the transaction's writes, in order, when it commits.
type txnExec struct {
	get    func(Key) (Value, error)
	window func(k Key, t int, w uint32) ([]Version, error)
	apply  Apply
	local  []keyEntry
	acc    serialAccess
	useful time.Duration
}

// exec runs transaction t; obs receives what its operations read.
func (e *txnExec) exec(t int, tx *Txn, obs []Observed) (committed bool, err error) {
	e.local = e.local[:0]
	for m := range tx.Ops {
		op := &tx.Ops[m]
		o := &obs[m]
		o.Executed = true
		var err error
		if !op.NonDet {
			if o.Own, err = e.lookup(op.Write); err != nil {
				return false, &OpError{Txn: t, Op: m, Err: err}
			}
		}
		for i, k := range op.Reads {
			if o.Reads[i], err = e.lookup(k); err != nil {
				return false, &OpError{Txn: t, Op: m, Err: err}
			}
		}
		if op.Window > 0 && len(op.Reads) > 0 {
			o.Windows = make([][]Version, len(op.Reads))
			for i, k := range op.Reads {
				if o.Windows[i], err = e.window(k, t, op.Window); err != nil {
					return false, &OpError{Txn: t, Op: m, Err: err}
				}
			}
		}
		a := &e.acc
		a.e, a.op, a.o, a.buf, a.err = e, op, o, a.buf[:0], nil
		t0 := time.Now()
		eff, err := e.apply(t, m, op, a)
		e.useful += time.Since(t0)
		if err == nil {
			err = a.err
		}
		if err != nil {
			return false, &OpError{Txn: t, Op: m, Err: err}
		}
		if eff.Abort {
			return false, nil
		}
		if op.NonDet {
			e.local = append(e.local, a.buf...)
		} else if !eff.Keep {
			v := eff.Value
			if eff.Delete {
				v = nil
			}
			e.local = append(e.local, keyEntry{op.Write, entry{v, eff.Delete}})
		}
	}
	return true, nil
}

// writes appends transaction t's versions (its writes, e.local) to vs, as
// Result.Versions lists them.
func (e *txnExec) writes(vs []Write, t int) []Write {
	start := len(vs)
	for _, w := range e.local {
		vs = addWrite(vs, start, t, w.key, versionValue(w.value, w.del))
	}
	return vs
}

func (e *txnExec) lookup(k Key) (Value, error) {
	for i := len(e.local) - 1; i >= 0; i-- {
		if e.local[i].key == k {
			return Value{Bytes: e.local[i].value, Found: !e.local[i].del}, nil
		}
	}
	return e.get(k)
}

// serialAccess is the Access of the serial executor and of S-Store.
type serialAccess struct {
	e   *txnExec
	w   int
	op  *Op
	o   *Observed
	buf []keyEntry
	err error
}

func (a *serialAccess) fail(err error) error {
	return a.failWith(fmt.Errorf("%w: %v", ErrUndeclared, err))
}

// failWith fails the operation with err (the first error counts) and
// returns it.
func (a *serialAccess) failWith(err error) error {
	if a.err == nil {
		a.err = err
	}
	return err
}

func (a *serialAccess) Worker() int { return a.w }

func (a *serialAccess) Own() ([]byte, bool) {
	if a.op.NonDet {
		return nil, false
	}
	return a.o.Own.Bytes, a.o.Own.Found
}

func (a *serialAccess) Read(i int) ([]byte, bool) {
	if i < 0 || i >= len(a.o.Reads) {
		a.fail(fmt.Errorf("read index %d of %d declared reads", i, len(a.o.Reads)))
		return nil, false
	}
	return a.o.Reads[i].Bytes, a.o.Reads[i].Found
}

func (a *serialAccess) Window(i int) []Version {
	if a.op.Window == 0 {
		a.fail(fmt.Errorf("window of read %d: the operation is not a windowed read", i))
		return nil
	}
	if i < 0 || i >= len(a.o.Windows) {
		a.fail(fmt.Errorf("window of read index %d of %d declared reads", i, len(a.o.Windows)))
		return nil
	}
	return a.o.Windows[i]
}

func (a *serialAccess) Get(k Key) ([]byte, bool, error) {
	for i := len(a.buf) - 1; i >= 0; i-- {
		if a.buf[i].key == k {
			return a.buf[i].value, !a.buf[i].del, nil
		}
	}
	idx, err := checkGet(a.op, k)
	if err != nil {
		return nil, false, a.fail(err)
	}
	switch {
	case idx == getOwn:
		return a.o.Own.Bytes, a.o.Own.Found, nil
	case idx >= 0:
		return a.o.Reads[idx].Bytes, a.o.Reads[idx].Found, nil
	}
	v, err := a.e.lookup(k)
	if err != nil {
		return nil, false, a.failWith(err)
	}
	a.o.Gets = append(a.o.Gets, KeyValue{Key: k, Value: v})
	return v.Bytes, v.Found, nil
}

func (a *serialAccess) Put(k Key, v []byte) error { return a.write(k, v, false) }

func (a *serialAccess) Delete(k Key) error { return a.write(k, nil, true) }

func (a *serialAccess) write(k Key, v []byte, del bool) error {
	if err := checkPut(a.op, k); err != nil {
		return a.fail(err)
	}
	a.buf = append(a.buf, keyEntry{k, entry{v, del}})
	return nil
}

// newObserved allocates the Observed of every operation of a batch.
func newObserved(batch []Txn) ([]Observed, []int32) {
	first := make([]int32, len(batch)+1)
	n, nr := 0, 0
	for t := range batch {
		first[t] = int32(n)
		for m := range batch[t].Ops {
			n++
			nr += len(batch[t].Ops[m].Reads)
		}
	}
	first[len(batch)] = int32(n)
	obs := make([]Observed, n)
	vals := make([]Value, nr)
	for t := range batch {
		for m := range batch[t].Ops {
			k := len(batch[t].Ops[m].Reads)
			obs[int(first[t])+m].Reads = vals[:k:k]
			vals = vals[k:]
		}
	}
	return obs, first
}

// runSerial is the oracle: transactions one by one in timestamp order.
func runSerial(ctx context.Context, batch []Txn, store Store, apply Apply) (*Result, error) {
	t0 := time.Now()
	obs, first := newObserved(batch)
	res := &Result{Committed: make([]bool, len(batch)), obs: obs, first: first}
	state := map[Key]entry{}
	vers := map[Key][]txnVersion{}
	_, keep := store.(WindowStore)
	windowed := windowKeys(batch) // nil: no windowed read
	var tw []Write
	e := &txnExec{apply: apply, get: func(k Key) (Value, error) {
		if v, ok := state[k]; ok {
			return Value{Bytes: v.value, Found: !v.del}, nil
		}
		return storeGet(store, k)
	}, window: func(k Key, t int, w uint32) ([]Version, error) {
		return windowOf(store, k, vers[k], t, w)
	}}
	for t := range batch {
		if t&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("txn: run cancelled: %w", err)
			}
		}
		ok, err := e.exec(t, &batch[t], obs[first[t]:first[t+1]])
		if err != nil {
			return nil, err
		}
		res.Committed[t] = ok
		if !ok {
			res.Stats.Aborted++
			continue
		}
		for _, w := range e.local {
			state[w.key] = w.entry
		}
		if windowed == nil && !keep {
			continue
		}
		tw = e.writes(tw[:0], t)
		for _, w := range tw {
			if windowed[w.Key] {
				vers[w.Key] = append(vers[w.Key], txnVersion{txn: t, value: w.Value})
			}
		}
		if keep {
			res.Versions = append(res.Versions, tw...)
		}
	}
	clearUnexecuted(obs)
	res.Changes = changesOf(batch, state)
	res.Stats.Strategy, res.Stats.Workers, res.Stats.Txns = "serial", 1, len(batch)
	res.Stats.Ops, res.Stats.Passes = int(first[len(batch)]), 1
	res.Stats.Useful = e.useful
	res.Stats.Wall = time.Since(t0)
	res.Stats.Explore = max(res.Stats.Wall-e.useful, 0)
	return res, nil
}

// storeGet reads k's committed value from store; an error is a *StoreError.
func storeGet(store Store, k Key) (Value, error) {
	b, ok, err := store.Get(k)
	if err != nil {
		return Value{}, &StoreError{Key: k, Err: err}
	}
	return Value{Bytes: b, Found: ok}, nil
}

// clearUnexecuted leaves the Observed of operations that never ran zero.
func clearUnexecuted(obs []Observed) {
	for i := range obs {
		if !obs[i].Executed {
			obs[i].Reads, obs[i].Windows = nil, nil
		}
	}
}

// changesOf orders a batch's final writes as Result.Changes documents.
func changesOf(batch []Txn, state map[Key]entry) []Change {
	out := make([]Change, 0, len(state))
	seen := make(map[Key]bool, len(state))
	take := func(k Key) {
		if v, ok := state[k]; ok && !seen[k] {
			seen[k] = true
			out = append(out, Change{Key: k, Value: v.value, Delete: v.del})
		}
	}
	for t := range batch {
		for m := range batch[t].Ops {
			op := &batch[t].Ops[m]
			if !op.NonDet {
				take(op.Write)
			}
			for _, k := range op.Reads {
				take(k)
			}
		}
	}
	planned := len(out)
	for k, v := range state {
		if !seen[k] {
			out = append(out, Change{Key: k, Value: v.value, Delete: v.del})
		}
	}
	sortChanges(out[planned:])
	return out
}

// runSStore is the S-Store-like baseline: keys hash to partitions; a
// transaction takes the locks of its partitions (all of them if it has a
// non-deterministic operation) in timestamp order, and workers run whole
// transactions. Partition p's lock is the position pos[p] in the list of
// transactions touching p: a transaction runs when it is at the head of all
// its lists. Transactions are claimed in timestamp order, so the earliest
// claimed unfinished one is always at the head of its lists: no deadlock.
func (s *Scheduler) runSStore(ctx context.Context, batch []Txn, store Store, apply Apply) (*Result, error) {
	t0 := time.Now()
	np := s.parts
	seed := maphash.MakeSeed()
	part := func(k Key) int {
		return int(maphash.Comparable(seed, k) % uint64(np))
	}
	// Plan: each transaction's partitions and its position in each.
	type claim struct{ part, pos int32 }
	claims := make([][]claim, len(batch))
	count := make([]int32, np)
	mark := make([]int, np)
	for i := range mark {
		mark[i] = -1
	}
	for t := range batch {
		var cs []claim
		take := func(p int) {
			if mark[p] != t {
				mark[p] = t
				cs = append(cs, claim{int32(p), count[p]})
				count[p]++
			}
		}
		all := false
		for m := range batch[t].Ops {
			all = all || batch[t].Ops[m].NonDet
		}
		if all {
			for p := 0; p < np; p++ {
				take(p)
			}
		} else {
			for m := range batch[t].Ops {
				op := &batch[t].Ops[m]
				take(part(op.Write))
				for _, k := range op.Reads {
					take(part(k))
				}
			}
		}
		claims[t] = cs
	}
	obs, first := newObserved(batch)
	res := &Result{Committed: make([]bool, len(batch)), obs: obs, first: first}
	errs := make([]error, len(batch))
	states := make([]map[Key]entry, np)
	vers := make([]map[Key][]txnVersion, np)
	for i := range states {
		states[i] = map[Key]entry{}
		vers[i] = map[Key][]txnVersion{}
	}
	_, keep := store.(WindowStore)
	windowed := windowKeys(batch) // read-only while the workers run
	var writes [][]Write          // per transaction, when keep
	if keep {
		writes = make([][]Write, len(batch))
	}
	pos := make([]atomic.Int32, np)
	var next atomic.Int64
	var stop atomic.Bool
	stopWatch := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer stopWatch()
	plan := time.Since(t0)
	var useful atomic.Int64
	s.dispatch(func(w int) {
		e := &txnExec{acc: serialAccess{w: w}, apply: apply, get: func(k Key) (Value, error) {
			if v, ok := states[part(k)][k]; ok {
				return Value{Bytes: v.value, Found: !v.del}, nil
			}
			return storeGet(store, k)
		}, window: func(k Key, t int, win uint32) ([]Version, error) {
			return windowOf(store, k, vers[part(k)][k], t, win)
		}}
		defer func() { useful.Add(int64(e.useful)) }()
		for !stop.Load() {
			t := int(next.Add(1) - 1)
			if t >= len(batch) {
				return
			}
			for _, c := range claims[t] {
				for pos[c.part].Load() != c.pos {
					if stop.Load() {
						return
					}
					runtime.Gosched()
				}
			}
			ok, err := e.exec(t, &batch[t], obs[first[t]:first[t+1]])
			errs[t] = err
			res.Committed[t] = ok
			if ok {
				for _, w := range e.local {
					states[part(w.key)][w.key] = w.entry
				}
				if windowed != nil || keep {
					tw := e.writes(nil, t)
					for _, w := range tw {
						if windowed[w.Key] {
							m := vers[part(w.Key)]
							m[w.Key] = append(m[w.Key], txnVersion{txn: t, value: w.Value})
						}
					}
					if keep {
						writes[t] = tw
					}
				}
			}
			for _, c := range claims[t] {
				pos[c.part].Add(1)
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("txn: run cancelled: %w", err)
	}
	for t, err := range errs {
		if err != nil {
			return nil, err
		}
		if !res.Committed[t] {
			res.Stats.Aborted++
		}
	}
	// Operations of an aborted transaction after the abort never ran; the
	// executor left their Observed zero, as the serial one does.
	clearUnexecuted(obs)
	merged := map[Key]entry{}
	for _, st := range states {
		for k, v := range st {
			merged[k] = v
		}
	}
	res.Changes = changesOf(batch, merged)
	for _, tw := range writes {
		res.Versions = append(res.Versions, tw...)
	}
	res.Stats.Strategy, res.Stats.Workers, res.Stats.Txns = "sstore", s.n, len(batch)
	res.Stats.Ops, res.Stats.Passes = int(first[len(batch)]), 1
	res.Stats.Plan = plan
	res.Stats.Useful = time.Duration(useful.Load())
	res.Stats.Wall = time.Since(t0)
	res.Stats.Explore = max(time.Duration(s.n)*(res.Stats.Wall-plan)-res.Stats.Useful, 0)
	return res, nil
}

// serialCounts returns the dependency counts a decision model reads
// (chains, the longest chain, temporal, parametric and logical edges, keys)
// of a batch the serial strategy runs, which builds no TPG: one map of the
// batch's keys to their writers so far, one lookup per access, so far
// cheaper than a plan. A parametric edge is counted for a read of a key an
// earlier operation of the batch wrote; non-deterministic operations and
// cycles are not counted. keys is cleared and filled: the caller keeps it
// from batch to batch, so that a batch of the same size does not grow it
// again.
func serialCounts(batch []Txn, keys map[Key]int) Counts {
	clear(keys)
	var c Counts
	for t := range batch {
		ops := batch[t].Ops
		if len(ops) > 1 {
			c.Logical += len(ops) - 1
		}
		for m := range ops {
			op := &ops[m]
			for _, k := range op.Reads {
				if k == op.Write && !op.NonDet {
					continue
				}
				if n, ok := keys[k]; !ok {
					keys[k] = 0
				} else if n > 0 {
					c.Parametric++
				}
			}
			if op.NonDet {
				continue
			}
			n := keys[op.Write] + 1
			keys[op.Write] = n
			if n > 1 {
				c.Temporal++
			} else {
				c.Chains++
			}
			c.MaxChain = max(c.MaxChain, n)
		}
	}
	c.Keys = len(keys)
	return c
}
