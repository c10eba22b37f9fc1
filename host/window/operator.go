package window

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/state"
)

// DefaultNamespace is the state namespace of an operator made without
// WithNamespace.
const DefaultNamespace = "window"

// Option configures New.
type Option func(*Operator)

// WithNamespace sets the prefix of the namespaces in which the operator
// keeps its state and timers. Operators that share a store's timers (every
// operator of a job does) need distinct namespaces.
func WithNamespace(ns string) Option {
	return func(o *Operator) { o.ns = []byte(ns) }
}

// Operator is a window operator: it assigns records to windows, keeps
// their accumulators or contents in keyed state, and fires windows as
// their triggers say. It holds no per-key state itself: every slice,
// firing count and timer lives in the caller's state.Session, so it is
// committed with the source positions, survives a crash, and moves with
// its key group. Add and Advance reuse scratch buffers: an Operator is
// used by one goroutine at a time (one per worker, or one shared under the
// executor's barrier).
type Operator struct {
	spec  Spec
	sl    slicer
	fn    Function
	acc   Accumulator // nil for a collecting function
	table *state.Table

	ns, nsSlice, nsMeta, nsPend []byte
	wms                         []int64 // Add's watermarks for AddAt

	assignDomain, fireDomain state.TimeDomain
	processingTimers         bool // it sets timers of processing time
	// strayFree are the key groups known to hold none of this
	// namespace's processing-time timers, for an operator that sets none
	// (processingTimers false): such timers are strays, left by the same
	// window configured with processing time before a restart, or in a
	// group moved here from a host that ran it so. Advance looks for
	// them in a key group until it finds none.
	strayFree   map[int]bool
	keepMeta    bool // a window may fire more than once
	purgeAtFire bool // nothing can come after the on-time firing
	countN      uint64
	countFiring Firing
	countPurge  bool
	lateness    int64

	stats counters

	// scratch, reused from one call to the next
	seed     maphash.Seed
	index    map[uint64]int32 // a hash of (slice, key) -> its first group
	keyIndex map[string]int   // sessions: a key -> its group
	groups   []work
	fnGroups []Group
	active   []int
	kbuf     []byte
	ubuf     []byte
	vbuf     []byte
	sessions []session

	// Advance's scratch
	advancing bool
	due       []dueTimer // the timers due when Advance began, sorted
	extra     timerHeap  // the timers set during Advance that are due
	tarena    []byte     // the routes and names of due and extra
	parena    []byte     // the payloads of the firings (keep)
	plist     [][]byte   // the parts of the firings, each a run of it
	pstart    int        // where the run being built starts in plist
	wm, now   int64
	fires     []pendingFire
	sortFires bool        // fires are not in the order of their timers
	kept      []keptSlice // fireSlidingRun's slices of a key
}

type counters struct {
	opened, purged, fired, late, rejected atomic.Int64
}

// Stats are an operator's counters since it was made.
type Stats struct {
	// Opened and Purged count the slices (panes) created and removed;
	// Opened-Purged is the number open, counted since the operator was
	// made (a restart starts again from zero).
	Opened, Purged int64
	// Fired counts window firings, Late the records too late to be
	// added, Rejected the records the function refused.
	Fired, Late, Rejected int64
}

// Stats returns the operator's counters. It is safe to call concurrently
// with Add and Advance.
func (o *Operator) Stats() Stats {
	return Stats{
		Opened: o.stats.opened.Load(), Purged: o.stats.purged.Load(),
		Fired: o.stats.fired.Load(), Late: o.stats.late.Load(), Rejected: o.stats.rejected.Load(),
	}
}

