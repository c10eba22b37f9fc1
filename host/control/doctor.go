package control

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// ErrDoctorConfig is wrapped by NewDoctor's error for a setting out of
// range.
var ErrDoctorConfig = errors.New("bad doctor setting")

// DoctorConfig configures a Doctor; zero fields take their defaults.
type DoctorConfig struct {
	// SlowCommit: a mean commit time over it is slow (default 100ms; the
	// pipeline file's doctor.commit_seconds).
	SlowCommit time.Duration
	// SlowVersionRatio: a plugin version whose cost per record is more
	// than this many times the previous version's is slow (default 1.3;
	// must be over 1).
	SlowVersionRatio float64
	// HeapRatio: a live heap over this fraction of the memory limit is
	// memory pressure (default 0.9; at most 1).
	HeapRatio float64
	// Window is the span over which rates are taken (default 2s).
	Window time.Duration
}

// The job doctor's defaults and fixed thresholds.
const (
	defaultDoctorCommit      = 100 * time.Millisecond
	defaultDoctorSlowVersion = 1.3
	defaultDoctorHeapRatio   = 0.9
	// doctorRising is how many steps in a row a source's backlog must
	// rise to be growing.
	doctorRising = 3
	// doctorIdle: operators whose slowest workers are busy less than
	// this fraction of the time, summed over the operators, are idle.
	doctorIdle = 0.5
	// doctorHotShare: a key group whose arrival rate reaches this
	// fraction of the fastest worker's service rate is hot.
	doctorHotShare = 0.9
	// doctorHotStandout: a key group is hot only when its arrival rate
	// is at least this many times the median of its operator's groups'
	// rates. A job overloaded as a whole (a slow plugin, too few
	// workers) brings every group near a worker's rate, and no key of
	// any group is to blame.
	doctorHotStandout = 4.0
	// doctorHotRecords is how many records a worker must have run in
	// the window for its service rate to count as a worker's.
	doctorHotRecords = 100
	// doctorMinRecords is how many records a plugin version must have
	// run before its cost per record is compared.
	doctorMinRecords = 1000
	// doctorGCShare: garbage collection pauses over this fraction of
	// the wall time are memory pressure.
	doctorGCShare = 0.1
	// doctorVersions is how many versions' costs are kept per operator.
	doctorVersions = 8
)

// Doctor is the job doctor (StreamOps): it diagnoses what no automatic
// action fixes and recommends a fix. It proposes no action: Propose
// returns only findings, found again at each round while the cause
// lasts. Rates are taken over the window. The causes:
//
//   - "backlog" (subject: the source): the source's backlog rose at each
//     of the last 3 samples and over the window by more than 5% of the
//     rate the source is read at, so records arrive faster than the
//     pipeline reads them, and the operators are busy (else
//     idle-with-lag). The summary names the busiest operator.
//   - "idle-with-lag" (subject: the source): the backlog grows as for
//     "backlog", but the operators are mostly idle: the busy fractions
//     of each operator's busiest worker (the operators of a batch run one
//     after the other), summed, are under 50%. The bottleneck is reading
//     the source (the NATS server, the network), the sinks or the
//     commits, not the operators: more workers will not help.
//   - "hot-key" (subject: "operator key group N"): a key group of a
//     keyed operator whose arrival rate alone reaches 90% of the service
//     rate μ of the operator's fastest worker (of those that ran at least
//     100 records in the window), so no placement of the groups serves
//     it (the executor holds back the input a worker cannot take, so an
//     overloaded group's arrival rate settles just under its worker's
//     μ), and at least 4 times the median of the operator's groups'
//     rates: the group stands out from the others (a job overloaded as a
//     whole brings every group near μ, and has no hot key). It names the
//     most frequent sampled key of the group.
//   - "slow-version" (subject: the operator): the operator's plugin
//     version changed, and its cost per record (busy seconds per
//     record, over all its workers) since the change is more than
//     SlowVersionRatio times the previous version's. The doctor
//     remembers the cost of each version it saw run (at least 1000
//     records of each are needed).
//   - "slow-commits" (subject: "store"): the mean commit time over the
//     window is over SlowCommit.
//   - "memory-pressure" (subject: "heap"): a memory limit is set and the
//     live heap is over HeapRatio of it, or the garbage collector's
//     pauses took over 10% of the window.
//   - "slow-consumer" (subject: "nats"): the NATS client reported slow
//     consumers in the window: it dropped messages a core NATS source did
//     not take in time.
type Doctor struct {
	cfg DoctorConfig
	// versions holds each operator's plugin versions' costs; seen is the
	// time of the newest sample counted in them.
	versions map[string]*doctorOperator
	seen     time.Time
}

