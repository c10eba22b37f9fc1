package exec

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/window"
	"github.com/sluicehq/sluice/state"
)

// Window makes an operator windowed (kinds aggregate and window): its
// records are grouped by key and window, and what a window holds is handed
// to its function when the window fires.
type Window struct {
	Spec window.Spec
	// Function makes a native window function (a built-in aggregate) for
	// each worker, which calls it on its own goroutine; nil: the
	// operator's plugin is the function.
	Function func() window.Function
}

// clocked is a stage whose work follows time (a windowed operator): before
// each run the executor gives it the watermark at each of its input
// records and at the batch's end, and the processing time; it runs on
// batches without input too (to fire windows), and hands back what it made
// at batch boundaries (fired windows) and what came late.
type clocked interface {
	// setClock sets the next run's times: wms[i] is the watermark when
	// input record i arrived; end is the watermark at the batch's end
	// (math.MaxInt64 when the input has ended); now is the processing time.
	setClock(wms []int64, end, now int64)
	// made returns the outputs of the last run that no input record made
	// (Origin len(recs)+k is made[k]), and the records it made and
	// rejected (a plugin.Reject of Index len(recs)+k is made[k]).
	made() []madeRecord
	// late returns the input records of the last run that came after
	// their windows had closed.
	late() []lateRecord
	// tick is how often the stage needs a run when no input comes
	// (windows of processing time); 0: never.
	tick() time.Duration
}

// madeRecord is the identity of an output made at a batch boundary: its
// de-duplication id, the same whenever a replay makes it again, and the
// watermark just before it was made (what an operator downstream of it
// judges it against).
type madeRecord struct {
	id string
	wm int64
	// rec is the record to dead-letter when the stage rejects what it
	// made (a rejection whose Index is that of the made record).
	rec abi.Record
}

// lateRecord is an input record (by index in the run's input) that came
// late, and why.
type lateRecord struct {
	index  int
	reason string
}

// windowStage runs a windowed operator: records go, by key group, to the
// worker that owns the group (as in a keyed stage, whose workers, state
// sessions, assignment, swaps and resizes it shares); each worker's
// window.Operator keeps the windows in that worker's session, so they are
// committed with the batch and its source positions.
type windowStage struct {
	*keyedStage
	spec  window.Spec
	table *state.Table
	// native makes a worker's built-in function; nil: the plugin's,
	// through each worker's instance.
	native func() window.Function
	ops    []*window.Operator // one per worker, with its scratch
	// ns is the namespace of the operator's windows and timers (its own:
	// timers are the store's, shared by every operator).
	ns  string
	log *slog.Logger
	om  *opMetrics
	// openBase is the slices open when the stage was made, firedBase the
	// firings of workers removed since; counted is the firings counted.
	openBase, firedBase, counted int64
	// open is the slices open after the last batch.
	open int64

	// This run's times and results.
	wms       []int64
	end, now  int64
	madeRecs  []madeRecord
	lateRecs  []lateRecord
	results   []window.Result
	failed    []failedFire
	resultsMu sync.Mutex
}

// failedFire is a record a window's firing made that its plugin refused
// (a join's pair): Record is what is dead-lettered, with err.
type failedFire struct {
	window.Result
	err error
}

// fail records that the firing fi made rec and its plugin refused it
// with err: the batch dead-letters rec. Workers call it concurrently.
func (st *windowStage) fail(fi *window.Fire, rec abi.Record, err error) {
	st.resultsMu.Lock()
	st.failed = append(st.failed, failedFire{Result: window.Result{Record: rec, Key: rec.Key, Window: fi.Window, Firing: fi.Firing, Seq: fi.Seq}, err: err})
	st.resultsMu.Unlock()
}

