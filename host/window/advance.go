package window

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/state"
)

// pendingFire is a window firing collected by Advance before the function
// runs: its parts are the payloads of its slices in time order.
type pendingFire struct {
	key    []byte
	window Window
	firing Firing
	seq    uint32
	parts  [][]byte
}

// Advance fires every window of the given key groups whose timer is due
// at watermark wm (event time) and processing time now, in order of the
// timers' times, then keys; it calls the function once for all of them,
// passes each result to emit, and purges the windows that expired. A
// firing's state changes are made through sess, so a rollback takes them
// back with the batch. A Result may alias the operator's and the
// function's buffers, reused by the next Advance: emit copies what it
// keeps.
func (o *Operator) Advance(ctx context.Context, sess *state.Session, keyGroups []int, wm, now int64, emit func(Result)) error {
	o.wm, o.now = wm, now
	o.due, o.extra = o.due[:0], o.extra[:0]
	o.tarena = o.tarena[:0]
	if cap(o.parena) > arenaChunk {
		o.parena = nil // a huge payload's chunk is not kept
	}
	o.parena = o.parena[:0]
	if cap(o.plist) > 4*partsChunk {
		o.plist = nil
	}
	clear(o.plist)
	o.plist, o.pstart = o.plist[:0], 0
	o.fires, o.sortFires = o.fires[:0], false
	o.advancing = true
	defer func() { o.advancing = false }()
	for _, kg := range keyGroups {
		domains := []state.TimeDomain{state.EventTime, state.ProcessingTime}
		if !o.processingTimers {
			strays, err := o.strays(sess, kg)
			if err != nil {
				return err
			}
			if !strays {
				domains = domains[:1] // a seek per key group and batch saved
			}
		}
		for _, d := range domains {
			upTo := wm
			if d == state.ProcessingTime {
				upTo = now
			}
			err := sess.Timers(kg, d, upTo, func(tm state.Timer) bool {
				if string(tm.Namespace) == string(o.ns) {
					o.due = append(o.due, o.dueTimer(d, tm.Time, tm.Route, tm.Name))
				}
				return true
			})
			if err != nil {
				return fmt.Errorf("window: timers of key group %d: %w", kg, err)
			}
		}
	}
	// The timers listed now are sorted once; the few that firings set
	// and that are due at once join a heap, and the two are merged.
	slices.SortFunc(o.due, func(a, b dueTimer) int { return a.compare(&b) })
	for i := 0; i < len(o.due) || len(o.extra) > 0; {
		var t dueTimer
		if len(o.extra) > 0 && (i == len(o.due) || o.extra[0].compare(&o.due[i]) < 0) {
			t = o.extra.pop()
		} else {
			t = o.due[i]
			i++
		}
		tm := state.Timer{Domain: t.domain, Time: t.time, Route: t.route, Namespace: o.ns, Name: t.name}
		ok, err := sess.RemoveTimer(tm)
		if err != nil {
			return fmt.Errorf("window: delete timer of key %q: %w", t.route, err)
		}
		if !ok {
			continue // deleted since it was due, or listed twice
		}
		if err := o.onTimer(sess, &t); err != nil {
			return err
		}
	}
	if o.sortFires {
		// fireSlidingRun fired a key's later windows with its first:
		// back in the order of their timers (every firing is then an
		// on-time one of a fire timer, whose time is the window's end
		// less one).
		slices.SortStableFunc(o.fires, func(a, b pendingFire) int {
			return cmp.Or(cmp.Compare(a.window.End, b.window.End), bytes.Compare(a.key, b.key))
		})
	}
	return o.fire(ctx, emit)
}

// strays reports whether key group kg may hold processing-time timers of
// this operator's namespace when the operator sets none (see
// Operator.strayFree): those due fire as they would have, and the group is
// looked at again until it holds none.
func (o *Operator) strays(sess *state.Session, kg int) (bool, error) {
	if o.strayFree[kg] {
		return false, nil
	}
	found := false
	err := sess.Timers(kg, state.ProcessingTime, math.MaxInt64, func(tm state.Timer) bool {
		found = string(tm.Namespace) == string(o.ns)
		return !found
	})
	if err != nil {
		return false, fmt.Errorf("window: timers of key group %d: %w", kg, err)
	}
	if !found {
		o.strayFree[kg] = true
	}
	return found, nil
}

