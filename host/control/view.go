package control

import (
	"slices"
	"time"
)

// View is what a policy is shown in a round: the recent samples, oldest
// first (the last is the round's), and why the round runs.
type View struct {
	Samples []Sample
	// Trigger is the round's trigger: "period", "request: ..." or
	// "condition: ...".
	Trigger string
	// Window is the span over which rates are taken (the configured
	// window); the samples may reach further back, for the policies that
	// look at a trend. Zero: all the samples.
	Window time.Duration
	// MinWorkers and MaxWorkers bound every operator's worker count: a
	// policy proposes no count outside them.
	MinWorkers, MaxWorkers int
}

// Last returns the round's sample, nil when there is none.
func (v *View) Last() *Sample {
	if len(v.Samples) == 0 {
		return nil
	}
	return &v.Samples[len(v.Samples)-1]
}

// Span returns the oldest sample taken at most d before the last one, and
// the last one: the two ends of the window over which rates are taken.
// ok is false when fewer than two samples fall in it.
func (v *View) Span(d time.Duration) (first, last *Sample, ok bool) {
	n := len(v.Samples)
	if n < 2 {
		return nil, nil, false
	}
	last = &v.Samples[n-1]
	i := n - 2
	for i > 0 && last.At.Sub(v.Samples[i-1].At) <= d {
		i--
	}
	first = &v.Samples[i]
	return first, last, last.At.After(first.At)
}

// Latest returns the view's last two samples: the most recent interval,
// which a rate that has just risen fills alone while a longer span
// straddles the rise; ok is false with fewer than two.
func (v *View) Latest() (first, last *Sample, ok bool) {
	n := len(v.Samples)
	if n < 2 {
		return nil, nil, false
	}
	first, last = &v.Samples[n-2], &v.Samples[n-1]
	return first, last, last.At.After(first.At)
}

// OperatorRates are one operator's rates between two samples.
type OperatorRates struct {
	Name    string
	Seconds float64 // the time between the samples
	// InRate and OutRate are the operator's observed rates (records/s of
	// wall time).
	InRate, OutRate float64
	Workers         []WorkerRates
	// GroupArrival is each key group's arrival rate (records/s), nil for
	// an operator without key groups: its count's rate, scaled up to the
	// operator's share of the demand when the count falls short of it.
	GroupArrival []float64
	// Demand is Demand(a, b): how much faster records arrive at the
	// sources than they are read.
	Demand float64
}

// WorkerRates are one worker's rates between two samples.
type WorkerRates struct {
	ID     int
	Host   string
	Groups []int
	// Arrival is λ: records/s arriving for the worker's key groups (for
	// an operator without key groups, the records it ran per second).
	Arrival float64
	// Service is μ, DS2's true processing rate: records run per second of
	// useful time (0 when the worker ran nothing); OutService is the true
	// output rate, records written per second of useful time.
	Service, OutService float64
	// Busy is the fraction of wall time the worker was useful.
	Busy float64
	// Delay is the mean time from arrival to the end of processing of
	// the records the worker ran (0 when it ran none).
	Delay float64
	// Records is how many records the worker ran.
	Records uint64
}

// Rates returns the rates of operator name between samples a and b (a
// before b); ok is false when either lacks the operator or no time
// passed. Workers present in b only are measured from zero.
func Rates(a, b *Sample, name string) (r OperatorRates, ok bool) {
	oa, ob := findOperator(a, name), findOperator(b, name)
	secs := b.At.Sub(a.At).Seconds()
	if oa == nil || ob == nil || secs <= 0 {
		return OperatorRates{}, false
	}
	r = OperatorRates{Name: name, Seconds: secs, InRate: float64(ob.In-min(oa.In, ob.In)) / secs, OutRate: float64(ob.Out-min(oa.Out, ob.Out)) / secs}
	r.Demand = Demand(a, b)
	// The records that arrive at the operator: what it read, times the
	// demand. Counts that fall short of it (the executor counts a record
	// when the job reads it, and it reads only as fast as it runs) are
	// scaled up to it; counts that already hold it are kept.
	scale := 1.0
	if len(ob.Groups) > 0 {
		r.GroupArrival = make([]float64, len(ob.Groups))
		var counted float64
		for kg, g := range ob.Groups {
			var before uint64
			if kg < len(oa.Groups) {
				before = min(oa.Groups[kg].Arrived, g.Arrived)
			}
			r.GroupArrival[kg] = float64(g.Arrived-before) / secs
			counted += r.GroupArrival[kg]
		}
		if want := r.InRate * r.Demand; counted > 0 && want > counted {
			scale = want / counted
		}
		for kg := range r.GroupArrival {
			r.GroupArrival[kg] *= scale
		}
	} else {
		scale = max(r.Demand, 1)
	}
	for _, wb := range ob.Workers {
		var wa WorkerSample
		for _, w := range oa.Workers {
			if w.ID == wb.ID {
				wa = w
			}
		}
		recs := wb.Records - min(wa.Records, wb.Records)
		out := wb.Out - min(wa.Out, wb.Out)
		busy := max(wb.BusySeconds-wa.BusySeconds, 0)
		wr := WorkerRates{ID: wb.ID, Host: wb.Host, Groups: wb.Groups, Records: recs, Busy: busy / secs}
		if busy > 0 {
			wr.Service = float64(recs) / busy
			wr.OutService = float64(out) / busy
		}
		if n := wb.Delayed - min(wa.Delayed, wb.Delayed); n > 0 {
			wr.Delay = max(wb.DelaySeconds-wa.DelaySeconds, 0) / float64(n)
		}
		if r.GroupArrival != nil {
			for _, kg := range wb.Groups {
				if kg < len(r.GroupArrival) {
					wr.Arrival += r.GroupArrival[kg]
				}
			}
		} else {
			wr.Arrival = scale * float64(recs) / secs
		}
		r.Workers = append(r.Workers, wr)
	}
	return r, true
}

