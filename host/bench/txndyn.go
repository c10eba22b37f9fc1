package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/adapt"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// The adaptive strategy's targets (issue 4, "Targets").
const (
	// TargetAdaptivePhase is the fraction of the best static strategy's
	// rate the adaptive strategy must reach in every phase.
	TargetAdaptivePhase = 0.9
	// TargetAdaptiveDecide is the largest share of a batch's processing
	// time the adaptive strategy may spend deciding.
	TargetAdaptiveDecide = 0.02
)

// TxnDynamic is what a dynamic workload's run adds to its report.
type TxnDynamic struct {
	// Logic and Workers are those every lane ran with.
	Logic   TxnLogic `json:"logic"`
	Workers int      `json:"workers"`
	// Phases are the phases' figures, in order.
	Phases []TxnPhase `json:"phases"`
	// Decisions are the adaptive strategy's records, one per batch, the
	// untimed first batches included: what the batch measured and the
	// decision taken after it (empty when the adaptive strategy did not
	// run). The run keeps every batch's, whatever the model's history
	// holds.
	Decisions []adapt.Record `json:"decisions,omitempty"`
	// Stats counts what the adaptive strategy did: switches, probes,
	// learned decisions, mispredictions (nil when it did not run).
	Stats *adapt.Stats `json:"adaptive_stats,omitempty"`
	// DecideShareMax is the largest share of one batch's processing time
	// the adaptive strategy spent deciding; DecideShare the share over the
	// whole run.
	DecideShareMax float64 `json:"decide_share_max"`
	DecideShare    float64 `json:"decide_share"`
	// AdaptiveOver compares the adaptive strategy with each static one
	// over the whole run, batch by batch (empty when the adaptive strategy
	// did not run).
	AdaptiveOver []TxnLaneRatio `json:"adaptive_over_static,omitempty"`
}

// TxnLaneRatio is the adaptive strategy's rate over one static strategy's,
// with its interval.
type TxnLaneRatio struct {
	Strategy string `json:"strategy"`
	RateRatio
}

// TxnPhase is one phase of a dynamic run.
type TxnPhase struct {
	Name string `json:"name"`
	// Knobs are the phase's knobs, as text.
	Knobs map[string]string `json:"knobs"`
	// Events and Batches are what was timed of the phase (a batch belongs
	// to the phase of its first event).
	Events  int `json:"events_timed"`
	Batches int `json:"batches_timed"`
	// Rates are each strategy's events per second in the phase.
	Rates []TxnPhaseRate `json:"rates"`
	// BestStatic is the static strategy with the highest rate in the
	// phase (a TPG strategy or a baseline).
	BestStatic     string  `json:"best_static"`
	BestStaticRate float64 `json:"best_static_rate"`
	// Adaptive is the adaptive strategy's rate, AdaptiveOverBest its
	// ratio to BestStatic's, and Choices how many of the phase's batches
	// it ran with each strategy.
	Adaptive         float64        `json:"adaptive_rate,omitempty"`
	AdaptiveOverBest float64        `json:"adaptive_over_best,omitempty"`
	Choices          map[string]int `json:"adaptive_choices,omitempty"`
	// AdaptiveVsBest is AdaptiveOverBest with its interval, from the
	// phase's batches paired across the two lanes. The best static
	// strategy is the fastest of many lanes measured with noise, so it is
	// biased upwards: the interval is the adaptive strategy's against that
	// lane, not against the strategy's true rate.
	AdaptiveVsBest *RateRatio `json:"adaptive_over_best_interval,omitempty"`
}

// TxnPhaseRate is one strategy's rate in a phase.
type TxnPhaseRate struct {
	Strategy string  `json:"strategy"`
	Rate     float64 `json:"events_per_second"`
	// BatchSeconds is each of the phase's timed batches' processing time,
	// in order: the same batches, on the same events, for every strategy.
	BatchSeconds []float64 `json:"batch_seconds"`
}

// phaseTime accumulates a lane's timed batches in one phase.
type phaseTime struct {
	events  int
	seconds float64
	times   []float64 // each batch's seconds, in order
	choices map[string]int
}