// doctorOperator is what the doctor remembers of an operator's plugin
// versions.
type doctorOperator struct {
	current, previous string
	costs             []doctorCost // the last used last
}

// doctorCost is what one plugin version ran: records and busy seconds.
type doctorCost struct {
	version string
	records uint64
	busy    float64
}

// NewDoctor returns a job doctor; it refuses a negative SlowCommit or
// Window, a SlowVersionRatio of 1 or less, or a HeapRatio over 1 or
// negative, with an error wrapping ErrDoctorConfig.
func NewDoctor(cfg DoctorConfig) (*Doctor, error) {
	if cfg.SlowCommit < 0 {
		return nil, fmt.Errorf("control: doctor: commit_seconds %v: %w (it must be positive)", cfg.SlowCommit, ErrDoctorConfig)
	}
	if cfg.SlowCommit == 0 {
		cfg.SlowCommit = defaultDoctorCommit
	}
	if cfg.SlowVersionRatio == 0 {
		cfg.SlowVersionRatio = defaultDoctorSlowVersion
	}
	if !(cfg.SlowVersionRatio > 1) || math.IsInf(cfg.SlowVersionRatio, 0) {
		return nil, fmt.Errorf("control: doctor: slow_version_ratio %v: %w (it must be a number over 1)", cfg.SlowVersionRatio, ErrDoctorConfig)
	}
	if cfg.HeapRatio == 0 {
		cfg.HeapRatio = defaultDoctorHeapRatio
	}
	if !(cfg.HeapRatio > 0 && cfg.HeapRatio <= 1) {
		return nil, fmt.Errorf("control: doctor: heap_ratio %v: %w (it must be over 0 and at most 1)", cfg.HeapRatio, ErrDoctorConfig)
	}
	if cfg.Window < 0 {
		return nil, fmt.Errorf("control: doctor: window %v: %w (it must be positive)", cfg.Window, ErrDoctorConfig)
	}
	if cfg.Window == 0 {
		cfg.Window = defaultStragglerWindow
	}
	return &Doctor{cfg: cfg, versions: make(map[string]*doctorOperator)}, nil
}

// Config returns the doctor's configuration, defaults filled in.
func (d *Doctor) Config() DoctorConfig { return d.cfg }

// Name returns "doctor".
func (d *Doctor) Name() string { return "doctor" }

// Outcome does nothing: the doctor proposes no action.
func (d *Doctor) Outcome(schema.Decision) {}

// Propose returns the doctor's findings; it never proposes an action.
func (d *Doctor) Propose(v *View) (*Proposal, []schema.Finding) {
	d.count(v)
	last := v.Last()
	if last == nil {
		return nil, nil
	}
	var fs []schema.Finding
	fs = append(fs, d.slowVersions(last)...)
	first, _, ok := v.Span(d.cfg.Window)
	if !ok {
		return nil, fs
	}
	secs := last.At.Sub(first.At).Seconds()
	fs = append(fs, d.backlogs(v, first, last, secs)...)
	fs = append(fs, d.hotKeys(first, last)...)
	if f, ok := d.slowCommits(first, last); ok {
		fs = append(fs, f)
	}
	if f, ok := d.memory(first, last, secs); ok {
		fs = append(fs, f)
	}
	if n := last.SlowConsumers - min(first.SlowConsumers, last.SlowConsumers); n > 0 {
		fs = append(fs, schema.Finding{
			Cause:   "slow-consumer",
			Subject: "nats",
			Summary: fmt.Sprintf("The NATS client reported %d slow consumer errors in the last %s: it dropped messages that a core NATS source did not take in time, and those records are lost.", n, doctorSeconds(secs)),
			Evidence: []schema.Evidence{
				{Name: "slow consumer errors in the window", Value: float64(n), Unit: "count"},
			},
			Recommendation: "Make the pipeline keep up (more workers for its busiest operator, larger batches with batch.size), or read the subject through a jetstream source, which keeps the messages until they are acknowledged.",
		})
	}
	for i := range fs {
		fs[i].Since = last.At
	}
	return nil, fs
}

