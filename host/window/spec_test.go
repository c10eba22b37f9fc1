package window

import (
	"errors"
	"testing"
	"time"
)

func TestSpecValidate(t *testing.T) {
	s := time.Second
	cases := []struct {
		name string
		spec Spec
		key  string // "" when valid
	}{
		{"tumbling", Spec{Assigner: Tumbling, Size: s}, ""},
		{"tumbling offset", Spec{Assigner: Tumbling, Size: s, Offset: s / 2}, ""},
		{"sliding", Spec{Assigner: Sliding, Size: 60 * s, Slide: s}, ""},
		{"session", Spec{Assigner: Session, Gap: s, Lateness: s}, ""},
		{"global count", Spec{Assigner: Global, Trigger: Count, Count: 10}, ""},
		{"early", Spec{Assigner: Tumbling, Size: s, EarlyCount: 5, EarlyInterval: s}, ""},
		{"processing", Spec{Assigner: Sliding, Size: 2 * s, Slide: s, Domain: ProcessingTime}, ""},
		{"zero size", Spec{Assigner: Tumbling}, "window.size"},
		{"negative size", Spec{Assigner: Sliding, Size: -s, Slide: s}, "window.size"},
		{"tumbling slide", Spec{Assigner: Tumbling, Size: s, Slide: s}, "window.slide"},
		{"zero slide", Spec{Assigner: Sliding, Size: s}, "window.slide"},
		{"slide over size", Spec{Assigner: Sliding, Size: s, Slide: 2 * s}, "window.slide"},
		{"offset out of size", Spec{Assigner: Tumbling, Size: s, Offset: s}, "window.offset"},
		{"negative offset", Spec{Assigner: Tumbling, Size: s, Offset: -1}, "window.offset"},
		{"offset out of slide", Spec{Assigner: Sliding, Size: 4 * s, Slide: s, Offset: 2 * s}, "window.offset"},
		{"zero gap", Spec{Assigner: Session}, "window.gap"},
		{"gap on tumbling", Spec{Assigner: Tumbling, Size: s, Gap: s}, "window.gap"},
		{"size on session", Spec{Assigner: Session, Gap: s, Size: s}, "window.size"},
		{"global without count", Spec{Assigner: Global}, "window.trigger"},
		{"zero count", Spec{Assigner: Global, Trigger: Count}, "window.count"},
		{"count on sliding", Spec{Assigner: Sliding, Size: 2 * s, Slide: s, Trigger: Count, Count: 3}, "window.trigger"},
		{"count without count trigger", Spec{Assigner: Tumbling, Size: s, Count: 3}, "window.count"},
		{"processing trigger on sliding", Spec{Assigner: Sliding, Size: 2 * s, Slide: s, Trigger: ProcessingTimeTrigger}, "window.trigger"},
		{"processing trigger twice", Spec{Assigner: Tumbling, Size: s, Domain: ProcessingTime, Trigger: ProcessingTimeTrigger}, "window.trigger"},
		{"negative lateness", Spec{Assigner: Tumbling, Size: s, Lateness: -s}, "window.lateness"},
		{"processing lateness", Spec{Assigner: Tumbling, Size: s, Domain: ProcessingTime, Lateness: s}, "window.lateness"},
		{"early count on session", Spec{Assigner: Session, Gap: s, EarlyCount: 2}, "window.early.count"},
		{"negative early interval", Spec{Assigner: Tumbling, Size: s, EarlyInterval: -s}, "window.early.interval"},
		{"unknown assigner", Spec{Assigner: 9}, "window.type"},
		{"unknown domain", Spec{Assigner: Tumbling, Size: s, Domain: 7}, "window.time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.spec.Validate()
			if c.key == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Validate = %v, want a *SpecError for %s", err, c.key)
			}
			if se.Key != c.key || se.Reason == "" {
				t.Fatalf("Validate = %v, want key %s with a reason", err, c.key)
			}
		})
	}
}

func TestSlicesOfSliding(t *testing.T) {
	// size 10, slide 4: windows start at 0, 4, 8, ... and end at 10, 14,
	// 18, ...; slices are cut at both.
	sl := newSlicer(&Spec{Assigner: Sliding, Size: 10, Slide: 4})
	for _, c := range []struct {
		t    int64
		want Window
	}{{0, Window{0, 2}}, {1, Window{0, 2}}, {2, Window{2, 4}}, {3, Window{2, 4}}, {10, Window{10, 12}}, {-1, Window{-2, 0}}, {-3, Window{-4, -2}}} {
		if got := sl.sliceOf(c.t); got != c.want {
			t.Errorf("sliceOf(%d) = %v, want %v", c.t, got, c.want)
		}
	}
	var ws []Window
	sl.windowsOf(Window{8, 10}, func(w Window) { ws = append(ws, w) })
	if want := []Window{{0, 10}, {4, 14}, {8, 18}}; len(ws) != 3 || ws[0] != want[0] || ws[1] != want[1] || ws[2] != want[2] {
		t.Errorf("windowsOf([8,10)) = %v, want %v", ws, want)
	}
}