// runDynamic runs a dynamic workload: one lane per strategy, every lane
// interleaved batch by batch (in a new random order each batch), each over its own copy
// of the state; then checks every lane against the serial strategy's
// result and reports per phase.
func (e *txnEnv) runDynamic(ctx context.Context) (rep *TxnReport, err error) {
	opts := e.opts
	rep, release, err := e.prepare(ctx)
	if err != nil {
		return nil, err
	}
	defer release(&err)
	logic, workers := opts.Logics[0], opts.Workers[0]

	var ref *txnDigest
	if !slices.Contains(opts.Strategies, "serial") {
		d, err := e.oracle(ctx, e.spaces[0])
		if err != nil {
			return nil, err
		}
		ref = &d
		rep.Oracle = "an untimed native run of the serial strategy"
	} else {
		rep.Oracle = "the serial strategy's lane"
	}

	var lanes []*lane
	defer func() { closeLanes(ctx, lanes, &err) }()
	phases := e.dyn.Phases()
	times := map[*lane][]phaseTime{}
	var adaptive *lane
	for _, name := range opts.Strategies {
		op, err := e.newOperator(ctx, logic, workers)
		if err != nil {
			return nil, err
		}
		l := &lane{space: e.spaces[0], workers: workers, logic: logic, op: op, strategy: name}
		lanes = append(lanes, l)
		st, _ := txn.ParseStrategy(name)
		if st.Kind == txn.Adaptive {
			adaptive = l
		}
		if err := l.op.SetStrategy(st); err != nil {
			return nil, fmt.Errorf("bench: txn: %w", err)
		}
		l.store = cloneStore(e.spaces[0].initial)
		l.digest = txnDigest{outputs: fnvOffset}
		l.run = TxnRun{Strategy: name, Workers: workers, Logic: logic, Keys: e.spaces[0].keys}
		times[l] = make([]phaseTime, len(phases))
	}

	total, batch := opts.Events, opts.Punctuation
	skip := warmup(opts)
	e.step("txn %s: dynamic workload, %d phases, %s events in batches of %s; %d strategies interleaved batch by batch, %s, %s",
		opts.App, len(phases), thousands(float64(total)), thousands(float64(batch)), len(lanes), workersText(workers), logic)
	var decide, decideMax float64
	var decisions []adapt.Record
	order := rand.New(rand.NewPCG(1, 2)) // the same orders in every run
	run := slices.Clone(lanes)
	phase := -1
	for b, first := 0, 0; first < total; b, first = b+1, first+batch {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("bench: txn: %w", err)
		}
		if p := e.dyn.PhaseOf(uint64(first)); p != phase {
			if phase >= 0 {
				e.phaseDone(phase, lanes, times)
			}
			phase = p
			e.step("txn %s: phase %d/%d: %s", opts.App, p+1, len(phases), phases[p].Name)
		}
		e.spaces[0].events(first, min(batch, total-first))
		// A new order of the lanes for every batch: with a fixed order (or
		// a rotation, which keeps the neighbours), a lane would always run
		// right after the same one, and pay, for instance, for the garbage
		// collections that one's allocations start.
		order.Shuffle(len(run), func(i, j int) { run[i], run[j] = run[j], run[i] })
		for _, l := range run {
			if err := e.runBatch(ctx, l, b >= skip); err != nil {
				return nil, fmt.Errorf("bench: txn %s: strategy %s, batch %d (events %d to %d): %w",
					opts.App, l.strategy, b, first, first+len(e.spaces[0].recs)-1, err)
			}
			var rec []adapt.Record // the adaptive batch's record
			if l == adaptive {
				rec = l.op.Model().History(1)
				decisions = append(decisions, rec...)
			}
			if b < skip {
				continue
			}
			pt := &times[l][phase]
			last := l.lat[len(l.lat)-1]
			pt.events += last.n
			pt.seconds += last.d.Seconds()
			pt.times = append(pt.times, last.d.Seconds())
			if len(rec) > 0 {
				if pt.choices == nil {
					pt.choices = map[string]int{}
				}
				pt.choices[rec[0].Strategy]++
				share := float64(rec[0].Decision.DecideNs) / 1e9 / last.d.Seconds()
				decide += float64(rec[0].Decision.DecideNs) / 1e9
				decideMax = max(decideMax, share)
			}
		}
	}
	e.phaseDone(phase, lanes, times)

	dyn := &TxnDynamic{Logic: logic, Workers: workers, DecideShareMax: decideMax}
	for _, l := range lanes {
		l.digest.state = stateHash(l.store)
		l.store = nil
		l.finish()
		if l.strategy == "serial" {
			d := l.digest
			ref = &d
		}
	}
	for _, l := range lanes {
		if err := ref.check(&l.digest); err != nil {
			return nil, fmt.Errorf("bench: txn %s: strategy %s: %w", opts.App, l.strategy, err)
		}
		rep.Runs = append(rep.Runs, l.run)
	}
	if adaptive != nil {
		dyn.Decisions = decisions
		stats := adaptive.op.Model().Stats()
		dyn.Stats = &stats
		if s := adaptive.run.Seconds; s > 0 {
			dyn.DecideShare = decide / s
		}
	}
	for p, ph := range phases {
		tp := TxnPhase{Name: ph.Name, Knobs: knobText(opts.App, &ph.Knobs)}
		var best *lane
		for _, l := range lanes {
			pt := times[l][p]
			rate := 0.0
			if pt.seconds > 0 {
				rate = float64(pt.events) / pt.seconds
			}
			tp.Events = pt.events
			tp.Rates = append(tp.Rates, TxnPhaseRate{Strategy: l.strategy, Rate: rate, BatchSeconds: pt.times})
			if l == adaptive {
				tp.Adaptive, tp.Choices = rate, pt.choices
			} else if rate > tp.BestStaticRate {
				tp.BestStatic, tp.BestStaticRate, best = l.strategy, rate, l
			}
		}
		tp.Batches = (tp.Events + batch - 1) / batch
		if adaptive != nil && tp.BestStaticRate > 0 {
			tp.AdaptiveOverBest = tp.Adaptive / tp.BestStaticRate
			r := pairedRateRatio(times[adaptive][p].times, times[best][p].times)
			tp.AdaptiveVsBest = &r
		}
		dyn.Phases = append(dyn.Phases, tp)
	}
	if adaptive != nil {
		whole := func(l *lane) []float64 {
			var ts []float64
			for _, pt := range times[l] {
				ts = append(ts, pt.times...)
			}
			return ts
		}
		ad := whole(adaptive)
		for _, l := range lanes {
			if l != adaptive {
				dyn.AdaptiveOver = append(dyn.AdaptiveOver, TxnLaneRatio{Strategy: l.strategy, RateRatio: pairedRateRatio(ad, whole(l))})
			}
		}
	}
	rep.Dynamic = dyn
	rep.StateHash, rep.OutputHash = hex64(ref.state), hex64(ref.outputs)
	rep.Committed, rep.Aborted = ref.committed, ref.aborted
	rep.LoadAfter = loadAverage("/proc/loadavg")
	rep.Targets = rep.checkTargets()
	return rep, nil
}

