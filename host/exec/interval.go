package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
)

// Interval bounds an interval join: a right record b joins a left record a
// of the same key when a.Time + Lower <= b.Time <= a.Time + Upper.
type Interval struct {
	Lower, Upper time.Duration
}

// intervalStage runs an interval join: records go by key group to the
// worker that owns it (the keyed stage's workers, sessions and
// assignment); each side's records wait in the key's state, ordered by
// time, until the watermark passes the last time a record of the other
// side could match them. A record is joined, as it arrives, with the
// waiting records of the other side in its interval, so each pair is made
// once, by the later of its two records, and its output descends from it.
type intervalStage struct {
	*keyedStage
	lower, upper int64
	// ns are the namespaces of the two sides' waiting records and of
	// their timers (the operator's own: timers are the store's, shared by
	// every operator).
	ns [2][]byte

	wms      []int64
	end, now int64
	lateRecs []lateRecord
	// pending are each worker's pairs waiting for the plugin; madeRecs
	// and deadErrs the pairs the plugin refused, dead-lettered.
	pending  []intervalPairs
	madeRecs []madeRecord
	deadErrs []error
	mu       sync.Mutex
}

// intervalPairs are a worker's pairs for the plugin: pairs[k] was made as
// input input[k] arrived, and nums[k] holds the numbers of its waiting and
// its arriving record among their key's (what names it).
type intervalPairs struct {
	pairs []plugin.JoinPair
	input []int
	nums  [][2]uint64
}

func newIntervalStage(ctx context.Context, op *Operator, store *state.Store, m *workerMetrics) (*intervalStage, error) {
	if len(op.Inputs) != 2 {
		return nil, fmt.Errorf("exec: join %q reads two inputs, left and right: it has %d", op.Name, len(op.Inputs))
	}
	if len(op.Tables) == 0 {
		op.Tables = []string{op.Name}
	}
	iv := op.Interval
	if iv.Lower > iv.Upper {
		return nil, fmt.Errorf("exec: join %q: interval [%v, %v] is empty", op.Name, iv.Lower, iv.Upper)
	}
	ks, err := newKeyedStage(ctx, op, store, m)
	if err != nil {
		return nil, err
	}
	return &intervalStage{keyedStage: ks, lower: int64(iv.Lower), upper: int64(iv.Upper),
		ns: [2][]byte{[]byte("join:" + op.Name + "/left"), []byte("join:" + op.Name + "/right")}}, nil
}

func (st *intervalStage) setClock(wms []int64, end, now int64) {
	st.wms, st.end, st.now = wms, end, now
}
func (st *intervalStage) made() []madeRecord  { return st.madeRecs }
func (st *intervalStage) late() []lateRecord  { return st.lateRecs }
func (st *intervalStage) tick() time.Duration { return 0 }

func (st *intervalStage) run(ctx context.Context, recs []abi.Record) ([]abi.Record, []plugin.Reject, error) {
	for _, w := range st.workers {
		w.in, w.global = w.in[:0], w.global[:0]
	}
	for i := range recs {
		w := st.workers[st.assign.owner(state.KeyGroup(recs[i].Key, st.groups))]
		w.in = append(w.in, recs[i])
		w.global = append(w.global, int32(i))
	}
	st.lateRecs = st.lateRecs[:0]
	st.madeRecs, st.deadErrs = st.madeRecs[:0], st.deadErrs[:0]
	st.active = st.active[:0]
	for len(st.pending) < len(st.workers) {
		st.pending = append(st.pending, intervalPairs{})
	}
	var wg sync.WaitGroup
	for k, w := range st.workers {
		st.active = append(st.active, w)
		wg.Go(func() { w.err = st.runWorker(ctx, k, w) })
	}
	wg.Wait()
	for _, w := range st.workers {
		if w.err != nil {
			return nil, nil, fmt.Errorf("exec: join %q: worker %d: %w", st.op.Name, w.id, w.err)
		}
	}
	out, rejects := st.gather()
	if len(st.madeRecs) > 0 {
		// The refused pairs, in an order the workers do not decide.
		order := make([]int, len(st.madeRecs))
		for k := range order {
			order[k] = k
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(st.madeRecs[a].id, st.madeRecs[b].id) })
		made, errs := slices.Clone(st.madeRecs), slices.Clone(st.deadErrs)
		for k, o := range order {
			st.madeRecs[k], st.deadErrs[k] = made[o], errs[o]
			rejects = append(rejects, plugin.Reject{Index: len(recs) + k, Err: errs[o]})
		}
	}
	return out, rejects, nil
}