// The sizes of the chunks of Advance's payload arena (bytes) and parts
// lists (payloads).
const (
	arenaChunk = 64 << 10
	partsChunk = 4096
)

// keep returns a copy of p in the operator's payload arena, valid until
// the next Advance: a firing's slices and merged accumulators are copied
// there rather than each into an allocation of its own. The arena is a
// chain of chunks: a full one is left to the copies that point into it
// and a new one started, so that nothing is copied twice.
func (o *Operator) keep(p []byte) []byte {
	if len(o.parena)+len(p) > cap(o.parena) {
		o.parena = make([]byte, 0, max(len(p), arenaChunk))
	}
	off := len(o.parena)
	o.parena = append(o.parena, p...)
	return o.parena[off:len(o.parena):len(o.parena)]
}

// beginParts starts the list of a firing's parts; addPart adds a copy of
// p to it, and parts returns it. Lists share chunks as keep's copies do:
// when a chunk is full, only the list being built moves to a new one.
func (o *Operator) beginParts() { o.pstart = len(o.plist) }

func (o *Operator) addPart(p []byte) { o.addKept(o.keep(p)) }

// addKept adds p, a copy that keep returned, to the list without copying
// it again.
func (o *Operator) addKept(p []byte) {
	if len(o.plist) == cap(o.plist) {
		run := o.plist[o.pstart:]
		n := make([][]byte, len(run), max(2*len(run), partsChunk))
		copy(n, run)
		o.plist, o.pstart = n, 0
	}
	o.plist = append(o.plist, p)
}

func (o *Operator) parts() [][]byte {
	return o.plist[o.pstart:len(o.plist):len(o.plist)]
}

// dueTimer returns a due timer whose route and name are copied into the
// operator's timer arena. The arena is only appended to during Advance,
// so the copies stay valid until the next Advance.
func (o *Operator) dueTimer(d state.TimeDomain, t int64, route, name []byte) dueTimer {
	off := len(o.tarena)
	o.tarena = append(append(o.tarena, route...), name...)
	r := o.tarena[off : off+len(route) : off+len(route)]
	n := o.tarena[off+len(route) : len(o.tarena) : len(o.tarena)]
	return dueTimer{domain: d, time: t, route: r, name: n}
}

// onTimer handles one due timer.
func (o *Operator) onTimer(sess *state.Session, t *dueTimer) error {
	if len(t.name) == 1 && t.name[0] == timerEarly {
		return o.onEarly(sess, t.route)
	}
	if len(t.name) < 1+windowLen {
		return fmt.Errorf("window: timer %q of key %q: %w", t.name, t.route, ErrCorrupt)
	}
	w, _ := decodeWindow(t.name[1:])
	switch t.name[0] {
	case timerFire:
		return o.onFire(sess, t.route, w)
	case timerCleanup:
		return o.purge(sess, t.route, w)
	case timerCount:
		return o.onCount(sess, t.route, t.name[1:])
	}
	return fmt.Errorf("window: timer %q of key %q: %w", t.name, t.route, ErrCorrupt)
}