// count adds the steps of v newer than those counted before to the
// costs of the operators' plugin versions. A step over which an
// operator's version changed is counted to neither version.
func (d *Doctor) count(v *View) {
	for i := 1; i < len(v.Samples); i++ {
		a, b := &v.Samples[i-1], &v.Samples[i]
		if !b.At.After(d.seen) || !b.At.After(a.At) {
			continue
		}
		for j := range b.Operators {
			ob := &b.Operators[j]
			oa := findOperator(a, ob.Name)
			if oa == nil || ob.Version == "" {
				continue
			}
			o := d.versions[ob.Name]
			if o == nil {
				o = &doctorOperator{current: oa.Version}
				d.versions[ob.Name] = o
			}
			if oa.Version != ob.Version {
				if ob.Version != o.current {
					o.previous, o.current = o.current, ob.Version
				}
				continue
			}
			if ob.Version != o.current { // a change between two views
				o.previous, o.current = o.current, ob.Version
			}
			r, ok := Rates(a, b, ob.Name)
			if !ok {
				continue
			}
			c := o.cost(ob.Version)
			for _, w := range r.Workers {
				c.records += w.Records
				c.busy += w.Busy * r.Seconds
			}
		}
	}
	if last := v.Last(); last != nil && last.At.After(d.seen) {
		d.seen = last.At
	}
}

// cost returns version's cost, moved to the end of o.costs as the last
// used; the least recently used is dropped past doctorVersions.
func (o *doctorOperator) cost(version string) *doctorCost {
	for i, c := range o.costs {
		if c.version == version {
			o.costs = append(append(o.costs[:i:i], o.costs[i+1:]...), c)
			return &o.costs[len(o.costs)-1]
		}
	}
	if len(o.costs) >= doctorVersions {
		o.costs = o.costs[1:]
	}
	o.costs = append(o.costs, doctorCost{version: version})
	return &o.costs[len(o.costs)-1]
}

// find returns version's cost, nil when it is unknown.
func (o *doctorOperator) find(version string) *doctorCost {
	for i := range o.costs {
		if o.costs[i].version == version {
			return &o.costs[i]
		}
	}
	return nil
}

// slowVersions finds the operators whose current plugin version costs
// more per record than the version before it.
func (d *Doctor) slowVersions(last *Sample) []schema.Finding {
	var fs []schema.Finding
	for _, op := range last.Operators {
		o := d.versions[op.Name]
		if o == nil || o.previous == "" {
			continue
		}
		cur, prev := o.find(o.current), o.find(o.previous)
		if cur == nil || prev == nil || cur.records < doctorMinRecords || prev.records < doctorMinRecords || prev.busy <= 0 {
			continue
		}
		cc, pc := cur.busy/float64(cur.records), prev.busy/float64(prev.records)
		if cc <= d.cfg.SlowVersionRatio*pc {
			continue
		}
		fs = append(fs, schema.Finding{
			Cause:   "slow-version",
			Subject: op.Name,
			Summary: fmt.Sprintf("Operator %s's plugin version %s takes %s of busy time per record, %.1fx the %s of version %s before it.",
				op.Name, o.current, doctorSeconds(cc), cc/pc, doctorSeconds(pc), o.previous),
			Evidence: []schema.Evidence{
				{Name: "busy seconds per record of " + op.Name + " version " + o.current, Value: cc, Unit: "s"},
				{Name: "busy seconds per record of " + op.Name + " version " + o.previous, Value: pc, Unit: "s"},
				{Name: "cost ratio of " + op.Name + " version " + o.current, Value: cc / pc, Unit: "ratio"},
			},
			Recommendation: fmt.Sprintf("Roll back to version %s with `sluice plugin rollback --operator %s`, and profile the new version before swapping it in again.", o.previous, op.Name),
		})
	}
	return fs
}