func newWindowStage(ctx context.Context, op *Operator, store *state.Store, om *opMetrics, log *slog.Logger) (*windowStage, error) {
	if len(op.Tables) == 0 {
		op.Tables = []string{op.Name}
	}
	ks, err := newKeyedStage(ctx, op, store, om.workers)
	if err != nil {
		return nil, err
	}
	st := &windowStage{keyedStage: ks, spec: op.Window.Spec, table: ks.tables[0], native: op.Window.Function, ns: window.NamespaceOf(op.Tables[0]),
		log: log, om: om}
	for range ks.workers {
		if err := st.addOperator(); err != nil {
			st.closeWorkers(ctx)
			return nil, err
		}
	}
	if st.openBase, err = window.OpenSlices(store, op.Tables[0], st.ns); err != nil {
		st.closeWorkers(ctx)
		return nil, fmt.Errorf("exec: operator %q: %w", op.Name, err)
	}
	om.open.Set(float64(st.openBase))
	st.open = st.openBase
	return st, nil
}

// addOperator makes the window operator of the next worker.
func (st *windowStage) addOperator() error {
	w := len(st.ops)
	var fn window.Function
	switch {
	case st.op.Kind == KindJoin:
		fn = &sessionJoin{st: st, worker: w}
	case st.native != nil:
		fn = st.native()
	case st.op.Kind == plugin.KindWindow:
		fn = &pluginCollector{st: st, worker: w}
	default:
		fn = &pluginAggregate{st: st, worker: w}
	}
	o, err := window.New(st.spec, fn, st.table, window.WithNamespace(st.ns))
	if err != nil {
		return fmt.Errorf("exec: operator %q: %w", st.op.Name, err)
	}
	st.ops = append(st.ops, o)
	return nil
}

func (st *windowStage) setClock(wms []int64, end, now int64) {
	st.wms, st.end, st.now = wms, end, now
}

func (st *windowStage) made() []madeRecord { return st.madeRecs }
func (st *windowStage) late() []lateRecord { return st.lateRecs }

func (st *windowStage) tick() time.Duration {
	if st.spec.Domain == window.ProcessingTime || st.spec.EarlyInterval > 0 {
		return 100 * time.Millisecond
	}
	return 0
}

func (st *windowStage) run(ctx context.Context, recs []abi.Record) ([]abi.Record, []plugin.Reject, error) {
	for _, w := range st.workers {
		w.in, w.global = w.in[:0], w.global[:0]
	}
	st.results, st.lateRecs, st.madeRecs = st.results[:0], st.lateRecs[:0], st.madeRecs[:0]
	clear(st.failed)
	st.failed = st.failed[:0]
	st.rejects = st.rejects[:0]
	for i := range recs {
		if st.spec.Domain == window.EventTime && recs[i].Time == 0 {
			st.rejects = append(st.rejects, plugin.Reject{Index: i, Err: errNoEventTime})
			continue
		}
		w := st.workers[st.assign.owner(state.KeyGroup(recs[i].Key, st.groups))]
		w.in = append(w.in, recs[i])
		w.global = append(w.global, int32(i))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(st.workers))
	for k, w := range st.workers {
		wg.Go(func() { errs[k] = st.runWorker(ctx, k, w) })
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("exec: operator %q: worker %d: %w", st.op.Name, k, err)
		}
	}
	// Fired windows in an order that depends on neither the workers nor
	// the batches: by time, key, window and firing.
	slices.SortStableFunc(st.results, func(a, b window.Result) int { return compareResults(&a, &b) })
	st.outRecs = st.outRecs[:0]
	ids := map[string]int{}
	for _, r := range st.results {
		rec := r.Record
		rec.Origin = uint32(len(recs) + len(st.madeRecs))
		if r.Firing != window.OnTimeFiring {
			// A repeat of a window (a late firing) or a result before
			// its end (an early one) says so.
			rec.Headers = append(rec.Headers, abi.Header{Name: []byte(HeaderFiring), Value: []byte(r.Firing.String())})
		}
		st.outRecs = append(st.outRecs, rec)
		id := st.resultID(&r)
		n := ids[id]
		ids[id]++
		// Downstream, a result is judged against the watermark just
		// below its time: it is never late there.
		st.madeRecs = append(st.madeRecs, madeRecord{id: id + "/" + strconv.Itoa(n), wm: max(r.Record.Time, math.MinInt64+1) - 1})
	}
	// What the plugin refused of the firings: made records of their own,
	// dead-lettered.
	slices.SortStableFunc(st.failed, func(a, b failedFire) int { return compareResults(&a.Result, &b.Result) })
	for _, f := range st.failed {
		id := st.resultID(&f.Result)
		n := ids[id+"/dead"]
		ids[id+"/dead"]++
		st.rejects = append(st.rejects, plugin.Reject{Index: len(recs) + len(st.madeRecs), Err: f.err})
		st.madeRecs = append(st.madeRecs, madeRecord{id: id + "/dead/" + strconv.Itoa(n), wm: max(f.Record.Time, math.MinInt64+1) - 1, rec: f.Record})
	}
	st.count()
	slices.SortFunc(st.lateRecs, func(a, b lateRecord) int { return a.index - b.index })
	slices.SortFunc(st.rejects, func(a, b plugin.Reject) int { return a.Index - b.Index })
	return st.outRecs, st.rejects, nil
}