// Demand returns how much faster records arrive at the sources than the
// job reads them, between samples a and b: the records read plus the
// backlogs' growth, over the records read. A job that keeps up reads what
// arrives (1); one that falls behind reads less (over 1), and one that
// works off a backlog reads more (under 1). Records are read only as fast
// as the job runs them, so the counts taken inside the job measure the
// job's pace, not the load: a worker's or a key group's true arrival rate
// is its count's rate times the demand. It is 1 when a source cannot
// tell its backlog, or nothing was read.
func Demand(a, b *Sample) float64 {
	var read, growth float64
	for _, sb := range b.Sources {
		if sb.Backlog < 0 {
			return 1
		}
		for _, sa := range a.Sources {
			if sa.Name != sb.Name {
				continue
			}
			if sa.Backlog < 0 {
				return 1
			}
			read += float64(sb.Read - min(sa.Read, sb.Read))
			growth += float64(sb.Backlog - sa.Backlog)
		}
	}
	if read <= 0 {
		return 1
	}
	return max(read+growth, 0) / read
}

// backlogNoise is the share of a source's read rate by which its backlog
// must change per second to be growing or draining: records read ahead
// wait in the job's queue for the next batch and count in the backlog,
// more of them as the rate rises, and their number moves by about that
// much from one sample to the next.
const backlogNoise = 0.05

// backlogTrend is how a source's backlog changed over a span: the change
// per second (negative when it shrank) and the rate read from the source.
type backlogTrend struct {
	change, read float64 // records/s
}

// grows reports whether the backlog grew by more than backlogNoise of
// the read rate: records arrive faster than the job reads them.
func (t backlogTrend) grows() bool { return t.change > backlogNoise*t.read }

// drains reports whether the backlog shrank by more than backlogNoise of
// the read rate: the job works off records that waited.
func (t backlogTrend) drains() bool { return t.change < -backlogNoise*t.read }

// sourceTrend returns source s's backlog trend over the secs seconds
// since first; ok is false when first lacks the source, secs is not
// positive, or either sample cannot tell the backlog.
func sourceTrend(first *Sample, s SourceSample, secs float64) (backlogTrend, bool) {
	if secs <= 0 || s.Backlog < 0 {
		return backlogTrend{}, false
	}
	for _, b := range first.Sources {
		if b.Name != s.Name || b.Backlog < 0 {
			continue
		}
		return backlogTrend{
			change: float64(s.Backlog-b.Backlog) / secs,
			read:   float64(s.Read-min(b.Read, s.Read)) / secs,
		}, true
	}
	return backlogTrend{}, false
}

// backlogGrows reports whether a source's backlog grows between first
// and last (see backlogTrend.grows).
func backlogGrows(first, last *Sample) bool {
	secs := last.At.Sub(first.At).Seconds()
	for _, s := range last.Sources {
		if t, ok := sourceTrend(first, s, secs); ok && t.grows() {
			return true
		}
	}
	return false
}

// findOperator returns s's operator named name, or nil.
func findOperator(s *Sample, name string) *OperatorSample {
	for i := range s.Operators {
		if s.Operators[i].Name == name {
			return &s.Operators[i]
		}
	}
	return nil
}

// median returns the median of xs (the mean of the middle two when their
// number is even), 0 when there are none, leaving xs as it was.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