// phaseDone prints a phase's rates so far as a progress line.
func (e *txnEnv) phaseDone(p int, lanes []*lane, times map[*lane][]phaseTime) {
	if e.opts.Progress == nil {
		return
	}
	best, bestRate, ad := "", 0.0, ""
	for _, l := range lanes {
		pt := times[l][p]
		if pt.seconds == 0 {
			continue
		}
		rate := float64(pt.events) / pt.seconds
		if l.op.Model() != nil {
			ad = fmt.Sprintf("; adaptive %s events/s", thousands(rate))
		} else if rate > bestRate {
			best, bestRate = l.strategy, rate
		}
	}
	e.step("txn %s: phase %d done: best static %s %s events/s%s", e.opts.App, p+1, best, thousands(bestRate), ad)
}

// dynamicTargets checks the adaptive strategy's targets on a dynamic run.
func (r *TxnReport) dynamicTargets() []Target {
	d := r.Dynamic
	if d == nil || len(d.Decisions) == 0 {
		return nil
	}
	var ts []Target
	worst := -1
	for i, p := range d.Phases {
		if p.BestStaticRate > 0 && (worst < 0 || p.AdaptiveOverBest < d.Phases[worst].AdaptiveOverBest) {
			worst = i
		}
	}
	if worst >= 0 {
		p := d.Phases[worst]
		ts = append(ts, Target{
			Name: fmt.Sprintf("%s dynamic: adaptive over the best static strategy, every phase (worst of %d)", r.App, len(d.Phases)),
			Want: fmt.Sprintf(">= %.2f", TargetAdaptivePhase),
			Got:  fmt.Sprintf("%.2f (phase %s: %s events/s against %s %s; paired 95%% interval %s)", p.AdaptiveOverBest, p.Name, thousands(p.Adaptive), p.BestStatic, thousands(p.BestStaticRate), intervalText(p.AdaptiveVsBest)),
			Met:  p.AdaptiveOverBest >= TargetAdaptivePhase,
		})
	}
	ad := r.rate(txn.AdaptiveName, d.Workers, d.Logic, r.Runs[0].Keys)
	var best *TxnRun
	for i := range r.Runs {
		x := &r.Runs[i]
		if x.Strategy != txn.AdaptiveName && (best == nil || x.Rate > best.Rate) {
			best = x
		}
	}
	if best != nil {
		interval := "-"
		for _, o := range d.AdaptiveOver {
			if o.Strategy == best.Strategy {
				interval = fmt.Sprintf("%s, %s", o.String(), o.Verdict())
			}
		}
		ts = append(ts, Target{
			Name: fmt.Sprintf("%s dynamic: adaptive over the whole run against every static strategy", r.App),
			Want: "> the best static",
			Got:  fmt.Sprintf("%s events/s against %s %s (%.3fx; paired 95%% interval %s)", thousands(ad), best.Strategy, thousands(best.Rate), ad/best.Rate, interval),
			Met:  ad > best.Rate,
		})
	}
	ts = append(ts, Target{
		Name: fmt.Sprintf("%s dynamic: time deciding, share of a batch's processing time (largest; whole run)", r.App),
		Want: fmt.Sprintf("<= %.0f%%", 100*TargetAdaptiveDecide),
		Got:  fmt.Sprintf("%.4f%%; %.4f%%", 100*d.DecideShareMax, 100*d.DecideShare),
		Met:  d.DecideShareMax <= TargetAdaptiveDecide,
	})
	return ts
}

