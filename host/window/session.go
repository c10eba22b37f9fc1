package window

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/state"
)

// session is a session of one key while Add merges a batch into it: the
// stored sessions it covers and the batch's records it takes.
type session struct {
	w       Window
	members []int // indexes into sessWork.stored, in order of start
	recs    []int // indexes into recs, in arrival order
}

// storedSession is a session read from state.
type storedSession struct {
	w       Window
	count   uint64
	payload []byte
}

// sessWork is the records of one key in a batch of session windows.
type sessWork struct {
	key    []byte
	recs   []int
	stored []storedSession
	plans  []session
	// set per plan by the fold
	accs  [][]byte
	count []uint64
}

// addSessions is Add for session windows. Each record opens the session
// [t, t+gap), which merges with every session of its key it overlaps or
// touches (Flink's rule); records are taken in order, so lateness is
// decided against the sessions as the earlier records left them. State is
// read once per key (a scan of its sessions) and written once per
// session that changed. Sessions are merged before the function folds the
// records, so a record the function rejects still extends its session.
func (o *Operator) addSessions(ctx context.Context, sess *state.Session, recs []abi.Record, wms []int64, now int64) ([]Late, error) {
	var late []Late
	clear(o.keyIndex)
	var keys []sessWork
	for i := range recs {
		gi, ok := o.keyIndex[string(recs[i].Key)]
		if !ok {
			gi = len(keys)
			o.keyIndex[string(recs[i].Key)] = gi
			keys = append(keys, sessWork{key: recs[i].Key})
		}
		keys[gi].recs = append(keys[gi].recs, i)
	}
	gap := int64(o.spec.Gap)
	for ki := range keys {
		kw := &keys[ki]
		err := o.slicesOf(sess, kw.key, -1<<63, 1<<63-1, func(s Window, n uint64, p []byte) bool {
			kw.stored = append(kw.stored, storedSession{w: s, count: n, payload: slices.Clone(p)})
			return true
		})
		if err != nil {
			return late, err
		}
		o.sessions = o.sessions[:0]
		for j := range kw.stored {
			o.sessions = append(o.sessions, session{w: kw.stored[j].w, members: []int{j}})
		}
		for _, i := range kw.recs {
			t := o.assignTime(&recs[i], now)
			m := session{w: Window{t, satAdd(t, gap)}}
			touched := 0
			for _, s := range o.sessions {
				if s.w.Start <= m.w.End && s.w.End >= m.w.Start {
					m.w.Start, m.w.End = min(m.w.Start, s.w.Start), max(m.w.End, s.w.End)
					touched++
				}
			}
			if o.expired(m.w, wms[i]) {
				late = append(late, o.lateRecord(i, recs[i].Time, m.w, wms[i]))
				continue
			}
			kept := o.sessions[:0]
			var merged []session
			for _, s := range o.sessions {
				if s.w.Start <= m.w.End && s.w.End >= m.w.Start {
					merged = append(merged, s)
				} else {
					kept = append(kept, s)
				}
			}
			for _, s := range merged {
				m.members = append(m.members, s.members...)
				m.recs = append(m.recs, s.recs...)
			}
			m.recs = append(m.recs, i)
			slices.SortFunc(m.members, func(a, b int) int { return cmpWindow(kw.stored[a].w, kw.stored[b].w) })
			o.sessions = append(kept, m)
		}
		for _, s := range o.sessions {
			if len(s.recs) > 0 || len(s.members) > 1 {
				slices.Sort(s.recs) // arrival order
				kw.plans = append(kw.plans, s)
			}
		}
		kw.accs = make([][]byte, len(kw.plans))
		kw.count = make([]uint64, len(kw.plans))
	}
	late, err := o.foldSessions(ctx, keys, recs, late)
	if err != nil {
		return late, err
	}
	for ki := range keys {
		kw := &keys[ki]
		if err := o.writeSessions(sess, kw, wms[kw.recs[len(kw.recs)-1]], now); err != nil {
			return late, err
		}
	}
	return late, nil
}

