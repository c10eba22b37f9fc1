package window

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/abi"
)

// The reference: every window kept explicitly with all its records, each
// record added to every window it belongs to, each window's result
// recomputed from all its records at every firing. It shares no code with
// the operator but the types.

type mrec struct {
	t     int64
	value string
}

type mwin struct {
	recs  []mrec
	fired bool // fired on time
	dirty bool // records added since the last firing
	seq   uint32
	count uint64
}

type mresult struct {
	key    string
	w      Window
	firing Firing
	seq    uint32
	value  string
}

func (a mresult) compare(b mresult) int {
	return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.w.Start, b.w.Start), cmp.Compare(a.w.End, b.w.End),
		cmp.Compare(a.seq, b.seq), cmp.Compare(a.firing, b.firing), cmp.Compare(a.value, b.value))
}

type mpending struct {
	key    string
	w      Window
	firing Firing
	recs   []mrec
}

type model struct {
	spec    Spec
	value   func(key string, w Window, recs []mrec) string
	rejects func(v string) bool
	wins    map[string]map[Window]*mwin
	pending []mpending
	early   map[string]map[int64]bool
}

func newModel(spec Spec, value func(string, Window, []mrec) string, rejects func(string) bool) *model {
	return &model{spec: spec, value: value, rejects: rejects, wins: map[string]map[Window]*mwin{}, early: map[string]map[int64]bool{}}
}

func floorMod(a, b int64) int64 { return ((a % b) + b) % b }

// windows returns the windows time t belongs to (not sessions).
func (m *model) windows(t int64) []Window {
	size, slide, off := int64(m.spec.Size), int64(m.spec.Slide), int64(m.spec.Offset)
	switch m.spec.Assigner {
	case Global:
		return []Window{{math.MinInt64, math.MaxInt64}}
	case Tumbling:
		s := t - floorMod(t-off, size)
		return []Window{{s, s + size}}
	}
	var out []Window
	for s := t - floorMod(t-off, slide); s > t-size; s -= slide {
		out = append(out, Window{s, s + size})
	}
	return out
}

func (m *model) expired(w Window, wm int64) bool {
	return m.spec.Domain == EventTime && m.spec.Assigner != Global && w.End-1+int64(m.spec.Lateness) <= wm
}

func (m *model) fireNow(wm, now int64) int64 {
	if m.spec.Domain == ProcessingTime || m.spec.Trigger == ProcessingTimeTrigger {
		return now
	}
	return wm
}

func (m *model) win(key string, w Window) *mwin {
	if m.wins[key] == nil {
		m.wins[key] = map[Window]*mwin{}
	}
	mw := m.wins[key][w]
	if mw == nil {
		mw = &mwin{}
		m.wins[key][w] = mw
	}
	return mw
}

// add adds records and returns the indexes of the late and rejected ones.
func (m *model) add(recs []abi.Record, wm, now int64) (late, rejected []int) {
	for i, r := range recs {
		key := string(r.Key)
		t := r.Time
		if m.spec.Domain == ProcessingTime {
			t = now
		}
		rec := mrec{r.Time, string(r.Value)}
		if m.spec.Assigner == Session {
			if m.addSession(key, t, rec, wm) {
				late = append(late, i)
				continue
			}
		} else {
			ws := m.windows(t)
			var live []Window
			for _, w := range ws {
				if !m.expired(w, wm) {
					live = append(live, w)
				}
			}
			if len(live) == 0 {
				late = append(late, i)
				continue
			}
			if m.rejects(rec.value) {
				rejected = append(rejected, i)
				continue
			}
			for _, w := range live {
				mw := m.win(key, w)
				mw.recs = append(mw.recs, rec)
				mw.dirty = true
				mw.count++
				n := uint64(m.spec.Count)
				firing := OnTimeFiring
				if m.spec.EarlyCount > 0 {
					n, firing = uint64(m.spec.EarlyCount), EarlyFiring
				}
				if (m.spec.Trigger == Count || m.spec.EarlyCount > 0) && mw.count%n == 0 {
					m.pending = append(m.pending, mpending{key, w, firing, slices.Clone(mw.recs)})
					if m.spec.Assigner == Global && m.spec.Trigger == Count {
						mw.recs = nil
					}
				}
			}
		}
		m.setEarly(key, now)
	}
	return late, rejected
}

func (m *model) setEarly(key string, now int64) {
	if iv := int64(m.spec.EarlyInterval); iv > 0 {
		if m.early[key] == nil {
			m.early[key] = map[int64]bool{}
		}
		m.early[key][now-floorMod(now, iv)+iv] = true
	}
}