// backlogs finds the sources whose backlog grows, as a backlog the
// operators cannot keep up with or as one they are idle beside.
func (d *Doctor) backlogs(v *View, first, last *Sample, secs float64) []schema.Finding {
	if len(v.Samples) < doctorRising+1 {
		return nil
	}
	var fs []schema.Finding
	busy, busiest, busiestOp := doctorBusy(first, last)
	for _, src := range last.Sources {
		// A growth under backlogNoise is records waiting for the next
		// batch, not a backlog.
		t, ok := sourceTrend(first, src, secs)
		if !ok || !t.grows() || !d.rising(v, src.Name) {
			continue
		}
		growth, readRate := t.change, t.read
		ev := []schema.Evidence{
			{Name: "backlog of source " + src.Name, Value: float64(src.Backlog), Unit: "count"},
			{Name: "backlog growth of source " + src.Name, Value: growth, Unit: "records/s"},
			{Name: "read rate of source " + src.Name, Value: readRate, Unit: "records/s"},
			{Name: "busy fraction of the operators' busiest workers, summed", Value: busy, Unit: "ratio"},
		}
		if busy < doctorIdle {
			fs = append(fs, schema.Finding{
				Cause:   "idle-with-lag",
				Subject: src.Name,
				Summary: fmt.Sprintf("Source %s's backlog grows by %s (%d records now) while it is read at only %s, yet the operators are mostly idle (their busiest workers busy %.0f%% of the time, summed).",
					src.Name, doctorRecords(growth), src.Backlog, doctorRecords(readRate), 100*busy),
				Evidence:       ev,
				Recommendation: "The operators are not the bottleneck, so more workers will not help: look at reading the source (the NATS server's load, the network to it), at the sinks' writes and at the commit time; larger batches (batch.size) cut the cost per record of all three.",
			})
			continue
		}
		summary := fmt.Sprintf("Source %s's backlog grows by %s (%d records now): records arrive at about %s and are read at %s.",
			src.Name, doctorRecords(growth), src.Backlog, doctorRecords(readRate+growth), doctorRecords(readRate))
		rec := "Add workers to the busiest operator (`sluice workers`, or the ds2 policy of the control: section)"
		if busiestOp != "" {
			summary += fmt.Sprintf(" The busiest operator is %s (a worker busy %.0f%% of the time).", busiestOp, 100*busiest)
			rec = fmt.Sprintf("Add workers to %s (`sluice workers --operator %s N`, or the ds2 policy of the control: section)", busiestOp, busiestOp)
		}
		fs = append(fs, schema.Finding{
			Cause:          "backlog",
			Subject:        src.Name,
			Summary:        summary,
			Evidence:       ev,
			Recommendation: rec + ", or make its plugin cheaper per record; the backlog falls only once the pipeline runs faster than records arrive.",
		})
	}
	return fs
}

// rising reports whether source name's backlog rose at each of the last
// doctorRising steps of v.
func (d *Doctor) rising(v *View, name string) bool {
	n := len(v.Samples)
	prev, ok := doctorBacklog(&v.Samples[n-doctorRising-1], name)
	if !ok {
		return false
	}
	for i := n - doctorRising; i < n; i++ {
		b, ok := doctorBacklog(&v.Samples[i], name)
		if !ok || b <= prev {
			return false
		}
		prev = b
	}
	return true
}

// doctorBacklog returns source name's backlog in s; ok is false when s
// lacks the source or the source cannot tell.
func doctorBacklog(s *Sample, name string) (int64, bool) {
	for _, src := range s.Sources {
		if src.Name == name {
			return src.Backlog, src.Backlog >= 0
		}
	}
	return 0, false
}

// doctorBusy returns, between first and last, the busy fractions of each
// operator's busiest worker summed over the operators, and the busiest
// worker's fraction and its operator ("" when no worker was busy).
func doctorBusy(first, last *Sample) (sum, busiest float64, op string) {
	for _, o := range last.Operators {
		r, ok := Rates(first, last, o.Name)
		if !ok {
			continue
		}
		var m float64
		for _, w := range r.Workers {
			m = max(m, w.Busy)
		}
		sum += m
		if m > busiest {
			busiest, op = m, o.Name
		}
	}
	return sum, busiest, op
}

// hotKeys finds the key groups whose arrival rate alone nearly takes or
// exceeds the fastest worker of their operator.
func (d *Doctor) hotKeys(first, last *Sample) []schema.Finding {
	var fs []schema.Finding
	for _, op := range last.Operators {
		if len(op.Groups) == 0 {
			continue
		}
		r, ok := Rates(first, last, op.Name)
		if !ok {
			continue
		}
		var mu float64
		for _, w := range r.Workers {
			if w.Records >= doctorHotRecords {
				mu = max(mu, w.Service)
			}
		}
		if mu <= 0 {
			continue
		}
		typical := median(r.GroupArrival)
		for kg, a := range r.GroupArrival {
			if a < doctorHotShare*mu || a < doctorHotStandout*typical {
				continue
			}
			subject := fmt.Sprintf("%s key group %d", op.Name, kg)
			ev := []schema.Evidence{
				{Name: fmt.Sprintf("arrival rate of %s", subject), Value: a, Unit: "records/s"},
				{Name: "fastest service rate of a worker of " + op.Name, Value: mu, Unit: "records/s"},
				{Name: "median arrival rate of a key group of " + op.Name, Value: typical, Unit: "records/s"},
			}
			key := "no key of it was sampled"
			for _, k := range op.HotKeys {
				if k.Group == kg {
					key = fmt.Sprintf("its most frequent sampled key is %q", k.Key)
					ev = append(ev, schema.Evidence{Name: fmt.Sprintf("sampled count of key %q of %s", k.Key, subject), Value: float64(k.Count), Unit: "count"})
					break
				}
			}
			fs = append(fs, schema.Finding{
				Cause:   "hot-key",
				Subject: subject,
				Summary: fmt.Sprintf("Key group %d of %s receives %s, %.0f%% of what its operator's fastest worker runs (%s), so no placement of key groups serves it; %s.",
					kg, op.Name, doctorRecords(a), 100*a/mu, doctorRecords(mu), key),
				Evidence:       ev,
				Recommendation: "Spread the hot key: add a salt to it (a suffix, such as a random number in 0..N-1, in the operator before) and combine the N partial results after, or pre-aggregate its records before the keyed operator.",
			})
		}
	}
	return fs
}