// New returns an operator for spec that runs fn and keeps its state in
// table.
func New(spec Spec, fn Function, table *state.Table, opts ...Option) (*Operator, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("window: no function")
	}
	if table == nil {
		return nil, fmt.Errorf("window: no state table")
	}
	o := &Operator{spec: spec, sl: newSlicer(&spec), fn: fn, table: table, ns: []byte(DefaultNamespace),
		seed: maphash.MakeSeed(), index: map[uint64]int32{}, keyIndex: map[string]int{}, lateness: int64(spec.Lateness),
		strayFree: map[int]bool{}}
	o.acc, _ = fn.(Accumulator)
	for _, opt := range opts {
		opt(o)
	}
	if len(o.ns) == 0 {
		return nil, fmt.Errorf("window: empty namespace")
	}
	o.nsSlice = append(slices.Clip(o.ns), sliceSuffix...)
	o.nsMeta = append(slices.Clip(o.ns), metaSuffix...)
	o.nsPend = append(slices.Clip(o.ns), pendingSuffix...)
	if spec.Domain == ProcessingTime {
		o.assignDomain, o.fireDomain = state.ProcessingTime, state.ProcessingTime
	}
	if spec.Trigger == ProcessingTimeTrigger {
		o.fireDomain = state.ProcessingTime
	}
	switch {
	case spec.Trigger == Count:
		o.countN, o.countFiring, o.countPurge = uint64(spec.Count), OnTimeFiring, spec.Assigner == Global
	case spec.EarlyCount > 0:
		o.countN, o.countFiring = uint64(spec.EarlyCount), EarlyFiring
	}
	o.processingTimers = o.assignDomain == state.ProcessingTime || o.fireDomain == state.ProcessingTime || spec.EarlyInterval > 0
	o.keepMeta = spec.Lateness > 0 || spec.EarlyCount > 0 || spec.EarlyInterval > 0 || spec.Trigger != OnTime
	o.purgeAtFire = spec.Domain == ProcessingTime || (spec.Trigger == OnTime && spec.Lateness == 0)
	return o, nil
}

// Spec returns the operator's window specification.
func (o *Operator) Spec() Spec { return o.spec }

// work is the records of one batch for one (key, slice).
type work struct {
	key      []byte
	slice    Window
	recs     []abi.Record
	idx      []int
	count    uint64
	payload  []byte
	own      []byte // a buffer for payload when the operator builds it
	hasAcc   bool
	existed  bool
	ref      state.Ref // the slice's entry when it existed
	chain    int32     // the next group of the same hash, -1 for none
	next     int
	accepted int
	// wm is the watermark when the group's last record came.
	wm int64
}

func (o *Operator) sliceKey(key []byte, w Window) state.Key {
	o.ubuf = appendWindow(o.ubuf[:0], w)
	return state.Key{Route: key, Namespace: o.nsSlice, User: o.ubuf}
}

func (o *Operator) metaKey(key []byte, w Window) state.Key {
	o.ubuf = appendWindow(o.ubuf[:0], w)
	return state.Key{Route: key, Namespace: o.nsMeta, User: o.ubuf}
}

// satAdd returns a+b, saturated at the int64 range (b >= 0).
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// expired reports whether w is past its allowed lateness at watermark wm:
// its state is gone or about to be, and a record for it is late.
func (o *Operator) expired(w Window, wm int64) bool {
	return o.assignDomain == state.EventTime && w != globalWindow && satAdd(w.MaxTime(), o.lateness) <= wm
}

// assignTime returns the time by which rec is assigned to windows.
func (o *Operator) assignTime(rec *abi.Record, now int64) int64 {
	if o.assignDomain == state.ProcessingTime {
		return now
	}
	return rec.Time
}

func (o *Operator) fireNow(wm, now int64) int64 {
	if o.fireDomain == state.ProcessingTime {
		return now
	}
	return wm
}

func (o *Operator) lateRecord(i int, t int64, w Window, wm int64) Late {
	o.stats.late.Add(1)
	return Late{Index: i, Reason: fmt.Sprintf("event time %s is late: window %v closed when the watermark passed %s (allowed lateness %v)",
		time.Unix(0, t).UTC().Format(time.RFC3339Nano), w, time.Unix(0, satAdd(w.MaxTime(), o.lateness)).UTC().Format(time.RFC3339Nano), o.spec.Lateness)}
}

// Add adds a batch of records at watermark wm and processing time now:
// AddAt with wm for every record.
func (o *Operator) Add(ctx context.Context, sess *state.Session, recs []abi.Record, wm, now int64) ([]Late, error) {
	o.wms = o.wms[:0]
	for range recs {
		o.wms = append(o.wms, wm)
	}
	return o.AddAt(ctx, sess, recs, o.wms, now)
}