// onFire fires w for key when its time has come (on time, or late), and
// then, for an on-time firing, sets the next sliding window's timer and
// purges what no later window needs (or sets the purge timer). A sliding
// window reads the key's slices in one scan for all three.
func (o *Operator) onFire(sess *state.Session, key []byte, w Window) error {
	if o.spec.Assigner == Sliding && o.purgeAtFire && !o.keepMeta {
		return o.fireSlidingRun(sess, key, w)
	}
	m, err := o.meta(sess, key, w)
	if err != nil {
		return err
	}
	onTime := m.flags&metaFired == 0
	purgeNow := onTime && o.purgeAtFire
	o.beginParts()
	var dead []Window
	nw := o.sl.next(w)
	found, next := false, Window{}
	if o.spec.Assigner == Sliding {
		err = o.slicesOf(sess, key, math.MinInt64, math.MaxInt64, func(s Window, _ uint64, p []byte) bool {
			if s.Start >= w.Start && s.End <= w.End {
				o.addPart(p)
			}
			if purgeNow && o.sl.lastWindow(s).End <= w.End {
				dead = append(dead, s)
			}
			if onTime && !found && s.Start >= nw.Start {
				found, next = true, s
			}
			return s.Start < w.End || (onTime && !found)
		})
	} else {
		var v []byte
		var ok bool
		if v, ok, err = sess.GetKey(o.table, o.sliceKey(key, w)); err == nil && ok {
			var p []byte
			if _, p, err = splitSlice(v); err == nil {
				o.addPart(p)
				if purgeNow {
					dead = append(dead, w)
				}
			}
		}
	}
	if err != nil {
		return fmt.Errorf("window: fire %v of key %q: %w", w, key, err)
	}
	parts := o.parts()
	if len(parts) == 0 {
		return nil
	}
	firing := OnTimeFiring
	if !onTime {
		firing = LateFiring
	}
	if err := o.recordFiring(sess, key, w, m, true); err != nil {
		return err
	}
	o.fires = append(o.fires, pendingFire{key: slices.Clone(key), window: w, firing: firing, seq: m.seq, parts: parts})
	if !onTime {
		return nil
	}
	if found {
		if o.keepMeta {
			// The next window may have fired already: chain checks.
			if err := o.chain(sess, key, w); err != nil {
				return err
			}
		} else {
			if fw := o.sl.firstWindow(next); fw.End > nw.End {
				nw = fw
			}
			if err := o.setWindowTimer(sess, o.fireDomain, nw.MaxTime(), key, timerFire, nw); err != nil {
				return err
			}
		}
	}
	if !o.purgeAtFire {
		return o.setWindowTimer(sess, state.EventTime, satAdd(w.MaxTime(), o.lateness), key, timerCleanup, w)
	}
	for _, s := range dead {
		if err := sess.DeleteKey(o.table, o.sliceKey(key, s)); err != nil {
			return fmt.Errorf("window: purge slice %v of key %q: %w", s, key, err)
		}
		o.stats.purged.Add(1)
	}
	if o.keepMeta {
		if err := sess.DeleteKey(o.table, o.metaKey(key, w)); err != nil {
			return fmt.Errorf("window: purge firings of %v of key %q: %w", w, key, err)
		}
	}
	return nil
}

// keptSlice is a slice of a key read by fireSlidingRun: its window and a
// copy of its payload in the operator's arena.
type keptSlice struct {
	window  Window
	payload []byte
}