// compareResults orders fired windows' results by time, key, window and
// firing.
func compareResults(a, b *window.Result) int {
	return cmp.Or(cmp.Compare(a.Record.Time, b.Record.Time), bytes.Compare(a.Key, b.Key),
		cmp.Compare(a.Window.Start, b.Window.Start), cmp.Compare(a.Seq, b.Seq))
}

// count updates the metrics of open windows and firings.
func (st *windowStage) count() {
	open, fired := st.openBase, st.firedBase
	for _, o := range st.ops {
		s := o.Stats()
		open += s.Opened - s.Purged
		fired += s.Fired
	}
	st.om.open.Set(float64(open))
	st.open = open
	if fired > st.counted {
		st.om.fired.Add(float64(fired - st.counted))
		st.counted = fired
	}
}

// errNoEventTime dead-letters a record with no event time that reaches a
// window of event time.
var errNoEventTime = fmt.Errorf("%w: the record has no event time (time 0): give the source a time_field (format json), "+
	"a time member (format jsonl) or the messages a Sluice-Time header, or use windows of processing time", plugin.ErrRejected)

// resultID identifies a fired window's output: the operator, the key, the
// window and the firing's number.
func (st *windowStage) resultID(r *window.Result) string {
	var b []byte
	b = append(b, st.op.Name...)
	b = append(b, '/')
	b = appendKeyID(b, r.Key)
	b = append(b, '/')
	b = strconv.AppendInt(b, r.Window.Start, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, r.Window.End, 10)
	b = append(b, '/')
	b = strconv.AppendUint(b, uint64(r.Seq), 10)
	return string(b)
}

// appendKeyID appends key as it stands in an id: as it is when it is short
// and printable, else as a hex prefix and a hash.
func appendKeyID(b, key []byte) []byte {
	if len(key) <= 32 && printableKey(key) {
		return append(b, key...)
	}
	b = hex.AppendEncode(b, key[:min(len(key), 16)])
	b = append(b, '~')
	// A hash that is the same in every process: the id must be reproduced
	// by a replay after a restart.
	h := fnv.New64a()
	h.Write(key)
	return strconv.AppendUint(b, h.Sum64(), 36)
}

// printableKey reports whether k can stand in an id as it is.
func printableKey(k []byte) bool {
	for _, c := range k {
		if c <= ' ' || c >= 0x7f || c == '/' || c == '~' {
			return false
		}
	}
	return true
}