// slowCommits reports a mean commit time over the threshold.
func (d *Doctor) slowCommits(first, last *Sample) (schema.Finding, bool) {
	n := last.Commits - min(first.Commits, last.Commits)
	if n == 0 {
		return schema.Finding{}, false
	}
	mean := max(last.CommitSeconds-first.CommitSeconds, 0) / float64(n)
	if mean <= d.cfg.SlowCommit.Seconds() {
		return schema.Finding{}, false
	}
	return schema.Finding{
		Cause:   "slow-commits",
		Subject: "store",
		Summary: fmt.Sprintf("Commits take %s on average (%d in the window), over the %s bound: every batch waits for its commit.",
			doctorSeconds(mean), n, d.cfg.SlowCommit),
		Evidence: []schema.Evidence{
			{Name: "mean commit time", Value: mean, Unit: "s"},
			{Name: "commits in the window", Value: float64(n), Unit: "count"},
		},
		Recommendation: "Put the data directory on a faster disk (with state.sync: true each commit waits for the disk), or commit less often: state.commit_interval lets full batches share one commit, which writes a key they all changed once, and larger batches (batch.size, batch.linger) carry more records per commit.",
	}, true
}

// memory reports a heap near its limit, or garbage collection pauses
// taking a large share of the time.
func (d *Doctor) memory(first, last *Sample, secs float64) (schema.Finding, bool) {
	var (
		why []string
		ev  []schema.Evidence
	)
	if last.HeapLimit > 0 && float64(last.HeapBytes) > d.cfg.HeapRatio*float64(last.HeapLimit) {
		why = append(why, fmt.Sprintf("the live heap is %s, %.0f%% of the %s memory limit (GOMEMLIMIT)",
			doctorBytes(last.HeapBytes), 100*float64(last.HeapBytes)/float64(last.HeapLimit), doctorBytes(last.HeapLimit)))
		ev = append(ev,
			schema.Evidence{Name: "live heap", Value: float64(last.HeapBytes), Unit: "bytes"},
			schema.Evidence{Name: "memory limit", Value: float64(last.HeapLimit), Unit: "bytes"})
	}
	if gc := max(last.GCPauseSeconds-first.GCPauseSeconds, 0) / secs; gc > doctorGCShare {
		why = append(why, fmt.Sprintf("garbage collection paused the host %.0f%% of the last %s", 100*gc, doctorSeconds(secs)))
		ev = append(ev, schema.Evidence{Name: "share of the time in garbage collection pauses", Value: gc, Unit: "ratio"})
	}
	if len(why) == 0 {
		return schema.Finding{}, false
	}
	summary := "The host is short of memory: " + why[0]
	if len(why) > 1 {
		summary += ", and " + why[1]
	}
	return schema.Finding{
		Cause:          "memory-pressure",
		Subject:        "heap",
		Summary:        summary + ".",
		Evidence:       ev,
		Recommendation: "Give the host more memory and raise GOMEMLIMIT with it, or make the pipeline hold less: smaller batches (batch.size), a smaller state.memtable_size, fewer workers (each has its plugin's memory).",
	}, true
}

// doctorRecords formats a rate in records per second.
func doctorRecords(r float64) string { return doctorNumber(r) + " records/s" }

// doctorNumber formats a rate: no decimals from 100 on, one from 10,
// two under.
func doctorNumber(r float64) string {
	switch {
	case math.Abs(r) >= 100:
		return fmt.Sprintf("%.0f", r)
	case math.Abs(r) >= 10:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// doctorSeconds formats seconds as a duration of three significant
// digits.
func doctorSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d <= 0 {
		return "0s"
	}
	unit := time.Duration(math.Pow(10, math.Floor(math.Log10(float64(d)))-2))
	return d.Round(max(unit, 1)).String()
}

// doctorBytes formats a size in MiB or GiB.
func doctorBytes(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}
