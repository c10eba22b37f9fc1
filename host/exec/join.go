package exec

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/join"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/window"
	"github.com/sluicehq/sluice/state"
)

// KindJoin is the kind of a join operator: with no plugin, each pair's
// result is a JSON object of the key and both values; with one, the
// plugin's sluice_join builds the results.
const KindJoin = plugin.KindJoin

// JoinType says which records of a join's two sides make results.
type JoinType uint8

// The join types.
const (
	// InnerJoin: a result for each pair of records, one from each side,
	// with equal keys in the same window.
	InnerJoin JoinType = iota
	// LeftJoin: those, and each left record that matched nothing, alone.
	LeftJoin
	// RightJoin: those, and each right record that matched nothing.
	RightJoin
	// FullJoin: both.
	FullJoin
)

// Join makes an operator a join of its two inputs: Operator.Inputs[0] is
// the left side, Inputs[1] the right one. Records join on equal keys
// within the windows of Window (tumbling or sliding, in event time),
// joined by the kernel Algorithm over the operator's workers.
type Join struct {
	Type   JoinType
	Window window.Spec
	// Algorithm is join.Auto or one of join.Names().
	Algorithm string
	// Objective is what join.Auto optimises (default join.Throughput).
	Objective join.Objective
}

// joinStage runs a window join. Its state is the windows' records, kept
// by pane (the greatest common divisor of size and slide, so that a record
// is stored once however many windows hold it) in the operator's table,
// with one session that owns every key group, and an event-time timer per
// window. In memory, each open window has the records it holds and a
// kernel fed as they arrive (an eager kernel emits matches then, a lazy
// one at the window's end); both are caches of the state, rebuilt from it
// after a restart or a rollback, with the matches emitted before not
// emitted again.
type joinStage struct {
	op   *Operator
	spec window.Spec
	typ  JoinType
	algo string
	// objective is what an auto kernel optimises.
	objective join.Objective
	store     *state.Store
	table     *state.Table
	sess      *state.Session
	seed      maphash.Seed
	pane      int64
	// timerGroup is the key group of the windows' timers, timerNS their
	// namespace (the operator's own: timers are the store's, shared by
	// every operator).
	timerGroup int
	timerNS    []byte

	open map[int64]*joinWindow // by window start
	free []join.Kernel
	// inst builds the results from the pairs (sluice_join); nil: the
	// default, a JSON object of the key and both values.
	inst *plugin.Instance

	// This run's times and results.
	wms      []int64
	end, now int64
	outs     []abi.Record
	madeRecs []madeRecord
	lateRecs []lateRecord
	rejects  []plugin.Reject // of made records, Index that in madeRecs
	arena    []byte
	// pairs wait for the plugin, pairMade[k] the index in madeRecs of
	// pairs[k]; pout holds the plugin's results of the run.
	pairs    []plugin.JoinPair
	pairWins []plugin.Window
	pairMade []int
	pout     plugin.Output
	matches  [][]join.Match // per kernel worker
	mu       sync.Mutex

	records, fired uint64
	busy           time.Duration
}

// joinWindow is an open window of a join: its records by side, with the
// sequence numbers they were stored under, and its kernel.
type joinWindow struct {
	start  int64
	recs   [2][]abi.Record
	seqs   [2][]uint64
	kernel join.Kernel
	// fed counts the records of each side given to the kernel; hit marks
	// the records a match used (for outer joins).
	fed [2]int
	hit [2][]bool
}

// Keys of a join's state.
var (
	joinSeqKey  = state.Key{Route: []byte("join/seq")}
	joinTimerID = []byte("join/windows")
)