// runWorker runs worker k's records through its window operator, firing
// the windows that come due between records as the watermark passes them,
// as a record-by-record run would, and the rest at the batch's end.
func (st *windowStage) runWorker(ctx context.Context, k int, w *worker) error {
	start := time.Now()
	defer func() { w.busy += time.Since(start); w.records += uint64(len(w.in)) }()
	o := st.ops[k]
	groups := st.assign.groupsOf(w.id)
	emit := func(r window.Result) {
		// The function's buffers are reused by its next call in this
		// run: keep copies.
		r.Record = copyRecord(r.Record)
		r.Key = r.Record.Key
		st.resultsMu.Lock()
		st.results = append(st.results, r)
		st.resultsMu.Unlock()
	}
	wms := slices.Grow(w.wms[:0], len(w.in))
	for _, g := range w.global {
		wms = append(wms, st.wms[g])
	}
	w.wms = wms
	for i := 0; i < len(w.in); {
		due, err := nextFiring(w.sess, groups, []byte(st.ns))
		if err != nil {
			return err
		}
		if wms[i] >= due {
			// The watermark passed a firing before record i came.
			if err := o.Advance(ctx, w.sess, groups, wms[i], st.now, emit); err != nil {
				return err
			}
			continue
		}
		j := i
		for j < len(w.in) && wms[j] < due {
			due = min(due, firstFiring(&st.spec, w.in[j].Time))
			j++
		}
		late, err := o.AddAt(ctx, w.sess, w.in[i:j], wms[i:j], st.now)
		if err != nil {
			return err
		}
		st.resultsMu.Lock()
		for _, l := range late {
			g := int(w.global[i+l.Index])
			if l.Rejected {
				st.rejects = append(st.rejects, plugin.Reject{Index: g, Err: refused(l.Reason)})
			} else {
				st.lateRecs = append(st.lateRecs, lateRecord{index: g, reason: l.Reason})
			}
		}
		st.resultsMu.Unlock()
		i = j
	}
	return o.Advance(ctx, w.sess, groups, st.end, st.now, emit)
}

// nextFiring returns the time of the earliest event-time timer of the
// key groups in namespace ns, math.MaxInt64 when there is none.
func nextFiring(sess *state.Session, groups []int, ns []byte) (int64, error) {
	due := int64(math.MaxInt64)
	for _, kg := range groups {
		err := sess.Timers(kg, state.EventTime, due, func(t state.Timer) bool {
			if !bytes.Equal(t.Namespace, ns) {
				return true
			}
			due = min(due, t.Time)
			return false
		})
		if err != nil {
			return 0, err
		}
	}
	return due, nil
}

// firstFiring returns the earliest event time at which a window that a
// record of time t opens can fire: the end of the first window that holds
// t, less one; math.MaxInt64 when no watermark fires it.
func firstFiring(s *window.Spec, t int64) int64 {
	if s.Domain != window.EventTime {
		return math.MaxInt64
	}
	switch s.Assigner {
	case window.Tumbling, window.Sliding:
		size, slide, off := int64(s.Size), int64(s.Slide), int64(s.Offset)
		if s.Assigner == window.Tumbling {
			slide = size
		}
		// The last window holding t starts at last; the first one at the
		// earliest start on the grid after t - size.
		last := t - mod(t-off, slide)
		first := last - ((size-1)/slide)*slide
		for first+size <= t {
			first += slide
		}
		return first + size - 1
	case window.Session:
		return t + int64(s.Gap) - 1
	}
	return math.MaxInt64
}

// mod is the modulo that is never negative.
func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

func (st *windowStage) retry(ctx context.Context, rec *abi.Record) ([]abi.Record, error) {
	return nil, errNoRetry
}

// resize changes the workers as a keyed stage does, with a window
// operator for each new worker.
func (st *windowStage) resize(ctx context.Context, r *resize) error {
	err := st.keyedStage.resize(ctx, r)
	for _, o := range st.ops[min(len(st.ops), len(st.workers)):] {
		s := o.Stats()
		st.openBase += s.Opened - s.Purged
		st.firedBase += s.Fired
	}
	st.ops = st.ops[:min(len(st.ops), len(st.workers))]
	for len(st.ops) < len(st.workers) {
		if aerr := st.addOperator(); aerr != nil && err == nil {
			err = aerr
		}
	}
	return err
}

func (st *windowStage) report(os *OperatorStatus) {
	st.keyedStage.report(os)
	if os.Window != nil {
		os.Window.OpenSlices, os.Window.Firings = st.open, uint64(st.counted)
	}
}

// pluginAggregate is a worker's window.Accumulator over its plugin
// instance (kind aggregate: sluice_agg_add, merge and fire). It reads the
// worker's instance at each call, so it follows swaps.
type pluginAggregate struct {
	st     *windowStage
	worker int
	out    plugin.Output // Fire's
	groups []plugin.AddGroup
	pairs  []plugin.MergePair
	fires  []plugin.Fire
	// Add's and Merge's outputs, one per chunk of a call: the
	// accumulators of every chunk stay valid until the next call.
	addOuts, mergeOuts []*plugin.Output
}