// AddAt adds a batch of records at their watermarks wms and processing
// time now. It
// assigns each record to its slice, groups the batch by (key, slice), and
// reads and writes each group's state once; it sets the timers the
// windows need. Records of one key are folded in their order in recs. It
// returns the records it did not add: too late for every window they
// belong to, or rejected by the function.
//
// wms[i] is the watermark when record i came: at least the one the last
// Advance reached, and below every firing the operator has pending (the
// records of a batch arrived before the watermark that follows them, as
// in Flink; a caller that fires between records passes each its own).
// For processing-time windows now is later than the last Advance's: a
// record is then never added to a window that has fired and been purged.
// Add emits nothing; a count firing is emitted by the next Advance.
func (o *Operator) AddAt(ctx context.Context, sess *state.Session, recs []abi.Record, wms []int64, now int64) ([]Late, error) {
	if len(wms) != len(recs) {
		return nil, fmt.Errorf("window: %d watermarks for %d records", len(wms), len(recs))
	}
	if o.spec.Assigner == Session {
		return o.addSessions(ctx, sess, recs, wms, now)
	}
	var late []Late
	clear(o.index)
	o.groups = o.groups[:0]
	for i := range recs {
		r := &recs[i]
		s := o.sl.sliceOf(o.assignTime(r, now))
		wm := wms[i]
		if last := o.sl.lastWindow(s); o.expired(last, wm) {
			late = append(late, o.lateRecord(i, r.Time, last, wm))
			continue
		}
		gi := o.group(r.Key, s)
		g := &o.groups[gi]
		g.recs = append(g.recs, *r)
		g.idx = append(g.idx, i)
		g.wm = wm
	}
	for gi := range o.groups {
		g := &o.groups[gi]
		v, ref, ok, err := sess.GetKeyRef(o.table, o.sliceKey(g.key, g.slice))
		if err != nil {
			return late, fmt.Errorf("window: read slice %v of key %q: %w", g.slice, g.key, err)
		}
		if ok {
			if g.count, g.payload, err = splitSlice(v); err != nil {
				return late, fmt.Errorf("window: slice %v of key %q: %w", g.slice, g.key, err)
			}
			g.existed, g.hasAcc, g.ref = true, true, ref
		}
	}
	var err error
	if late, err = o.fold(ctx, sess, late); err != nil {
		return late, err
	}
	for gi := range o.groups {
		g := &o.groups[gi]
		if g.accepted == 0 {
			continue // every record rejected: nothing changed
		}
		k := o.sliceKey(g.key, g.slice)
		if o.countPurge && !g.hasAcc {
			if g.existed {
				if err := sess.DeleteKey(o.table, k); err != nil {
					return late, fmt.Errorf("window: purge slice %v of key %q: %w", g.slice, g.key, err)
				}
				o.stats.purged.Add(1)
			}
			if err := o.sliceTimers(sess, g.key, g.slice, false, g.wm, now); err != nil {
				return late, err
			}
			continue
		}
		o.vbuf = binary.AppendUvarint(o.vbuf[:0], g.count)
		o.vbuf = append(o.vbuf, g.payload...)
		if g.existed {
			sess.PutRef(g.ref, o.vbuf)
		} else if err := sess.PutKey(o.table, k, o.vbuf); err != nil {
			return late, fmt.Errorf("window: write slice %v of key %q: %w", g.slice, g.key, err)
		}
		if !g.existed {
			o.stats.opened.Add(1)
		}
		if err := o.sliceTimers(sess, g.key, g.slice, !g.existed, g.wm, now); err != nil {
			return late, err
		}
	}
	return late, nil
}

// group returns the index in o.groups of the group of (key, s), adding
// it. Groups are found by a hash of the pair, so that no string is made
// per record.
func (o *Operator) group(key []byte, s Window) int {
	o.kbuf = append(appendWindow(o.kbuf[:0], s), key...)
	h := maphash.Bytes(o.seed, o.kbuf)
	first, ok := o.index[h]
	if ok {
		for gi := first; gi >= 0; gi = o.groups[gi].chain {
			if g := &o.groups[gi]; g.slice == s && bytes.Equal(g.key, key) {
				return int(gi)
			}
		}
	} else {
		first = -1
	}
	gi := len(o.groups)
	o.index[h] = int32(gi)
	if gi < cap(o.groups) {
		o.groups = o.groups[:gi+1]
		g := &o.groups[gi]
		*g = work{key: key, slice: s, recs: g.recs[:0], idx: g.idx[:0], own: g.own[:0], chain: first}
	} else {
		o.groups = append(o.groups, work{key: key, slice: s, chain: first})
	}
	return gi
}