func newJoinStage(ctx context.Context, op *Operator, store *state.Store) (*joinStage, error) {
	if len(op.Tables) == 0 {
		op.Tables = []string{op.Name}
	}
	j := op.Join
	switch {
	case len(op.Inputs) != 2:
		return nil, fmt.Errorf("exec: join %q reads two inputs, left and right: it has %d", op.Name, len(op.Inputs))
	case j.Window.Domain != window.EventTime || (j.Window.Assigner != window.Tumbling && j.Window.Assigner != window.Sliding):
		return nil, fmt.Errorf("exec: join %q: windows of a join are tumbling or sliding, in event time", op.Name)
	}
	if _, err := join.New(j.Algorithm, join.Options{Workers: op.Parallelism}); err != nil {
		return nil, fmt.Errorf("exec: join %q: %w", op.Name, err)
	}
	size, slide := int64(j.Window.Size), int64(j.Window.Slide)
	if j.Window.Assigner == window.Tumbling {
		slide = size
	}
	st := &joinStage{op: op, spec: j.Window, typ: j.Type, algo: j.Algorithm, objective: j.Objective, store: store, table: store.Table(op.Tables[0]),
		sess: store.NewSession(), seed: maphash.MakeSeed(), pane: gcd(size, slide), open: map[int64]*joinWindow{},
		timerGroup: state.KeyGroup(joinTimerID, store.KeyGroups()), timerNS: []byte("join:" + op.Name)}
	st.spec.Slide = time.Duration(slide)
	if op.Plugin != nil {
		insts, err := newInstances(ctx, op, op.Plugin, 0, 1)
		if err != nil {
			return nil, fmt.Errorf("exec: join %q: %w", op.Name, err)
		}
		st.inst = insts[0]
	}
	return st, nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (st *joinStage) setClock(wms []int64, end, now int64) { st.wms, st.end, st.now = wms, end, now }
func (st *joinStage) made() []madeRecord                   { return st.madeRecs }
func (st *joinStage) late() []lateRecord                   { return st.lateRecs }
func (st *joinStage) tick() time.Duration                  { return 0 }

func (st *joinStage) run(ctx context.Context, recs []abi.Record) ([]abi.Record, []plugin.Reject, error) {
	start := time.Now()
	defer func() { st.busy += time.Since(start); st.records += uint64(len(recs)) }()
	st.outs, st.madeRecs, st.lateRecs, st.arena = st.outs[:0], st.madeRecs[:0], st.lateRecs[:0], st.arena[:0]
	st.rejects = st.rejects[:0]
	st.pout.Reset()
	var rejects []plugin.Reject
	for i := range recs {
		if recs[i].Time == 0 {
			rejects = append(rejects, plugin.Reject{Index: i, Err: errNoEventTime})
		}
	}
	if len(rejects) > 0 {
		// Leave them out: the rest, with their watermarks, in order.
		kept, wms := make([]abi.Record, 0, len(recs)), make([]int64, 0, len(recs))
		idx := make([]int, 0, len(recs))
		for i := range recs {
			if recs[i].Time != 0 {
				kept, wms, idx = append(kept, recs[i]), append(wms, st.wms[i]), append(idx, i)
			}
		}
		out, made, err := st.runKept(ctx, kept, wms, len(recs))
		if err != nil {
			return nil, nil, err
		}
		for k := range st.lateRecs {
			st.lateRecs[k].index = idx[st.lateRecs[k].index]
		}
		return out, append(rejects, made...), nil
	}
	return st.runKept(ctx, recs, st.wms, len(recs))
}

// runKept runs records that all have an event time, wms[i] the watermark
// at record i. The Origins of the outputs, and the Indexes of the
// rejections of records it made, count its made records from base.
func (st *joinStage) runKept(ctx context.Context, recs []abi.Record, wms []int64, base int) ([]abi.Record, []plugin.Reject, error) {
	st.wms = wms
	for i := 0; i < len(recs); {
		due, err := st.due()
		if err != nil {
			return nil, nil, err
		}
		if st.wms[i] >= due {
			if err := st.fire(ctx, st.wms[i]); err != nil {
				return nil, nil, err
			}
			continue
		}
		j := i
		for j < len(recs) && st.wms[j] < due {
			due = min(due, firstFiring(&st.spec, recs[j].Time))
			j++
		}
		if err := st.add(ctx, recs, i, j); err != nil {
			return nil, nil, err
		}
		i = j
	}
	if err := st.fire(ctx, st.end); err != nil {
		return nil, nil, err
	}
	for k := range st.outs {
		st.outs[k].Origin += uint32(base)
	}
	for k := range st.rejects {
		st.rejects[k].Index += base
	}
	return st.outs, st.rejects, nil
}

// due returns the end time, less one, of the earliest window not fired.
func (st *joinStage) due() (int64, error) {
	due := int64(math.MaxInt64)
	err := st.sess.Timers(st.timerGroup, state.EventTime, due, func(t state.Timer) bool {
		if !bytes.Equal(t.Namespace, st.timerNS) {
			return true
		}
		due = t.Time
		return false
	})
	return due, err
}

// windows calls fn with the start of every window that holds time t.
func (st *joinStage) windows(t int64, fn func(start int64) error) error {
	size, slide, off := int64(st.spec.Size), int64(st.spec.Slide), int64(st.spec.Offset)
	last := t - mod(t-off, slide)
	for s := last; s > t-size; s -= slide {
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// add stores records i..j-1, each judged against the watermark at its
// arrival, and feeds them to their windows' kernels.
func (st *joinStage) add(ctx context.Context, recs []abi.Record, i, j int) error {
	seq, err := st.loadSeq()
	if err != nil {
		return err
	}
	var fresh []*joinWindow // windows that got records, in first-record order
	for k := i; k < j; k++ {
		r := &recs[k]
		side := int(r.Input)
		size, slide := int64(st.spec.Size), int64(st.spec.Slide)
		lastStart := r.Time - mod(r.Time-int64(st.spec.Offset), slide)
		if lastEnd := lastStart + size - 1; lastEnd <= st.wms[k] {
			st.lateRecs = append(st.lateRecs, lateRecord{index: k, reason: fmt.Sprintf(
				"event time %s is late: every window of the join that holds it closed (the watermark is %s)", fmtTime(r.Time), fmtTime(st.wms[k]))})
			continue
		}
		// The record's windows first: one not in memory is loaded from
		// the state before the record joins it.
		var ws []*joinWindow
		err := st.windows(r.Time, func(start int64) error {
			if start+size-1 <= st.wms[k] {
				return nil // that window fired already
			}
			w, err := st.window(ctx, start)
			if err != nil {
				return err
			}
			ws = append(ws, w)
			return nil
		})
		if err != nil {
			return err
		}
		n := seq[side]
		seq[side]++
		if err := st.sess.PutKey(st.table, st.paneKey(r.Time, side, n), st.encode(r)); err != nil {
			return err
		}
		owned := copyRecord(*r)
		for _, w := range ws {
			if !slices.Contains(fresh, w) {
				fresh = append(fresh, w)
			}
			w.recs[side] = append(w.recs[side], owned)
			w.seqs[side] = append(w.seqs[side], n)
		}
	}
	if err := st.saveSeq(seq); err != nil {
		return err
	}
	// Feed the kernels what their windows got, by side.
	for _, w := range fresh {
		if err := st.feed(ctx, w, true); err != nil {
			return err
		}
	}
	return nil
}

// feed gives w's kernel the records it has not seen, and takes the
// matches an eager kernel finds: made into outputs when emit is true, only
// marked (for outer joins) when they were made before (a window loaded
// again from the state).
func (st *joinStage) feed(ctx context.Context, w *joinWindow, emit bool) error {
	for side := range 2 {
		tuples := make([]join.Tuple, 0, len(w.recs[side])-w.fed[side])
		for k := w.fed[side]; k < len(w.recs[side]); k++ {
			r := &w.recs[side][k]
			tuples = append(tuples, join.Tuple{Key: maphash.Bytes(st.seed, r.Key), TS: r.Time, Ref: uint32(k)})
		}
		w.fed[side] = len(w.recs[side])
		if len(tuples) == 0 {
			continue
		}
		slices.SortStableFunc(tuples, func(a, b join.Tuple) int { return cmp.Compare(a.TS, b.TS) })
		st.resetMatches()
		if err := w.kernel.Add(ctx, join.Side(side), tuples, st.collect); err != nil {
			return fmt.Errorf("exec: join %q: %s: %w", st.op.Name, w.kernel.Name(), err)
		}
		if err := st.take(ctx, w, emit, false); err != nil {
			return err
		}
	}
	return nil
}

// resetMatches empties the per-worker match buffers.
func (st *joinStage) resetMatches() {
	for k := range st.matches {
		st.matches[k] = st.matches[k][:0]
	}
}

// collect is the kernels' Emit: it keeps each worker's matches.
func (st *joinStage) collect(worker int, ms []join.Match) {
	// Kernels hand matches over in chunks (of about a thousand): one lock
	// per chunk is cheap, and it guards the per-worker buffers' growth.
	st.mu.Lock()
	for len(st.matches) <= worker {
		st.matches = append(st.matches, nil)
	}
	st.matches[worker] = append(st.matches[worker], ms...)
	st.mu.Unlock()
}

// take marks the matches collected, and makes them into outputs when emit
// is true (with the unmatched records of an outer join when final), in an
// order that depends on neither the workers nor the kernel.
func (st *joinStage) take(ctx context.Context, w *joinWindow, emit, final bool) error {
	var all []join.Match
	for _, ms := range st.matches {
		all = append(all, ms...)
	}
	slices.SortFunc(all, func(a, b join.Match) int { return cmp.Or(cmp.Compare(a.R, b.R), cmp.Compare(a.S, b.S)) })
	end := w.start + int64(st.spec.Size)
	for _, m := range all {
		l, r := &w.recs[0][m.R], &w.recs[1][m.S]
		if !bytes.Equal(l.Key, r.Key) {
			continue // equal hashes of different keys
		}
		st.mark(w, 0, int(m.R))
		st.mark(w, 1, int(m.S))
		if !emit {
			continue
		}
		st.result(w, l, r, end, "/"+strconv.FormatUint(w.seqs[0][m.R], 10)+"."+strconv.FormatUint(w.seqs[1][m.S], 10))
	}
	if final && emit {
		st.unmatched(w, end)
	}
	return st.joinPairs(ctx)
}

// unmatched makes the results of window w's records that matched nothing,
// as its outer join type wants them.
func (st *joinStage) unmatched(w *joinWindow, end int64) {
	if st.typ == LeftJoin || st.typ == FullJoin {
		for k := range w.recs[0] {
			if !st.matched(w, 0, k) {
				st.result(w, &w.recs[0][k], nil, end, "/"+strconv.FormatUint(w.seqs[0][k], 10)+".-")
			}
		}
	}
	if st.typ == RightJoin || st.typ == FullJoin {
		for k := range w.recs[1] {
			if !st.matched(w, 1, k) {
				st.result(w, nil, &w.recs[1][k], end, "/-."+strconv.FormatUint(w.seqs[1][k], 10))
			}
		}
	}
}

// mark notes that record k of side matched.
func (st *joinStage) mark(w *joinWindow, side, k int) {
	h := w.hit[side]
	if len(h) <= k {
		h = append(h, make([]bool, k+1-len(h))...)
	}
	h[k] = true
	w.hit[side] = h
}

// matched reports whether record k of side matched.
func (st *joinStage) matched(w *joinWindow, side, k int) bool {
	return k < len(w.hit[side]) && w.hit[side][k]
}

// result makes the result of window w's pair of left and right records
// (one of them nil for an outer join's unmatched record), id naming the
// pair among the window's: one made record, whose outputs are the
// default's JSON object or what the plugin makes of the pair.
func (st *joinStage) result(w *joinWindow, l, r *abi.Record, end int64, id string) {
	key := l
	if key == nil {
		key = r
	}
	made := len(st.madeRecs)
	st.madeRecs = append(st.madeRecs, madeRecord{
		id: st.op.Name + "/" + strconv.FormatInt(w.start, 10) + id, wm: end - 2})
	if st.inst != nil {
		st.pairs = append(st.pairs, plugin.JoinPair{Key: key.Key, Time: end - 1, Left: l, Right: r})
		st.pairWins = append(st.pairWins, plugin.Window{Start: w.start, End: end, Firing: plugin.FiringOnTime})
		st.pairMade = append(st.pairMade, made)
		return
	}
	st.outs = append(st.outs, st.joined(made, key.Key, l, r, &window.Window{Start: w.start, End: end}, end-1))
}

// joined returns the default result of a pair, made record made, in the
// stage's arena.
func (st *joinStage) joined(made int, key []byte, l, r *abi.Record, w *window.Window, t int64) abi.Record {
	at := len(st.arena)
	st.arena = appendJoined(st.arena, key, l, r, w)
	return abi.Record{Origin: uint32(made), Key: key, Value: st.arena[at:len(st.arena):len(st.arena)], Time: t}
}

// joinPairs runs the pairs waiting for the plugin through it, in calls of
// at most guestChunk pairs: their results become outputs of the pairs'
// made records, and a pair the plugin rejects (or fails on) is
// dead-lettered as its default result.
func (st *joinStage) joinPairs(ctx context.Context) error {
	if len(st.pairs) == 0 {
		return nil
	}
	for k := range st.pairs {
		st.pairs[k].Window = &st.pairWins[k]
	}
	err := chunked(len(st.pairs), func(lo, hi, _ int) error {
		m := len(st.pout.Records)
		rm := len(st.pout.Rejects)
		if err := st.inst.Join(ctx, st.pairs[lo:hi], &st.pout); err != nil {
			return fmt.Errorf("exec: join %q: %w", st.op.Name, err)
		}
		for _, r := range st.pout.Records[m:] {
			r.Origin = uint32(st.pairMade[lo+int(r.Origin)])
			st.outs = append(st.outs, r)
		}
		for _, rj := range st.pout.Rejects[rm:] {
			p := &st.pairs[lo+rj.Index]
			made := st.pairMade[lo+rj.Index]
			st.madeRecs[made].rec = st.joined(made, p.Key, p.Left, p.Right, &window.Window{Start: p.Window.Start, End: p.Window.End}, p.Time)
			st.rejects = append(st.rejects, plugin.Reject{Index: made, Err: rj.Err})
		}
		return nil
	})
	clear(st.pairs)
	st.pairs, st.pairWins, st.pairMade = st.pairs[:0], st.pairWins[:0], st.pairMade[:0]
	return err
}

// appendJoined appends the default result of a join's pair: a JSON object
// of the key, the left and right values (null for an outer join's side
// that matched nothing) and, for a pair of window w (nil for an interval
// join), the window's bounds.
func appendJoined(dst, key []byte, l, r *abi.Record, w *window.Window) []byte {
	dst = append(dst, `{"key":`...)
	dst = appendJSON(dst, key)
	for s, x := range [2]*abi.Record{l, r} {
		dst = append(dst, [2]string{`,"left":`, `,"right":`}[s]...)
		if x == nil {
			dst = append(dst, "null"...)
		} else {
			dst = appendJSON(dst, x.Value)
		}
	}
	if w != nil {
		dst = append(dst, `,"window_start":`...)
		dst = strconv.AppendInt(dst, w.Start, 10)
		dst = append(dst, `,"window_end":`...)
		dst = strconv.AppendInt(dst, w.End, 10)
	}
	return append(dst, '}')
}

// appendJSON appends v as JSON: as it is when it is a JSON value, else as
// a JSON string.
func appendJSON(dst, v []byte) []byte {
	if len(v) > 0 && json.Valid(v) {
		return append(dst, v...)
	}
	b, _ := json.Marshal(string(v))
	return append(dst, b...)
}

// fire fires every window whose end the watermark wm passed, oldest
// first, and drops the panes no later window needs.
func (st *joinStage) fire(ctx context.Context, wm int64) error {
	var due []state.Timer
	err := st.sess.Timers(st.timerGroup, state.EventTime, wm, func(t state.Timer) bool {
		if bytes.Equal(t.Namespace, st.timerNS) {
			due = append(due, state.Timer{Domain: t.Domain, Time: t.Time, Route: joinTimerID, Namespace: st.timerNS, Name: bytes.Clone(t.Name)})
		}
		return true
	})
	if err != nil {
		return err
	}
	for _, tm := range due {
		if err := st.sess.DeleteTimer(tm); err != nil {
			return err
		}
		start := int64(binary.BigEndian.Uint64(tm.Name))
		w, err := st.window(ctx, start)
		if err != nil {
			return err
		}
		st.resetMatches()
		if err := w.kernel.Close(ctx, st.collect); err != nil {
			return fmt.Errorf("exec: join %q: %s: %w", st.op.Name, w.kernel.Name(), err)
		}
		if err := st.take(ctx, w, true, true); err != nil {
			return err
		}
		st.fired++
		st.free = append(st.free, w.kernel)
		delete(st.open, start)
		if err := st.purge(start); err != nil {
			return err
		}
	}
	return nil
}

// purge deletes the panes of the window at start that no later window
// holds: those before the next window's start.
func (st *joinStage) purge(start int64) error {
	for p := start; p < start+int64(st.spec.Slide); p += st.pane {
		for side := range 2 {
			route, ns := paneRoute(p), []byte{byte(side)}
			var keys [][]byte
			err := st.sess.Scan(st.table, route, ns, func(k state.Key, _ []byte) bool {
				keys = append(keys, bytes.Clone(k.User))
				return true
			})
			if err != nil {
				return err
			}
			for _, u := range keys {
				if err := st.sess.DeleteKey(st.table, state.Key{Route: route, Namespace: ns, User: u}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// window returns the open window at start, making it (and its timer) if
// it is new, or loading its records from the state if it is not in
// memory.
func (st *joinStage) window(ctx context.Context, start int64) (*joinWindow, error) {
	if w, ok := st.open[start]; ok {
		return w, nil
	}
	k, err := st.kernel()
	if err != nil {
		return nil, err
	}
	w := &joinWindow{start: start, kernel: k}
	st.open[start] = w
	tm := state.Timer{Domain: state.EventTime, Time: start + int64(st.spec.Size) - 1, Route: joinTimerID, Namespace: st.timerNS,
		Name: binary.BigEndian.AppendUint64(nil, uint64(start))}
	// Load what the state holds of it: nothing for a new window; for one
	// open before a restart or a rollback, its records, fed to the kernel
	// without emitting the matches it emitted then.
	for p := start; p < start+int64(st.spec.Size); p += st.pane {
		for side := range 2 {
			err := st.sess.Scan(st.table, paneRoute(p), []byte{byte(side)}, func(key state.Key, v []byte) bool {
				var r abi.Record
				if r, err = decodeOne(v); err != nil {
					return false
				}
				w.recs[side] = append(w.recs[side], r)
				w.seqs[side] = append(w.seqs[side], binary.BigEndian.Uint64(key.User))
				return true
			})
			if err != nil {
				return nil, fmt.Errorf("exec: join %q: window %d: %w", st.op.Name, start, err)
			}
		}
	}
	if len(w.recs[0])+len(w.recs[1]) == 0 {
		if err := st.sess.SetTimer(tm); err != nil {
			return nil, err
		}
	} else if err := st.feed(ctx, w, false); err != nil {
		return nil, err
	}
	return w, nil
}

// kernel returns a kernel for a new window.
func (st *joinStage) kernel() (join.Kernel, error) {
	if n := len(st.free); n > 0 {
		k := st.free[n-1]
		st.free = st.free[:n-1]
		return k, nil
	}
	o := join.Options{Workers: st.op.Parallelism}
	if st.algo == join.Auto {
		return join.NewAuto(o, join.Config{Objective: st.objective})
	}
	return join.New(st.algo, o)
}

// paneKey is where a record of side, number n, of the pane holding t is
// stored.
func (st *joinStage) paneKey(t int64, side int, n uint64) state.Key {
	p := t - mod(t-int64(st.spec.Offset), st.pane)
	return state.Key{Route: paneRoute(p), Namespace: []byte{byte(side)}, User: binary.BigEndian.AppendUint64(nil, n)}
}

func paneRoute(p int64) []byte {
	return binary.BigEndian.AppendUint64([]byte("join/pane/"), uint64(p)^(1<<63))
}

// encode returns r as a one-record batch.
func (st *joinStage) encode(r *abi.Record) []byte {
	c := *r
	c.Origin, c.Input = 0, 0
	b := abi.AppendBatchHeader(nil, 1)
	return abi.AppendRecord(b, &c)
}

// decodeOne decodes a one-record batch.
func decodeOne(b []byte) (abi.Record, error) {
	d, err := abi.NewDecoder(b)
	if err != nil {
		return abi.Record{}, err
	}
	var r abi.Record
	if !d.Next(&r) {
		return abi.Record{}, d.Err()
	}
	return copyRecord(r), nil
}

// loadSeq and saveSeq keep the next sequence number of each side.
func (st *joinStage) loadSeq() ([2]uint64, error) {
	v, ok, err := st.sess.GetKey(st.table, joinSeqKey)
	if err != nil || !ok || len(v) != 16 {
		return [2]uint64{}, err
	}
	return [2]uint64{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])}, nil
}

func (st *joinStage) saveSeq(seq [2]uint64) error {
	v := binary.BigEndian.AppendUint64(nil, seq[0])
	return st.sess.PutKey(st.table, joinSeqKey, binary.BigEndian.AppendUint64(v, seq[1]))
}

func fmtTime(t int64) string {
	if t == math.MinInt64 {
		return "the start of time"
	}
	return time.Unix(0, t).UTC().Format(time.RFC3339Nano)
}

func (st *joinStage) retry(context.Context, *abi.Record) ([]abi.Record, error) {
	return nil, errNoRetry
}

func (st *joinStage) savepoint() savepoint { return savepoint{st.sess.Savepoint()} }

// rollback undoes the session's writes and drops the windows in memory,
// which the next run loads again from the state.
func (st *joinStage) rollback(sp savepoint) {
	st.sess.RollbackTo(sp[0])
	clear(st.open)
}

// prepare makes the instance of a join's new plugin; a join without a
// plugin keeps building its default results.
func (st *joinStage) prepare(ctx context.Context, op *Operator, r *Replacement, _ int) (*generation, error) {
	if st.inst == nil {
		return nil, fmt.Errorf("%w: join %q runs no plugin", ErrSwapRefused, op.Name)
	}
	return prepareInstances(ctx, op, r, 1)
}

func (st *joinStage) install(gen *generation) *generation {
	old := &generation{insts: []*plugin.Instance{st.inst}}
	st.inst = gen.insts[0]
	gen.insts = nil
	return old
}
func (st *joinStage) apply() error     { return nil }
func (st *joinStage) committed()       { st.sess.Reset() }
func (st *joinStage) parallelism() int { return st.op.Parallelism }

func (st *joinStage) report(os *OperatorStatus) {
	os.Workers = []WorkerStatus{{ID: 0, Records: st.records, BusySeconds: st.busy.Seconds()}}
}

func (st *joinStage) close(ctx context.Context) error {
	if st.inst == nil {
		return nil
	}
	return st.inst.Close(ctx)
}