// foldSessions merges the stored accumulators of each planned session
// and folds its new records, with one Merge call per round and one Add
// call; a collecting function's contents are concatenated.
func (o *Operator) foldSessions(ctx context.Context, keys []sessWork, recs []abi.Record, late []Late) ([]Late, error) {
	type ref struct{ k, p int }
	for ki := range keys {
		kw := &keys[ki]
		for pi, pl := range kw.plans {
			for _, j := range pl.members {
				kw.count[pi] += kw.stored[j].count
			}
			if len(pl.members) > 0 {
				kw.accs[pi] = kw.stored[pl.members[0]].payload
			}
			if o.acc == nil {
				var b []byte
				for _, j := range pl.members {
					b = append(b, kw.stored[j].payload...)
				}
				for _, i := range pl.recs {
					b = appendRecord(b, &recs[i])
				}
				kw.accs[pi] = b
				kw.count[pi] += uint64(len(pl.recs))
			}
		}
	}
	if o.acc == nil {
		return late, nil
	}
	var pairs []Pair
	var who []ref
	for r := 1; ; r++ {
		pairs, who = pairs[:0], who[:0]
		for ki := range keys {
			kw := &keys[ki]
			for pi, pl := range kw.plans {
				if r < len(pl.members) {
					pairs = append(pairs, Pair{Key: kw.key, A: kw.accs[pi], B: kw.stored[pl.members[r]].payload})
					who = append(who, ref{ki, pi})
				}
			}
		}
		if len(pairs) == 0 {
			break
		}
		if err := o.acc.Merge(ctx, pairs); err != nil {
			return late, fmt.Errorf("window: merge: %w", err)
		}
		for j, w := range who {
			keys[w.k].accs[w.p] = slices.Clone(pairs[j].Out)
		}
	}
	var groups []Group
	who = who[:0]
	for ki := range keys {
		kw := &keys[ki]
		for pi, pl := range kw.plans {
			if len(pl.recs) == 0 {
				continue
			}
			g := Group{Key: kw.key, Slice: pl.w, Acc: kw.accs[pi]}
			for _, i := range pl.recs {
				g.Recs = append(g.Recs, recs[i])
			}
			groups = append(groups, g)
			who = append(who, ref{ki, pi})
		}
	}
	if len(groups) == 0 {
		return late, nil
	}
	if err := o.acc.Add(ctx, groups); err != nil {
		return late, fmt.Errorf("window: add: %w", err)
	}
	for j, w := range who {
		kw := &keys[w.k]
		g := &groups[j]
		accepted := len(g.Recs)
		for _, rj := range g.Rejected {
			if rj.Index < 0 || rj.Index >= len(g.Recs) {
				return late, fmt.Errorf("window: add: rejection of record %d of a group of %d", rj.Index, len(g.Recs))
			}
			late = append(late, Late{Index: kw.plans[w.p].recs[rj.Index], Rejected: true, Reason: rj.Reason})
			o.stats.rejected.Add(1)
			accepted--
		}
		if accepted > 0 || kw.accs[w.p] != nil {
			kw.accs[w.p] = g.Out
		}
		kw.count[w.p] += uint64(accepted)
	}
	return late, nil
}

// writeSessions writes the planned sessions of one key: the merged
// session replaces the stored ones it covers, with their timers; a
// covered session whose window it keeps keeps its firing record.
func (o *Operator) writeSessions(sess *state.Session, kw *sessWork, wm, now int64) error {
	for pi, pl := range kw.plans {
		if kw.count[pi] == 0 {
			continue // a new session whose records were all rejected
		}
		existed := false
		for _, j := range pl.members {
			old := kw.stored[j].w
			if old == pl.w {
				existed = true
				continue
			}
			if err := sess.DeleteKey(o.table, o.sliceKey(kw.key, old)); err != nil {
				return fmt.Errorf("window: delete session %v of key %q: %w", old, kw.key, err)
			}
			o.stats.purged.Add(1)
			if o.keepMeta {
				if err := sess.DeleteKey(o.table, o.metaKey(kw.key, old)); err != nil {
					return fmt.Errorf("window: delete firings of %v of key %q: %w", old, kw.key, err)
				}
			}
			if err := o.deleteWindowTimer(sess, o.fireDomain, old.MaxTime(), kw.key, timerFire, old); err != nil {
				return err
			}
			if err := o.deleteWindowTimer(sess, state.EventTime, satAdd(old.MaxTime(), o.lateness), kw.key, timerCleanup, old); err != nil {
				return err
			}
		}
		o.vbuf = binary.AppendUvarint(o.vbuf[:0], kw.count[pi])
		o.vbuf = append(o.vbuf, kw.accs[pi]...)
		if err := sess.PutKey(o.table, o.sliceKey(kw.key, pl.w), o.vbuf); err != nil {
			return fmt.Errorf("window: write session %v of key %q: %w", pl.w, kw.key, err)
		}
		if !existed {
			o.stats.opened.Add(1)
		}
		if o.spec.EarlyInterval > 0 {
			if err := o.setEarlyTimer(sess, kw.key, now); err != nil {
				return err
			}
		}
		if err := o.setWindowTimer(sess, o.fireDomain, pl.w.MaxTime(), kw.key, timerFire, pl.w); err != nil {
			return err
		}
	}
	return nil
}