// fold runs the groups' records through the function (or appends them to
// the contents), in rounds that stop at each multiple of the count
// trigger so that a count firing sees exactly the records before it.
func (o *Operator) fold(ctx context.Context, sess *state.Session, late []Late) ([]Late, error) {
	for {
		o.fnGroups = o.fnGroups[:0]
		o.active = o.active[:0]
		for gi := range o.groups {
			g := &o.groups[gi]
			n := len(g.recs) - g.next
			if o.countN > 0 {
				n = min(n, int(o.countN-g.count%o.countN))
			}
			if n == 0 {
				continue
			}
			fg := Group{Key: g.key, Slice: g.slice, Recs: g.recs[g.next : g.next+n]}
			if g.hasAcc {
				fg.Acc = g.payload
			}
			o.fnGroups = append(o.fnGroups, fg)
			o.active = append(o.active, gi)
		}
		if len(o.fnGroups) == 0 {
			return late, nil
		}
		if o.acc != nil {
			if err := o.acc.Add(ctx, o.fnGroups); err != nil {
				return late, fmt.Errorf("window: add: %w", err)
			}
		}
		for j, gi := range o.active {
			g := &o.groups[gi]
			fg := &o.fnGroups[j]
			accepted := len(fg.Recs)
			if o.acc != nil {
				for _, rj := range fg.Rejected {
					if rj.Index < 0 || rj.Index >= len(fg.Recs) {
						return late, fmt.Errorf("window: add: rejection of record %d of a group of %d", rj.Index, len(fg.Recs))
					}
					late = append(late, Late{Index: g.idx[g.next+rj.Index], Rejected: true, Reason: rj.Reason})
					o.stats.rejected.Add(1)
					accepted--
				}
				if accepted > 0 || g.hasAcc {
					g.payload, g.hasAcc = fg.Out, true
					if o.countN > 0 { // Out must survive the next round
						g.own = append(g.own[:0], fg.Out...)
						g.payload = g.own
					}
				}
			} else {
				if !g.hasAcc || !sameBuf(g.payload, g.own) {
					g.own = append(g.own[:0], g.payload...)
				}
				for i := range fg.Recs {
					g.own = appendRecord(g.own, &fg.Recs[i])
				}
				g.payload, g.hasAcc = g.own, true
			}
			g.next += len(fg.Recs)
			g.accepted += accepted
			prev := g.count
			g.count += uint64(accepted)
			if o.countN > 0 && accepted > 0 && g.count/o.countN > prev/o.countN {
				if err := o.countFire(sess, g); err != nil {
					return late, err
				}
			}
		}
	}
}

func sameBuf(a, b []byte) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}

// countFire records a count firing of g's window for Advance to emit.
func (o *Operator) countFire(sess *state.Session, g *work) error {
	n := uint32(g.count / o.countN)
	o.ubuf = binary.BigEndian.AppendUint32(appendWindow(o.ubuf[:0], g.slice), n)
	o.vbuf = append(append(o.vbuf[:0], byte(o.countFiring)), g.payload...)
	if err := sess.PutKey(o.table, state.Key{Route: g.key, Namespace: o.nsPend, User: o.ubuf}, o.vbuf); err != nil {
		return fmt.Errorf("window: write count firing of key %q: %w", g.key, err)
	}
	o.kbuf = binary.BigEndian.AppendUint32(appendWindow(append(o.kbuf[:0], timerCount), g.slice), n)
	if err := o.setTimer(sess, state.EventTime, math.MinInt64, g.key, o.kbuf); err != nil {
		return err
	}
	if o.countPurge {
		g.payload, g.hasAcc = nil, false
		g.own = g.own[:0]
	}
	return nil
}