// fireSlidingRun is onFire for a sliding window that fires once, on time,
// and is then purged (no lateness, no early or count trigger): it fires w
// and then each later window of key that is due too, from one scan of the
// key's slices, where a timer each would chain them (set, listed, removed,
// and the slices read again per window). It sets the timer of the first
// window that holds records and is not due, and deletes the slices that
// no later window holds. A later window's timer set before (a slice after
// a gap sets one) is removed as its window fires here, so that Advance
// skips it when it comes to it.
func (o *Operator) fireSlidingRun(sess *state.Session, key []byte, w Window) error {
	due := o.wm
	if o.fireDomain == state.ProcessingTime {
		due = o.now
	}
	// Every slice that a due window may hold starts at or before due; the
	// first one after is kept too, for the next window's timer.
	run := o.kept[:0]
	err := o.slicesOf(sess, key, math.MinInt64, math.MaxInt64, func(s Window, _ uint64, p []byte) bool {
		run = append(run, keptSlice{window: s, payload: o.keep(p)})
		return s.Start <= due
	})
	o.kept = run
	if err != nil {
		return fmt.Errorf("window: fire %v of key %q: %w", w, key, err)
	}
	kc := slices.Clone(key) // shared by the firings
	first := 0              // the first slice that the window may hold
	last := w               // the last window fired
	for fired := 0; ; fired++ {
		for first < len(run) && run[first].window.Start < w.Start {
			first++
		}
		o.beginParts()
		i := first
		for ; i < len(run) && run[i].window.Start < w.End; i++ {
			if run[i].window.End <= w.End {
				o.addKept(run[i].payload)
			}
		}
		parts := o.parts()
		if len(parts) == 0 {
			if fired == 0 {
				return nil // nothing to fire, as onFire
			}
			break
		}
		o.fires = append(o.fires, pendingFire{key: kc, window: w, firing: OnTimeFiring, parts: parts})
		o.sortFires = o.sortFires || fired > 0
		last = w
		// The next window that holds a slice: the first after w, or the
		// first window of the first slice that starts in it or later.
		nw := o.sl.next(w)
		j := first
		for j < len(run) && run[j].window.Start < nw.Start {
			j++
		}
		if j == len(run) {
			break // no later slice
		}
		if fw := o.sl.firstWindow(run[j].window); fw.End > nw.End {
			nw = fw
		}
		if nw.MaxTime() > due {
			if err := o.setWindowTimer(sess, o.fireDomain, nw.MaxTime(), key, timerFire, nw); err != nil {
				return err
			}
			break
		}
		o.kbuf = appendWindow(append(o.kbuf[:0], timerFire), nw)
		tm := state.Timer{Domain: o.fireDomain, Time: nw.MaxTime(), Route: key, Namespace: o.ns, Name: o.kbuf}
		if _, err := sess.RemoveTimer(tm); err != nil {
			return fmt.Errorf("window: delete timer of key %q: %w", key, err)
		}
		w = nw
	}
	for _, s := range run {
		if s.window.Start >= last.End {
			break
		}
		if o.sl.lastWindow(s.window).End > last.End {
			continue
		}
		if err := sess.DeleteKey(o.table, o.sliceKey(key, s.window)); err != nil {
			return fmt.Errorf("window: purge slice %v of key %q: %w", s.window, key, err)
		}
		o.stats.purged.Add(1)
	}
	return nil
}