func (f *pluginAggregate) inst() *plugin.Instance { return f.st.workers[f.worker].inst }

// guestChunk is the most groups, pairs or fires one guest call takes: a
// firing of many windows (the end of input, a watermark that jumps) is
// cut into calls whose input and output fit the guest's memory.
const guestChunk = 1024

// chunked calls fn on successive pieces of n items of at most guestChunk,
// with the number of the piece.
func chunked(n int, fn func(lo, hi, chunk int) error) error {
	for lo := 0; lo < n; lo += guestChunk {
		if err := fn(lo, min(lo+guestChunk, n), lo/guestChunk); err != nil {
			return err
		}
	}
	return nil
}

// chunkOutput returns outs[chunk], reset, adding outputs as needed.
func chunkOutput(outs *[]*plugin.Output, chunk int) *plugin.Output {
	for len(*outs) <= chunk {
		*outs = append(*outs, &plugin.Output{})
	}
	out := (*outs)[chunk]
	out.Reset()
	return out
}

func (f *pluginAggregate) Add(ctx context.Context, groups []window.Group) error {
	return chunked(len(groups), func(lo, hi, chunk int) error { return f.add(ctx, groups[lo:hi], chunk) })
}

func (f *pluginAggregate) add(ctx context.Context, groups []window.Group, chunk int) error {
	f.groups = f.groups[:0]
	for _, g := range groups {
		f.groups = append(f.groups, plugin.AddGroup{Key: g.Key, Time: g.Slice.MaxTime(), Acc: g.Acc, Recs: g.Recs})
	}
	out := chunkOutput(&f.addOuts, chunk)
	if err := f.inst().AggAdd(ctx, f.groups, out); err != nil {
		return err
	}
	if len(out.Records) != len(groups) {
		return fmt.Errorf("exec: operator %q: %d accumulators for %d groups", f.st.op.Name, len(out.Records), len(groups))
	}
	for g := range groups {
		groups[g].Out = out.Records[g].Value
		groups[g].Rejected = groups[g].Rejected[:0]
	}
	// A reject's Index numbers the members across the call.
	g, first := 0, 0
	for _, r := range out.Rejects {
		for g < len(groups) && r.Index >= first+len(groups[g].Recs) {
			first += len(groups[g].Recs)
			g++
		}
		if g == len(groups) {
			break
		}
		groups[g].Rejected = append(groups[g].Rejected, window.Rejection{Index: r.Index - first, Reason: r.Err.Error()})
	}
	return nil
}

func (f *pluginAggregate) Merge(ctx context.Context, pairs []window.Pair) error {
	// The merged accumulators of a call stay valid until the next call of
	// the function: one output buffer per chunk.
	return chunked(len(pairs), func(lo, hi, chunk int) error { return f.merge(ctx, pairs[lo:hi], chunk) })
}

func (f *pluginAggregate) merge(ctx context.Context, pairs []window.Pair, chunk int) error {
	f.pairs = f.pairs[:0]
	for _, p := range pairs {
		f.pairs = append(f.pairs, plugin.MergePair{Key: p.Key, A: p.A, B: p.B})
	}
	out := chunkOutput(&f.mergeOuts, chunk)
	if err := f.inst().AggMerge(ctx, f.pairs, out); err != nil {
		return err
	}
	if len(out.Records) != len(pairs) {
		return fmt.Errorf("exec: operator %q: %d merged accumulators for %d pairs", f.st.op.Name, len(out.Records), len(pairs))
	}
	for j := range pairs {
		pairs[j].Out = out.Records[j].Value
	}
	return nil
}