// sliceTimers sets the timers a slice written by Add needs: for a new
// slice the firing of its first window not yet due (later windows are
// chained from it) and the early-firing timer; for a slice of windows
// already due but not expired, their (late) firings.
func (o *Operator) sliceTimers(sess *state.Session, key []byte, s Window, isNew bool, wm, now int64) error {
	if o.spec.EarlyInterval > 0 {
		if err := o.setEarlyTimer(sess, key, now); err != nil {
			return err
		}
	}
	switch {
	case o.spec.Assigner == Global:
		return nil
	case o.spec.Trigger == Count:
		if !isNew {
			return nil
		}
		if o.assignDomain == state.ProcessingTime {
			return o.setWindowTimer(sess, state.ProcessingTime, s.MaxTime(), key, timerCleanup, s)
		}
		return o.setWindowTimer(sess, state.EventTime, satAdd(s.MaxTime(), o.lateness), key, timerCleanup, s)
	}
	fireNow := o.fireNow(wm, now)
	first, last := o.sl.firstWindow(s), o.sl.lastWindow(s)
	if isNew {
		w := first
		for w.Start <= last.Start && w.MaxTime() <= fireNow {
			w = o.sl.next(w)
		}
		covered := false
		if o.spec.Assigner == Sliding && w.Start < s.Start {
			// The slice before this one lies in w too: w already holds
			// records, so a timer or the chain fires it and the chain
			// goes on to the later windows. A map probe spares a timer
			// per slice.
			if prev := o.sl.sliceOf(s.Start - 1); prev.Start >= w.Start {
				_, ok, err := sess.GetKey(o.table, o.sliceKey(key, prev))
				if err != nil {
					return fmt.Errorf("window: read slice %v of key %q: %w", prev, key, err)
				}
				covered = ok
			}
		}
		if w.Start <= last.Start && !covered {
			if err := o.setWindowTimer(sess, o.fireDomain, w.MaxTime(), key, timerFire, w); err != nil {
				return err
			}
		}
	}
	for w := first; w.Start <= last.Start && w.MaxTime() <= fireNow; w = o.sl.next(w) {
		if o.expired(w, wm) {
			continue
		}
		if err := o.setWindowTimer(sess, o.fireDomain, w.MaxTime(), key, timerFire, w); err != nil {
			return err
		}
	}
	return nil
}

func (o *Operator) setEarlyTimer(sess *state.Session, key []byte, now int64) error {
	iv := int64(o.spec.EarlyInterval)
	at := satAdd(now-mod(now, iv), iv)
	return o.setTimer(sess, state.ProcessingTime, at, key, []byte{timerEarly})
}

func (o *Operator) setWindowTimer(sess *state.Session, d state.TimeDomain, t int64, key []byte, kind byte, w Window) error {
	o.kbuf = appendWindow(append(o.kbuf[:0], kind), w)
	return o.setTimer(sess, d, t, key, o.kbuf)
}

func (o *Operator) deleteWindowTimer(sess *state.Session, d state.TimeDomain, t int64, key []byte, kind byte, w Window) error {
	o.kbuf = appendWindow(append(o.kbuf[:0], kind), w)
	tm := state.Timer{Domain: d, Time: t, Route: key, Namespace: o.ns, Name: o.kbuf}
	if err := sess.DeleteTimer(tm); err != nil {
		return fmt.Errorf("window: delete timer of key %q: %w", key, err)
	}
	return nil // Advance skips a listed timer that is no longer set
}

// setTimer sets a timer of the operator; during Advance a timer already
// due joins the ones being fired.
func (o *Operator) setTimer(sess *state.Session, d state.TimeDomain, t int64, key, name []byte) error {
	tm := state.Timer{Domain: d, Time: t, Route: key, Namespace: o.ns, Name: name}
	if err := sess.SetTimer(tm); err != nil {
		return fmt.Errorf("window: set timer of key %q: %w", key, err)
	}
	if o.advancing && o.isDue(d, t) {
		// It may be listed already: Advance fires it once, and skips
		// the copies it finds no longer set.
		o.extra.push(o.dueTimer(d, t, key, name))
	}
	return nil
}

func (o *Operator) isDue(d state.TimeDomain, t int64) bool {
	if d == state.ProcessingTime {
		return t <= o.now
	}
	return t <= o.wm
}

// dueTimer is a timer of the operator that is due during Advance.
type dueTimer struct {
	domain      state.TimeDomain
	time        int64
	route, name []byte
}

func (a *dueTimer) compare(b *dueTimer) int {
	// At equal times processing-time timers go first, so that a late
	// firing by processing time comes before the purge by event time.
	return cmp.Or(cmp.Compare(a.time, b.time), cmp.Compare(b.domain, a.domain),
		bytes.Compare(a.route, b.route), bytes.Compare(a.name, b.name))
}

// timerHeap is a binary min-heap of due timers (container/heap would box
// every timer it pops).
type timerHeap []dueTimer

func (h *timerHeap) push(t dueTimer) {
	*h = append(*h, t)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[i].compare(&s[p]) >= 0 {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *timerHeap) pop() dueTimer {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = dueTimer{}
	s = s[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(s) && s[l].compare(&s[m]) < 0 {
			m = l
		}
		if r := l + 1; r < len(s) && s[r].compare(&s[m]) < 0 {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