// addSession adds a record to the sessions of key, merging them; it
// reports whether the record is late.
func (m *model) addSession(key string, t int64, rec mrec, wm int64) bool {
	nw := Window{t, t + int64(m.spec.Gap)}
	var touched []Window
	for w := range m.wins[key] {
		if w.Start <= nw.End && w.End >= nw.Start {
			touched = append(touched, w)
			nw = Window{min(nw.Start, w.Start), max(nw.End, w.End)}
		}
	}
	if m.expired(nw, wm) {
		return true
	}
	slices.SortFunc(touched, cmpWindow)
	merged := &mwin{}
	for _, w := range touched {
		old := m.wins[key][w]
		merged.recs = append(merged.recs, old.recs...)
		if w == nw {
			merged.fired, merged.seq = old.fired, old.seq
		}
		delete(m.wins[key], w)
	}
	merged.recs = append(merged.recs, rec)
	merged.dirty = true
	m.win(key, nw)
	m.wins[key][nw] = merged
	return false
}

func sortedRecs(recs []mrec) []mrec {
	out := slices.Clone(recs)
	slices.SortStableFunc(out, func(a, b mrec) int { return cmp.Compare(a.t, b.t) })
	return out
}

// advance fires what is due at wm and now and returns the results.
func (m *model) advance(wm, now int64) []mresult {
	var out []mresult
	emit := func(key string, w Window, mw *mwin, firing Firing, recs []mrec) {
		out = append(out, mresult{key, w, firing, mw.seq, m.value(key, w, sortedRecs(recs))})
		mw.seq++
	}
	for _, p := range m.pending {
		emit(p.key, p.w, m.win(p.key, p.w), p.firing, p.recs)
	}
	m.pending = nil
	fireNow := m.fireNow(wm, now)
	open := func(w Window, mw *mwin) bool {
		return len(mw.recs) > 0 && !mw.fired && (m.spec.Assigner == Global || (w.End-1 > fireNow && !m.expired(w, wm)))
	}
	for key, times := range m.early {
		for _, p := range slices.Sorted(mapKeys(times)) {
			if p > now {
				continue
			}
			delete(times, p)
			firedAny := false
			for w, mw := range m.wins[key] {
				if open(w, mw) {
					firedAny = true
					emit(key, w, mw, EarlyFiring, mw.recs)
				}
			}
			if firedAny {
				m.setEarly(key, now)
			}
		}
	}
	for key, wins := range m.wins {
		for w, mw := range wins {
			if m.spec.Assigner != Global && m.spec.Trigger != Count && len(mw.recs) > 0 && w.End-1 <= fireNow {
				switch {
				case !mw.fired:
					emit(key, w, mw, OnTimeFiring, mw.recs)
					mw.fired, mw.dirty = true, false
				case mw.dirty:
					emit(key, w, mw, LateFiring, mw.recs)
					mw.dirty = false
				}
			}
			switch {
			case m.spec.Assigner == Global:
			case m.spec.Domain == ProcessingTime:
				if mw.fired || (m.spec.Trigger == Count && w.End-1 <= now) {
					delete(wins, w)
				}
			case w.End-1+int64(m.spec.Lateness) <= wm && (mw.fired || m.spec.Trigger == Count):
				delete(wins, w)
			}
		}
	}
	return out
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The functions the property test runs, with their reference values.

func sumValue(key string, w Window, recs []mrec) string {
	sum := 0.0
	for _, r := range recs {
		x, _ := strconv.ParseFloat(r.value, 64)
		sum += x
	}
	return fmt.Sprintf(`{"key":%q,"start":%d,"end":%d,"sum":%s}`, key, w.Start, w.End, strconv.FormatFloat(sum, 'g', -1, 64))
}

func countValue(key string, w Window, recs []mrec) string {
	return fmt.Sprintf(`{"key":%q,"start":%d,"end":%d,"count":%d}`, key, w.Start, w.End, len(recs))
}

func listValue(key string, w Window, recs []mrec) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "%d:%s ", r.t, r.value)
	}
	return b.String()
}

// lister is a collecting function: it lists a window's records.
type lister struct{}

func (lister) Fire(_ context.Context, fires []Fire, emit func(int, abi.Record)) error {
	for i, f := range fires {
		var recs []mrec
		for _, r := range f.Recs {
			recs = append(recs, mrec{r.Time, string(r.Value)})
		}
		emit(i, abi.Record{Value: []byte(listValue(string(f.Key), f.Window, recs))})
	}
	return nil
}