// intervalCount is the namespace of a key's count of records stored.
var intervalCount = []byte("join/count")

// runWorker joins the worker's records in order, then drops the waiting
// records the watermark at the batch's end leaves no partner for.
func (st *intervalStage) runWorker(ctx context.Context, k int, w *worker) error {
	start := time.Now()
	defer func() { w.busy += time.Since(start); w.records += uint64(len(w.in)) }()
	w.out.Reset()
	t := st.tables[0]
	for i := range w.in {
		r := &w.in[i]
		wm := st.wms[w.global[i]]
		side := int(r.Input)
		if r.Time == 0 {
			w.out.Rejects = append(w.out.Rejects, plugin.Reject{Index: i, Err: errNoEventTime})
			continue
		}
		if r.Time <= wm {
			st.mu.Lock()
			st.lateRecs = append(st.lateRecs, lateRecord{index: int(w.global[i]), reason: fmt.Sprintf(
				"event time %s is late: the watermark was %s when it came", fmtTime(r.Time), fmtTime(wm))})
			st.mu.Unlock()
			continue
		}
		// The other side's records in r's interval: for a left record,
		// right times in [t+lower, t+upper]; for a right one, left times
		// in [t-upper, t-lower].
		lo, hi := r.Time+st.lower, r.Time+st.upper
		if side == 1 {
			lo, hi = r.Time-st.upper, r.Time-st.lower
		}
		// Waiting records are ordered by time, then by arrival: a count
		// per key, which numbers them.
		nk := state.Key{Route: r.Key, Namespace: intervalCount}
		v, _, err := w.sess.GetKey(t, nk)
		if err != nil {
			return err
		}
		var n uint64
		if len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		var scanErr error
		err = w.sess.Scan(t, r.Key, st.ns[1-side], func(key state.Key, v []byte) bool {
			ts := int64(binary.BigEndian.Uint64(key.User) ^ 1<<63)
			if ts < lo {
				return true
			}
			if ts > hi {
				return false
			}
			other, err := decodeOne(v)
			if err != nil {
				scanErr = err
				return false
			}
			l, rr := r, &other
			if side == 1 {
				l, rr = &other, r
			}
			st.pair(k, w, i, l, rr, binary.BigEndian.Uint64(key.User[8:]), n)
			return true
		})
		if err = cmpErr(err, scanErr); err != nil {
			return err
		}
		// Wait for partners until the watermark passes the last time one
		// could have: a left record until t+upper, a right one until
		// t-lower.
		until := hi
		if side == 1 {
			until = r.Time - st.lower
		}
		if err := w.sess.PutKey(t, nk, binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
			return err
		}
		user := binary.BigEndian.AppendUint64(nil, uint64(r.Time)^1<<63)
		user = binary.BigEndian.AppendUint64(user, n)
		c := *r
		c.Origin, c.Input = 0, 0
		if err := w.sess.PutKey(t, state.Key{Route: r.Key, Namespace: st.ns[side], User: user}, abi.AppendRecord(abi.AppendBatchHeader(nil, 1), &c)); err != nil {
			return err
		}
		tm := state.Timer{Domain: state.EventTime, Time: until, Route: r.Key, Namespace: st.ns[side], Name: user}
		if err := w.sess.SetTimer(tm); err != nil {
			return err
		}
	}
	if err := st.joinPairs(ctx, k, w); err != nil {
		return err
	}
	if st.end == math.MinInt64 {
		return nil // no watermark yet: nothing expires
	}
	for _, kg := range st.assign.groupsOf(w.id) {
		var expired []state.Timer
		err := w.sess.Timers(kg, state.EventTime, st.end-1, func(tm state.Timer) bool {
			if bytes.Equal(tm.Namespace, st.ns[0]) || bytes.Equal(tm.Namespace, st.ns[1]) {
				expired = append(expired, state.Timer{Domain: tm.Domain, Time: tm.Time, Route: bytes.Clone(tm.Route),
					Namespace: bytes.Clone(tm.Namespace), Name: bytes.Clone(tm.Name)})
			}
			return true
		})
		if err != nil {
			return err
		}
		for _, tm := range expired {
			if err := w.sess.DeleteTimer(tm); err != nil {
				return err
			}
			if err := w.sess.DeleteKey(t, state.Key{Route: tm.Route, Namespace: tm.Namespace, User: tm.Name}); err != nil {
				return err
			}
		}
	}
	return nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// pair appends the result of left l and right r, made as input i of
// worker k arrived: the default's JSON object, or a pair for the plugin,
// named by the numbers of the waiting record (waiting) and of the one
// that arrived (arrived) among their key's.
func (st *intervalStage) pair(k int, w *worker, i int, l, r *abi.Record, waiting, arrived uint64) {
	t := max(l.Time, r.Time)
	if w.inst == nil {
		v := appendJoined(make([]byte, 0, len(l.Value)+len(r.Value)+64), l.Key, l, r, nil)
		w.out.Records = append(w.out.Records, abi.Record{Origin: uint32(i), Key: l.Key, Value: v, Time: t})
		return
	}
	p := &st.pending[k]
	// The waiting record was decoded for this pair: it is its own.
	p.pairs = append(p.pairs, plugin.JoinPair{Key: l.Key, Time: t, Left: l, Right: r})
	p.input = append(p.input, i)
	p.nums = append(p.nums, [2]uint64{waiting, arrived})
}

// pairID names a pair of key made of the waiting and the arriving records
// numbered nums among their key's, the same in every run.
func (st *intervalStage) pairID(key []byte, nums [2]uint64) string {
	id := appendKeyID([]byte(st.op.Name+"/"), key)
	id = append(id, '/')
	id = strconv.AppendUint(id, nums[0], 10)
	id = append(id, '.')
	id = strconv.AppendUint(id, nums[1], 10)
	return string(id)
}

// joinPairs runs worker k's pairs through its plugin instance, in calls of
// at most guestChunk pairs: their results become outputs of the inputs
// that made them, and a pair the plugin rejects (or fails on) is
// dead-lettered as its default result.
func (st *intervalStage) joinPairs(ctx context.Context, k int, w *worker) error {
	p := &st.pending[k]
	if len(p.pairs) == 0 {
		return nil
	}
	err := chunked(len(p.pairs), func(lo, hi, _ int) error {
		m, rm := len(w.out.Records), len(w.out.Rejects)
		if err := w.inst.Join(ctx, p.pairs[lo:hi], &w.out); err != nil {
			return err
		}
		for j := m; j < len(w.out.Records); j++ {
			w.out.Records[j].Origin = uint32(p.input[lo+int(w.out.Records[j].Origin)])
		}
		st.mu.Lock()
		for _, rj := range w.out.Rejects[rm:] {
			pr := &p.pairs[lo+rj.Index]
			rec := abi.Record{Key: pr.Key, Value: appendJoined(nil, pr.Key, pr.Left, pr.Right, nil), Time: pr.Time}
			st.madeRecs = append(st.madeRecs, madeRecord{id: st.pairID(pr.Key, p.nums[lo+rj.Index]), wm: pr.Time - 1, rec: rec})
			st.deadErrs = append(st.deadErrs, rj.Err)
		}
		st.mu.Unlock()
		clear(w.out.Rejects[rm:])
		w.out.Rejects = w.out.Rejects[:rm]
		return nil
	})
	clear(p.pairs)
	p.pairs, p.input, p.nums = p.pairs[:0], p.input[:0], p.nums[:0]
	return err
}

func (st *intervalStage) retry(context.Context, *abi.Record) ([]abi.Record, error) {
	return nil, errNoRetry
}

// prepare makes the instances of a join's new plugin; a join without a
// plugin keeps building its default results.
func (st *intervalStage) prepare(ctx context.Context, op *Operator, r *Replacement, workers int) (*generation, error) {
	if op.Plugin == nil {
		return nil, fmt.Errorf("%w: join %q runs no plugin", ErrSwapRefused, op.Name)
	}
	return st.keyedStage.prepare(ctx, op, r, workers)
}