// phaseKnobs is the text of a phase's knobs that differ from the first
// phase's.
func phaseKnobs(app string, first, p map[string]string) string {
	names, _ := workload.AppKnobs(app)
	var s string
	for _, n := range names {
		if p[n] != first[n] {
			if s != "" {
				s += " "
			}
			s += n + "=" + p[n]
		}
	}
	if s == "" {
		return "-"
	}
	return s
}

// writeDynamic prints a dynamic run's phases: the best static strategy and
// the adaptive strategy's choices and rate in each, then every strategy's
// rate per phase.
func (r *TxnReport) writeDynamic(b *strings.Builder) {
	d := r.Dynamic
	fmt.Fprintf(b, "\nPhases (%s, %s; a batch belongs to the phase of its first event)\n", workersText(d.Workers), d.Logic)
	tw := table(b)
	fmt.Fprintln(tw, "phase\tknobs changed\tbest static\tits events/s\tadaptive ran\tadaptive events/s\tadaptive / best (95% interval)\t")
	var first map[string]string
	for i, p := range d.Phases {
		if i == 0 {
			first = p.Knobs
		}
		ad, ratio := "-", "-"
		if p.Choices != nil {
			ad = fmt.Sprintf("%s\t%s", choiceText(p.Choices), thousands(p.Adaptive))
			ratio = intervalText(p.AdaptiveVsBest)
		} else {
			ad = "-\t-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Name, phaseKnobs(r.App, first, p.Knobs), p.BestStatic, thousands(p.BestStaticRate), ad, ratio)
	}
	tw.Flush()
	if len(d.Decisions) > 0 {
		fmt.Fprintf(b, "deciding: at most %.4f%% of a batch's processing time, %.4f%% over the run\n", 100*d.DecideShareMax, 100*d.DecideShare)
	}
	if s := d.Stats; s != nil {
		fmt.Fprintf(b, "adaptive: %d batches, %d switches, %d probes (%d kept), %d learned decisions, %d mispredictions, %d batches counting cycles\n",
			s.Batches, s.Switches, s.Probes, s.ProbesWon, s.Learned, s.Mispredictions, s.Analysed)
	}
	if len(d.AdaptiveOver) > 0 {
		fmt.Fprintln(b, "\nAdaptive over each static strategy, whole run (batches paired across the lanes; 95% interval)")
		tw = table(b)
		fmt.Fprintln(tw, "strategy\tadaptive / it\tinterval\tadaptive is\t")
		for _, o := range d.AdaptiveOver {
			fmt.Fprintf(tw, "%s\t%s\t%s-%s\t%s\t\n", o.Strategy, fmtRatio(o.Ratio), fmtRatio(o.Low), fmtRatio(o.High), o.Verdict())
		}
		tw.Flush()
	}
	fmt.Fprintln(b, "\nEvents per second by phase")
	tw = table(b)
	fmt.Fprint(tw, "strategy\t")
	for i := range d.Phases {
		fmt.Fprintf(tw, "%d\t", i+1)
	}
	fmt.Fprintln(tw, "whole run\t")
	for i, x := range r.Runs {
		fmt.Fprintf(tw, "%s\t", x.Strategy)
		for _, p := range d.Phases {
			fmt.Fprintf(tw, "%s\t", thousands(p.Rates[i].Rate))
		}
		fmt.Fprintf(tw, "%s\t\n", thousands(x.Rate))
	}
	tw.Flush()
}

// choiceText lists the strategies the adaptive strategy ran in a phase,
// the most used first, with their batch counts.
func choiceText(c map[string]int) string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c[a] != c[b] {
			return c[b] - c[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s x%d", n, c[n])
	}
	return strings.Join(parts, ", ")
}

// intervalText is a ratio with its interval, or "-" without one.
func intervalText(r *RateRatio) string {
	if r == nil {
		return "-"
	}
	return r.String()
}
