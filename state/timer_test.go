package state

import (
	"cmp"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// timerID is a timer of the model, comparable.
type timerID struct {
	domain          TimeDomain
	time            int64
	route, ns, name string
}

func (a timerID) compare(b timerID) int {
	return cmp.Or(cmp.Compare(a.domain, b.domain), cmp.Compare(a.time, b.time), cmp.Compare(a.route, b.route),
		cmp.Compare(a.ns, b.ns), cmp.Compare(a.name, b.name))
}

func (a timerID) timer() Timer {
	return Timer{a.domain, a.time, []byte(a.route), []byte(a.ns), []byte(a.name)}
}

func idOf(tm Timer) timerID {
	return timerID{tm.Domain, tm.Time, string(tm.Route), string(tm.Namespace), string(tm.Name)}
}

// TestTimersMatchModel runs random timer registrations, deletions, pops,
// savepoints, rollbacks, commits and reopens against a set of timers.
func TestTimersMatchModel(t *testing.T) {
	const groups = 4
	routes := []string{"r1", "r2", "r3", "\x00", ""}
	names := []string{"", "fire", "close\x00"}
	template := filepath.Join(t.TempDir(), "template")
	ts, err := Open(template, quietOptions(groups))
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		base, err := os.MkdirTemp("", "sluice-state-timers-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(base)
		dir := filepath.Join(base, "0")
		if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
			rt.Fatal(err)
		}
		s, err := Open(dir, quietOptions(groups))
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		se := s.NewSession()
		cur := map[timerID]bool{}
		committed := map[timerID]bool{}
		type savepoint struct {
			sp  int
			cur map[timerID]bool
		}
		var sps []savepoint
		drawTime := rapid.SampledFrom([]int64{-1 << 63, -5, 0, 1, 2, 3, 10, 1<<63 - 1})
		draw := func(rt *rapid.T) timerID {
			return timerID{TimeDomain(rapid.IntRange(0, 1).Draw(rt, "domain")), drawTime.Draw(rt, "time"),
				rapid.SampledFrom(routes).Draw(rt, "route"), rapid.SampledFrom([]string{"", "w"}).Draw(rt, "ns"),
				rapid.SampledFrom(names).Draw(rt, "name")}
		}
		due := func(kg int, d TimeDomain, upTo int64) []timerID {
			var out []timerID
			for _, id := range slices.SortedFunc(maps.Keys(cur), timerID.compare) {
				if id.domain == d && id.time <= upTo && KeyGroup([]byte(id.route), groups) == kg {
					out = append(out, id)
				}
			}
			return out
		}
		rt.Repeat(map[string]func(*rapid.T){
			"set": func(rt *rapid.T) {
				id := draw(rt)
				if err := se.SetTimer(id.timer()); err != nil {
					rt.Fatal(err)
				}
				cur[id] = true
			},
			"delete": func(rt *rapid.T) {
				id := draw(rt)
				if err := se.DeleteTimer(id.timer()); err != nil {
					rt.Fatal(err)
				}
				delete(cur, id)
			},
			"remove": func(rt *rapid.T) {
				id := draw(rt)
				was, err := se.RemoveTimer(id.timer())
				if err != nil {
					rt.Fatal(err)
				}
				if was != cur[id] {
					rt.Fatalf("RemoveTimer(%v) = %v, model has it: %v", id, was, cur[id])
				}
				delete(cur, id)
			},
			"visit": func(rt *rapid.T) {
				kg := rapid.IntRange(0, groups-1).Draw(rt, "kg")
				d := TimeDomain(rapid.IntRange(0, 1).Draw(rt, "domain"))
				upTo := drawTime.Draw(rt, "upTo")
				var got []timerID
				if err := se.Timers(kg, d, upTo, func(tm Timer) bool { got = append(got, idOf(tm)); return true }); err != nil {
					rt.Fatal(err)
				}
				if want := due(kg, d, upTo); !slices.Equal(got, want) {
					rt.Fatalf("Timers(%d, %v, %d) = %v, want %v", kg, d, upTo, got, want)
				}
			},
			"pop": func(rt *rapid.T) {
				kg := rapid.IntRange(0, groups-1).Draw(rt, "kg")
				d := TimeDomain(rapid.IntRange(0, 1).Draw(rt, "domain"))
				upTo := drawTime.Draw(rt, "upTo")
				limit := rapid.IntRange(1, 4).Draw(rt, "limit")
				want := due(kg, d, upTo)
				want = want[:min(limit, len(want))]
				var got []timerID
				err := se.PopTimers(kg, d, upTo, func(tm Timer) bool {
					got = append(got, idOf(tm))
					return len(got) < limit
				})
				if err != nil {
					rt.Fatal(err)
				}
				if !slices.Equal(got, want) {
					rt.Fatalf("PopTimers(%d, %v, %d) = %v, want %v", kg, d, upTo, got, want)
				}
				for _, id := range got {
					delete(cur, id)
				}
			},
			"savepoint": func(rt *rapid.T) {
				sps = append(sps, savepoint{se.Savepoint(), maps.Clone(cur)})
			},
			"rollback": func(rt *rapid.T) {
				if len(sps) == 0 {
					rt.Skip("no savepoint")
				}
				i := rapid.IntRange(0, len(sps)-1).Draw(rt, "savepoint")
				se.RollbackTo(sps[i].sp)
				cur = maps.Clone(sps[i].cur)
				sps = sps[:i+1]
			},
			"commit": func(rt *rapid.T) {
				if err := s.Commit(nil); err != nil {
					rt.Fatal(err)
				}
				se.Reset()
				sps = nil
				committed = maps.Clone(cur)
			},
			"reopen": func(rt *rapid.T) {
				if rapid.IntRange(0, 4).Draw(rt, "rare") != 0 {
					rt.Skip("reopens are rare: each costs tens of milliseconds")
				}
				if err := s.Close(); err != nil {
					rt.Fatal(err)
				}
				if s, err = Open(dir, quietOptions(0)); err != nil {
					rt.Fatal(err)
				}
				se = s.NewSession()
				sps = nil
				cur = maps.Clone(committed)
			},
		})
		// Everything the model holds, by group.
		got := map[timerID]bool{}
		for kg := range groups {
			for _, d := range []TimeDomain{EventTime, ProcessingTime} {
				_ = se.Timers(kg, d, 1<<63-1, func(tm Timer) bool { got[idOf(tm)] = true; return true })
			}
		}
		if !maps.Equal(got, cur) {
			rt.Fatalf("timers %v, want %v", got, cur)
		}
	})
}

// TestTimerOwnership: timers are owned with their routing key's group.
func TestTimerOwnership(t *testing.T) {
	s := openTest(t, t.TempDir(), 8)
	route := []byte("k")
	kg := KeyGroup(route, 8)
	se := s.NewSession()
	se.SetOwned(func(g int) bool { return g != kg })
	tm := Timer{Domain: EventTime, Time: 5, Route: route, Name: []byte("t")}
	for name, err := range map[string]error{
		"SetTimer":    se.SetTimer(tm),
		"DeleteTimer": se.DeleteTimer(tm),
		"Timers":      se.Timers(kg, EventTime, 10, func(Timer) bool { return true }),
		"PopTimers":   se.PopTimers(kg, EventTime, 10, func(Timer) bool { return true }),
	} {
		var nerr *NotOwnedError
		if !errors.As(err, &nerr) || nerr.KeyGroup != kg {
			t.Errorf("%s by a non-owner: %v", name, err)
		}
	}
	if err := se.Timers(8, EventTime, 0, nil); err == nil {
		t.Error("Timers of key group 8 of 8: no error")
	}
	if err := se.SetTimer(Timer{Domain: 7, Route: route}); err == nil {
		t.Error("SetTimer of domain 7: no error")
	}
}