func (f *pluginAggregate) Fire(ctx context.Context, fires []window.Fire, emit func(i int, r abi.Record)) error {
	return chunked(len(fires), func(lo, hi, _ int) error {
		f.fires = f.fires[:0]
		for _, fi := range fires[lo:hi] {
			f.fires = append(f.fires, plugin.Fire{Key: fi.Key, Window: guestWindow(fi), Acc: fi.Acc})
		}
		f.out.Reset()
		if err := f.inst().AggFire(ctx, f.fires, &f.out); err != nil {
			return err
		}
		return f.st.fired(&f.out, fires[lo:hi], false, func(i int, r abi.Record) { emit(lo+i, r) })
	})
}

// pluginCollector is a worker's collecting window.Function over its
// plugin instance (kind window: sluice_window_fire).
type pluginCollector struct {
	st     *windowStage
	worker int
	out    plugin.Output
	fires  []plugin.FireContents
}

func (f *pluginCollector) Fire(ctx context.Context, fires []window.Fire, emit func(i int, r abi.Record)) error {
	// By windows, in calls of at most guestChunk windows or about
	// guestChunk records (a window of more goes alone).
	for lo := 0; lo < len(fires); {
		hi, n := lo, 0
		for hi < len(fires) && (hi == lo || hi-lo < guestChunk && n+len(fires[hi].Recs) <= guestChunk) {
			n += len(fires[hi].Recs)
			hi++
		}
		f.fires = f.fires[:0]
		for _, fi := range fires[lo:hi] {
			f.fires = append(f.fires, plugin.FireContents{Key: fi.Key, Window: guestWindow(fi), Recs: fi.Recs})
		}
		f.out.Reset()
		if err := f.st.workers[f.worker].inst.WindowFire(ctx, f.fires, &f.out); err != nil {
			return err
		}
		base := lo
		if err := f.st.fired(&f.out, fires[lo:hi], true, func(i int, r abi.Record) { emit(base+i, r) }); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// refused is the error of a record a window function refused: the
// plugin's error as it said it (which names the plugin and says the
// record was rejected), wrapping plugin.ErrRejected.
type refused string

func (r refused) Error() string { return string(r) }

// Is makes errors.Is(r, plugin.ErrRejected) true.
func (r refused) Is(target error) bool { return target == plugin.ErrRejected }

// guestWindow is a firing window as the guest sees it.
func guestWindow(f window.Fire) plugin.Window {
	w := plugin.Window{Start: f.Window.Start, End: f.Window.End, Firing: plugin.FiringOnTime}
	switch f.Firing {
	case window.EarlyFiring:
		w.Firing = plugin.FiringEarly
	case window.LateFiring:
		w.Firing = plugin.FiringLate
	}
	return w
}

// fired hands a fire call's results to emit, and dead-letters what the
// plugin rejected: a firing of an aggregate (a record of its key, its
// accumulator and the window's headers), or records of a window
// function's windows (members: a reject's Index numbers the records of
// fires across the call).
func (st *windowStage) fired(out *plugin.Output, fires []window.Fire, members bool, emit func(i int, r abi.Record)) error {
	for _, r := range out.Records {
		emit(int(r.Origin), r)
	}
	for _, r := range out.Rejects {
		if !members {
			f := &fires[r.Index]
			st.fail(f, abi.Record{Key: f.Key, Value: bytes.Clone(f.Acc), Time: f.Window.MaxTime(), Headers: firingHeaders(f)}, r.Err)
			continue
		}
		k := r.Index
		for i := range fires {
			if k < len(fires[i].Recs) {
				st.fail(&fires[i], copyRecord(fires[i].Recs[k]), r.Err)
				break
			}
			k -= len(fires[i].Recs)
		}
	}
	return nil
}

// firingHeaders returns the headers a guest sees on a firing window
// (abi.HeaderWindowStart, HeaderWindowEnd and HeaderFiring).
func firingHeaders(f *window.Fire) []abi.Header {
	return []abi.Header{
		{Name: []byte(abi.HeaderWindowStart), Value: abi.AppendWindowTime(nil, f.Window.Start)},
		{Name: []byte(abi.HeaderWindowEnd), Value: abi.AppendWindowTime(nil, f.Window.End)},
		{Name: []byte(abi.HeaderFiring), Value: []byte(guestWindow(*f).Firing.String())},
	}
}