// slicesOf calls fn with each slice of key whose start is in [from, to),
// in order of start, until fn returns false. The value is valid only
// during the call.
func (o *Operator) slicesOf(sess *state.Session, key []byte, from, to int64, fn func(s Window, count uint64, payload []byte) bool) error {
	var bad error
	err := sess.Scan(o.table, key, o.nsSlice, func(k state.Key, v []byte) bool {
		s, err := decodeWindow(k.User)
		if err != nil {
			bad = err
			return false
		}
		if s.Start < from {
			return true
		}
		if s.Start >= to {
			return false
		}
		n, p, err := splitSlice(v)
		if err != nil {
			bad = err
			return false
		}
		return fn(s, n, p)
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return fmt.Errorf("window: slices of key %q: %w", key, err)
	}
	return nil
}

// fireWindow collects a firing of w for key, if it has records, and
// counts it in the window's firings. It returns the firing's kind.
func (o *Operator) fireWindow(sess *state.Session, key []byte, w Window, early bool) (Firing, bool, error) {
	o.beginParts()
	err := o.slicesOf(sess, key, w.Start, w.End, func(s Window, _ uint64, p []byte) bool {
		if s.End <= w.End && (o.spec.Assigner != Session || s == w) {
			o.addPart(p)
		}
		return true
	})
	parts := o.parts()
	if err != nil || len(parts) == 0 {
		return 0, false, err
	}
	m, err := o.meta(sess, key, w)
	if err != nil {
		return 0, false, err
	}
	firing := OnTimeFiring
	switch {
	case early:
		firing = EarlyFiring
	case m.flags&metaFired != 0:
		firing = LateFiring
	}
	if err := o.recordFiring(sess, key, w, m, firing != EarlyFiring); err != nil {
		return 0, false, err
	}
	o.fires = append(o.fires, pendingFire{key: slices.Clone(key), window: w, firing: firing, seq: m.seq, parts: parts})
	return firing, true, nil
}

// meta returns the firing record of w (zero when it has none).
func (o *Operator) meta(sess *state.Session, key []byte, w Window) (meta, error) {
	if !o.keepMeta {
		return meta{}, nil
	}
	v, ok, err := sess.GetKey(o.table, o.metaKey(key, w))
	if err != nil || !ok {
		return meta{}, err
	}
	m, err := decodeMeta(v)
	if err != nil {
		return meta{}, fmt.Errorf("window: firings of %v of key %q: %w", w, key, err)
	}
	return m, nil
}

// recordFiring writes m, counted one more firing, as w's firing record.
func (o *Operator) recordFiring(sess *state.Session, key []byte, w Window, m meta, final bool) error {
	if !o.keepMeta {
		return nil
	}
	m.seq++
	if final {
		m.flags |= metaFired
	}
	o.vbuf = m.append(o.vbuf[:0])
	if err := sess.PutKey(o.table, o.metaKey(key, w), o.vbuf); err != nil {
		return fmt.Errorf("window: write firings of %v of key %q: %w", w, key, err)
	}
	return nil
}

// chain sets the firing timer of the next sliding window after w that
// holds a slice of key.
func (o *Operator) chain(sess *state.Session, key []byte, w Window) error {
	for nw := o.sl.next(w); ; nw = o.sl.next(nw) {
		found, first := false, Window{}
		err := o.slicesOf(sess, key, nw.Start, math.MaxInt64, func(s Window, _ uint64, _ []byte) bool {
			found, first = true, s
			return false
		})
		if err != nil || !found {
			return err
		}
		if fw := o.sl.firstWindow(first); fw.End > nw.End {
			nw = fw
		}
		// A window of late records may have fired before the ones
		// before it: it has its own late firings.
		m, err := o.meta(sess, key, nw)
		if err != nil {
			return err
		}
		if m.flags&metaFired == 0 {
			return o.setWindowTimer(sess, o.fireDomain, nw.MaxTime(), key, timerFire, nw)
		}
	}
}

// purge removes the slices of key that no window after w needs, and w's
// firing record.
func (o *Operator) purge(sess *state.Session, key []byte, w Window) error {
	var dead []Window
	err := o.slicesOf(sess, key, math.MinInt64, w.End, func(s Window, _ uint64, _ []byte) bool {
		if o.spec.Assigner == Session && s != w {
			return true
		}
		if o.sl.lastWindow(s).End <= w.End {
			dead = append(dead, s)
		}
		return true
	})
	if err != nil {
		return err
	}
	for _, s := range dead {
		if err := sess.DeleteKey(o.table, o.sliceKey(key, s)); err != nil {
			return fmt.Errorf("window: purge slice %v of key %q: %w", s, key, err)
		}
		o.stats.purged.Add(1)
	}
	if o.keepMeta {
		if err := sess.DeleteKey(o.table, o.metaKey(key, w)); err != nil {
			return fmt.Errorf("window: purge firings of %v of key %q: %w", w, key, err)
		}
	}
	return nil
}

// onCount emits a count firing recorded by Add.
func (o *Operator) onCount(sess *state.Session, key, user []byte) error {
	k := state.Key{Route: key, Namespace: o.nsPend, User: user}
	v, ok, err := sess.GetKey(o.table, k)
	if err != nil || !ok {
		return err
	}
	if len(v) < 1 || len(user) != windowLen+4 {
		return fmt.Errorf("window: count firing of key %q: %w", key, ErrCorrupt)
	}
	w, _ := decodeWindow(user)
	firing, payload := Firing(v[0]), o.keep(v[1:])
	if err := sess.DeleteKey(o.table, k); err != nil {
		return fmt.Errorf("window: delete count firing of key %q: %w", key, err)
	}
	m, err := o.meta(sess, key, w)
	if err != nil {
		return err
	}
	if err := o.recordFiring(sess, key, w, m, false); err != nil {
		return err
	}
	o.fires = append(o.fires, pendingFire{key: slices.Clone(key), window: w, firing: firing, seq: m.seq, parts: [][]byte{payload}})
	return nil
}

// onEarly fires the windows of key that are open (not fired on time)
// early, and sets the next early timer while any is left.
func (o *Operator) onEarly(sess *state.Session, key []byte) error {
	var open []Window
	err := o.slicesOf(sess, key, math.MinInt64, math.MaxInt64, func(s Window, _ uint64, _ []byte) bool {
		if o.spec.Assigner == Session {
			open = append(open, s)
			return true
		}
		o.sl.windowsOf(s, func(w Window) { open = append(open, w) })
		return true
	})
	if err != nil {
		return err
	}
	slices.SortFunc(open, func(a, b Window) int { return cmpWindow(a, b) })
	open = slices.Compact(open)
	fireNow := o.fireNow(o.wm, o.now)
	left := false
	for _, w := range open {
		if o.spec.Assigner != Global && (w.MaxTime() <= fireNow || o.expired(w, o.wm)) {
			continue // fires on time, or is gone
		}
		m, err := o.meta(sess, key, w)
		if err != nil {
			return err
		}
		if m.flags&metaFired != 0 {
			continue
		}
		left = true
		if _, _, err := o.fireWindow(sess, key, w, true); err != nil {
			return err
		}
	}
	if !left {
		return nil
	}
	return o.setEarlyTimer(sess, key, o.now)
}

func cmpWindow(a, b Window) int {
	if a.Start != b.Start {
		if a.Start < b.Start {
			return -1
		}
		return 1
	}
	if a.End != b.End {
		if a.End < b.End {
			return -1
		}
		return 1
	}
	return 0
}

// fire runs the function over the collected firings and emits the
// results.
func (o *Operator) fire(ctx context.Context, emit func(Result)) error {
	if len(o.fires) == 0 {
		return nil
	}
	fires := make([]Fire, len(o.fires))
	for i := range o.fires {
		pf := &o.fires[i]
		fires[i] = Fire{Key: pf.key, Window: pf.window, Firing: pf.firing, Seq: pf.seq}
	}
	if o.acc != nil {
		if err := o.mergeParts(ctx, fires); err != nil {
			return err
		}
	} else {
		for i := range o.fires {
			var recs []abi.Record
			for _, p := range o.fires[i].parts {
				var err error
				if recs, err = decodeRecords(recs, o.fires[i].key, p); err != nil {
					return fmt.Errorf("window: contents of %v of key %q: %w", o.fires[i].window, o.fires[i].key, err)
				}
			}
			// Slices are in time order and each in arrival order, so ties
			// keep arrival order.
			slices.SortStableFunc(recs, func(a, b abi.Record) int { return cmpInt(a.Time, b.Time) })
			fires[i].Recs = recs
		}
	}
	o.stats.fired.Add(int64(len(fires)))
	var bad error
	err := o.fn.Fire(ctx, fires, func(i int, r abi.Record) {
		if i < 0 || i >= len(fires) {
			bad = fmt.Errorf("window: fire: result for window %d of %d", i, len(fires))
			return
		}
		f := &fires[i]
		r.Time = f.Window.MaxTime()
		if len(r.Key) == 0 {
			r.Key = f.Key
		}
		emit(Result{Record: r, Key: f.Key, Window: f.Window, Firing: f.Firing, Seq: f.Seq})
	})
	if err != nil {
		return fmt.Errorf("window: fire: %w", err)
	}
	return bad
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mergeParts sets each fire's Acc to the merge of its parts, in rounds
// of one Merge call each.
func (o *Operator) mergeParts(ctx context.Context, fires []Fire) error {
	pairs := make([]Pair, 0, len(fires))
	who := make([]int, 0, len(fires))
	for i := range fires {
		fires[i].Acc = o.fires[i].parts[0]
	}
	for r := 1; ; r++ {
		pairs, who = pairs[:0], who[:0]
		for i := range fires {
			if parts := o.fires[i].parts; r < len(parts) {
				pairs = append(pairs, Pair{Key: fires[i].Key, A: fires[i].Acc, B: parts[r]})
				who = append(who, i)
			}
		}
		if len(pairs) == 0 {
			return nil
		}
		if err := o.acc.Merge(ctx, pairs); err != nil {
			return fmt.Errorf("window: merge: %w", err)
		}
		for j, i := range who {
			fires[i].Acc = o.keep(pairs[j].Out)
		}
	}
}
