package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/control"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/state"
)

// The control plane's configurations the bench compares.
const (
	ControlOff     = "off"     // no control plane: the starting workers throughout
	ControlDS2     = "ds2"     // DS2 alone
	ControlLatency = "latency" // the latency guarantor (StreamSwitch) alone
	ControlAll     = "all"     // every policy, and the doctor's fault phases
	// ControlSoak is every policy under a rate that varies for
	// ControlOptions.Soak, counting decisions undone within a minute.
	ControlSoak = "soak"
)

// ControlModes returns the configurations in the order the bench runs them.
func ControlModes() []string { return []string{ControlOff, ControlDS2, ControlLatency, ControlAll} }

// ControlOptions configure RunControl.
type ControlOptions struct {
	// Modes are the configurations to run (ControlModes by default).
	Modes []string
	// Rate is the base rate in records/s; the phases run at multiples
	// of it.
	Rate float64
	// Cap is each worker's capacity in records/s (exec.Job.SetWorkerCap):
	// a bench-only setting that makes capacity small and known on a
	// machine with few cores, so the control plane's decisions show. 0
	// runs uncapped.
	Cap float64
	// Phase is each phase's length.
	Phase time.Duration
	// MaxWorkers bounds the operator's workers; the run starts with one.
	MaxWorkers int
	// Keys is the number of distinct keys.
	Keys int
	// Soak, when set, adds a run of every policy under a rate that
	// varies between half and one and a half times Rate (a sine of two
	// minutes' period) for that long.
	Soak time.Duration
	// WordCount is the keyed plugin (plugins/wordcount compiled).
	WordCount []byte
	// SlowCount is a slower version of it (plugins/internal/slowcount
	// compiled: the same counts after about 1 ms of busy work a record),
	// which every policy's run swaps in for its slow-version phase; nil
	// leaves that phase out.
	SlowCount []byte
	// Quick marks a short run in the report.
	Quick bool

	BatchSize int
	Linger    time.Duration
	Dir       string
	Logger    *slog.Logger
	Progress  io.Writer
}

// DefaultControlOptions returns the full run's options.
func DefaultControlOptions() ControlOptions {
	return ControlOptions{Rate: 8000, Cap: 5000, Phase: 25 * time.Second, MaxWorkers: 4, Keys: 1000}
}

// QuickControlOptions returns a short run's options, for a first look and
// for tests.
func QuickControlOptions() ControlOptions {
	o := DefaultControlOptions()
	o.Phase, o.Quick = 8*time.Second, true
	return o
}

// ControlReport is the result of RunControl.
type ControlReport struct {
	Machine Machine         `json:"machine"`
	Date    time.Time       `json:"date"`
	Quick   bool            `json:"quick"`
	Rate    float64         `json:"rate"`
	Cap     float64         `json:"cap"`
	Phase   float64         `json:"phase_seconds"`
	Runs    []ControlRun    `json:"runs"`
	Targets []Target        `json:"targets"`
	Lreq    float64         `json:"lreq_seconds"`
	Load    string          `json:"load_after,omitempty"`
	Options controlSettings `json:"settings"`
}

// controlSettings records the control plane's settings of the runs.
type controlSettings struct {
	Period, Lock, Settle, Window float64
	MaxWorkers                   int
	DS2Interval                  float64
	DS2Activation                int
}

// ControlRun is one configuration's run.
type ControlRun struct {
	Mode   string         `json:"mode"`
	Phases []ControlPhase `json:"phases"`
	// Decisions are every decision the control plane made, in order.
	Decisions []schema.Decision `json:"decisions"`
	// Undone counts decisions undone within a minute under the same
	// rate: rolled back, or a worker count changed back within 60 s, in
	// the same phase, while the arrival rate at the sources measured at
	// the two decisions had not moved the reversal's way by more than
	// sameRate (see undone).
	Undone int `json:"undone"`
	// UndoneAll counts every decision undone within a minute: rolled
	// back, or a worker count changed back within 60 s, whatever the
	// rate and the phase.
	UndoneAll int `json:"undone_all"`
	// Records is how many records the source made; every one was counted
	// exactly once (checked).
	Records uint64 `json:"records"`
}

// ControlPhase is one phase of a run.
type ControlPhase struct {
	Name string  `json:"name"`
	Rate float64 `json:"rate"`
	// Workers is the operator's worker count at the phase's end.
	Workers int `json:"workers"`
	// P99Ms is the p99 latency of the records output in the phase's last
	// third; MaxP99Ms the worst one-second p99 in the phase.
	P99Ms    float64 `json:"p99_ms"`
	MaxP99Ms float64 `json:"max_p99_ms"`
	// RecoverySeconds is how long after the phase began every following
	// second's p99 stayed under Lreq; -1 when it never did.
	RecoverySeconds float64 `json:"recovery_seconds"`
	// Moves and Scales count the decisions of the phase that moved key
	// groups and that changed the worker count.
	Moves  int `json:"moves"`
	Scales int `json:"scales"`
	// Expect names the doctor's cause the phase injects, or the
	// straggler; DetectedSeconds is how long after the phase began it
	// was found (-1: never).
	Expect          string  `json:"expect,omitempty"`
	DetectedSeconds float64 `json:"detected_seconds,omitempty"`
	// Findings are the doctor's findings seen during the phase, as
	// "cause subject".
	Findings []string `json:"findings,omitempty"`
}

// controlPhase is a phase to run.
type controlPhase struct {
	name   string
	rate   float64
	expect string // a cause the doctor (or the straggler detector) must name
	// keys picks the key of each record; nil: uniform.
	hot func(job *exec.Job) func(r *rand.Rand) int
	// vary, when set, gives the rate at each moment of the phase.
	vary func(since time.Duration) float64
	// setup injects the phase's fault and returns its undoing.
	setup func(ctx context.Context, job *exec.Job, kit *controlKit) (func(), error)
}

// controlKit is what a phase's setup may use besides the job: the engine,
// the operator's module and the slower version of it.
type controlKit struct {
	eng  wasm.Engine
	wc   *plugin.Plugin
	slow []byte
	log  *slog.Logger
}

// RunControl runs the keyed pipeline through rate steps, a hot-key shift
// and a straggler under each configuration, and, with every policy, the
// doctor's faults; it checks that every record was counted once.
func RunControl(ctx context.Context, opts ControlOptions) (rep *ControlReport, err error) {
	def := DefaultControlOptions()
	if opts.Rate <= 0 {
		opts.Rate = def.Rate
	}
	if opts.Cap < 0 {
		return nil, fmt.Errorf("bench: control: negative cap %v", opts.Cap)
	}
	if opts.Phase <= 0 {
		opts.Phase = def.Phase
	}
	if opts.MaxWorkers < 1 {
		opts.MaxWorkers = def.MaxWorkers
	}
	if opts.Keys < 1 {
		opts.Keys = def.Keys
	}
	if len(opts.WordCount) == 0 {
		return nil, errors.New("bench: control: the wordcount plugin (plugins/wordcount compiled to WebAssembly) was not given")
	}
	modes := opts.Modes
	if len(modes) == 0 {
		modes = ControlModes()
	}
	for _, m := range modes {
		if !slices.Contains(ControlModes(), m) {
			return nil, fmt.Errorf("bench: control: unknown mode %q: want off, ds2, latency or all", m)
		}
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = pipeline.DefaultBatchSize
	}
	if opts.Linger <= 0 {
		opts.Linger = pipeline.DefaultLinger
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "sluice-bench-control-"); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	e := &env{dir: dir, log: log, progress: opts.Progress, engines: map[bool]wasm.Engine{}}
	defer func() {
		if cerr := e.close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
	}()
	rep = &ControlReport{Machine: CurrentMachine(), Date: time.Now().UTC(), Quick: opts.Quick, Rate: opts.Rate, Cap: opts.Cap,
		Phase: opts.Phase.Seconds(), Lreq: controlLreq.Seconds(),
		Options: controlSettings{Period: controlPeriod.Seconds(), Lock: controlLock.Seconds(), Settle: controlSettle.Seconds(), Window: controlWindow.Seconds(), MaxWorkers: opts.MaxWorkers,
			DS2Interval: controlDS2Interval.Seconds(), DS2Activation: controlActivation}}
	if opts.Soak > 0 {
		modes = append(modes, ControlSoak)
	}
	for _, m := range append(ControlModes(), ControlSoak) {
		if !slices.Contains(modes, m) {
			continue
		}
		run, err := runControlMode(ctx, e, m, opts)
		if err != nil {
			return nil, err
		}
		rep.Runs = append(rep.Runs, *run)
	}
	rep.Targets = controlTargets(rep, opts)
	rep.Load = loadAverage("/proc/loadavg")
	return rep, nil
}

// The control plane's settings in the bench: StreamSwitch's defaults,
// and a decision checked once its lock is over.
const (
	controlPeriod = time.Second
	controlLock   = 5 * time.Second
	controlSettle = 5 * time.Second
	controlWindow = 2 * time.Second
	controlLreq   = time.Second
	// controlActivation is DS2's activation in the bench: one round, so
	// that its sizing after a rate step comes before the latency
	// guarantor's one worker at a time.
	controlActivation = 1
	// controlDS2Interval is DS2's interval and warm-up in the bench: a
	// decision taken on a window that straddles a rate step is corrected
	// at the next one.
	controlDS2Interval = 5 * time.Second
)

// controlOperator is the bench's keyed operator's name.
const controlOperator = "count"

// controlPhases returns the phases of a mode's run: the base rate (more
// than one worker's capacity), a step up and a step down, the base rate
// again, a hot-key shift onto one worker, one worker slowed (a straggler);
// with every policy, the doctor's faults: one key hotter than a worker
// can serve, slow commits, a slower plugin version (when opts has one),
// then more records than the most workers can (a backlog).
func controlPhases(mode string, opts ControlOptions) []controlPhase {
	r := opts.Rate
	if mode == ControlSoak {
		return []controlPhase{{name: "soak", rate: r, vary: func(d time.Duration) float64 {
			return r * (1 + 0.5*math.Sin(2*math.Pi*d.Seconds()/120))
		}}}
	}
	ps := []controlPhase{
		{name: "base", rate: r},
		{name: "step-up", rate: 2 * r},
		{name: "step-down", rate: r / 2},
		{name: "rise", rate: r},
		{name: "hot-shift", rate: r, hot: func(job *exec.Job) func(*rand.Rand) int { return hotWorker(job, opts.Keys) }},
		{name: "straggler", rate: r, expect: "straggler", setup: func(_ context.Context, job *exec.Job, _ *controlKit) (func(), error) {
			if opts.Cap <= 0 {
				return func() {}, nil
			}
			job.SetWorkerCap(controlOperator, 0, opts.Cap/3)
			return func() { job.SetWorkerCap(controlOperator, 0, opts.Cap) }, nil
		}},
	}
	if mode != ControlAll {
		return ps
	}
	ps = append(ps,
		controlPhase{name: "hot-key", rate: r, expect: "hot-key", hot: func(*exec.Job) func(*rand.Rand) int {
			return func(rnd *rand.Rand) int {
				if rnd.Float64() < 0.75 {
					return 0
				}
				return rnd.IntN(opts.Keys)
			}
		}},
		// Commits slowed as a slow disk would, at a quarter of the rate so
		// that the default batches keep up.
		controlPhase{name: "slow-commits", rate: r / 4, expect: "slow-commits", setup: func(_ context.Context, job *exec.Job, _ *controlKit) (func(), error) {
			if err := job.SetCommitDelay(controlCommitDelay); err != nil {
				return nil, err
			}
			return func() { _ = job.SetCommitDelay(0) }, nil
		}},
	)
	if opts.SlowCount != nil {
		// A plugin version slower than the one before it, at a quarter of
		// the rate so that the most workers keep up with it.
		ps = append(ps, controlPhase{name: "slow-version", rate: r / 4, expect: "slow-version", setup: swapSlower})
	}
	return append(ps, controlPhase{name: "backlog", rate: 1.5 * float64(opts.MaxWorkers) * max(opts.Cap, r), expect: "backlog"})
}

// controlCommitDelay is how much longer each commit takes in the
// slow-commits phase: over the doctor's bound (100 ms by default).
const controlCommitDelay = 150 * time.Millisecond

// swapTries bounds the swaps asked by swapSlower.
const swapTries = 5

// swapSlower swaps the operator's plugin for the slower version of it
// (version v2), and returns the swap back to the bench's wordcount (v1).
// A swap that met a change of the operator's workers (the control plane's)
// is asked again, with the plugin loaded again (the refused swap closed
// it), up to swapTries times.
func swapSlower(ctx context.Context, job *exec.Job, kit *controlKit) (func(), error) {
	for try := 1; ; try++ {
		slow, err := plugin.Load(ctx, kit.eng, "slowcount.wasm", kit.slow, plugin.KindKeyed, plugin.WithLogger(kit.log))
		if err != nil {
			return nil, fmt.Errorf("bench: control: loading slowcount: %w", err)
		}
		err = job.Swap(ctx, controlOperator, exec.Replacement{Plugin: slow, ClosePlugin: true, Version: "v2"})
		if err == nil {
			break
		}
		if !errors.Is(err, exec.ErrSwapRaced) || try == swapTries {
			return nil, fmt.Errorf("bench: control: swapping in slowcount: %w", err)
		}
		kit.log.Warn("bench: control: the swap met a change of workers; swapping again", "err", err)
	}
	return func() {
		if err := job.Swap(context.WithoutCancel(ctx), controlOperator, exec.Replacement{Plugin: kit.wc, Version: "v1"}); err != nil {
			kit.log.Warn("bench: control: swapping wordcount back in", "err", err)
		}
	}, nil
}

// hotWorker sends 80% of the records to the keys (of the first keys) in
// the key groups that worker 0 owns as the phase begins: that worker is
// overloaded while the others have room, a shift that moving key groups
// resolves.
func hotWorker(job *exec.Job, keys int) func(r *rand.Rand) int {
	var hot []int
	for _, op := range job.Measure().Operators {
		if op.Name != controlOperator || len(op.Workers) < 2 {
			continue
		}
		owned := map[int]bool{}
		for _, kg := range op.Workers[0].Groups {
			owned[kg] = true
		}
		for k := range keys {
			if owned[state.KeyGroup(keyBytes(k), len(op.Groups))] {
				hot = append(hot, k)
			}
		}
	}
	return func(rnd *rand.Rand) int {
		if len(hot) == 0 || rnd.Float64() >= 0.8 {
			return rnd.IntN(keys)
		}
		return hot[rnd.IntN(len(hot))]
	}
}

// keyBytes is the key of key number k.
func keyBytes(k int) []byte { return strconv.AppendInt(nil, int64(k), 10) }

func runControlMode(ctx context.Context, e *env, mode string, opts ControlOptions) (run *ControlRun, err error) {
	phases := controlPhases(mode, opts)
	capText := "workers uncapped"
	if opts.Cap > 0 {
		capText = "each worker capped at " + thousands(opts.Cap) + " records/s"
	}
	e.step("control %s: %d phases of %v, base rate %s records/s, %s", mode, len(phases), opts.Phase, thousands(opts.Rate), capText)
	eng, err := e.engine(ctx, true)
	if err != nil {
		return nil, err
	}
	wc, err := plugin.Load(ctx, eng, "wordcount.wasm", opts.WordCount, plugin.KindKeyed, plugin.WithLogger(e.log))
	if err != nil {
		return nil, fmt.Errorf("bench: control: loading wordcount: %w", err)
	}
	defer func() {
		if cerr := wc.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = fmt.Errorf("bench: control: %w", cerr)
		}
	}()
	store, err := state.Open(filepath.Join(e.dir, "control-state", mode), state.Options{KeyGroups: state.DefaultKeyGroups, Logger: e.log})
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("bench: %w", cerr)
		}
	}()
	src := newStepSource(opts.Keys)
	sink := newCheckedCounts()
	job, err := exec.New(ctx, exec.Config{
		Name:       "bench-control-" + mode,
		Sources:    []exec.Input{{Name: "steps", Source: src}},
		Operators:  []exec.Operator{{Name: controlOperator, Kind: plugin.KindKeyed, Plugin: wc, Parallelism: 1, Tables: []string{tableCounts}, Version: "v1"}},
		Sinks:      []exec.Output{{Name: "counts", Sink: sink}},
		DeadLetter: &discardSink{name: "dead-letters"},
		Store:      store,
		BatchSize:  opts.BatchSize,
		Linger:     opts.Linger,
		Logger:     e.log,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: control: %w", err)
	}
	if opts.Cap > 0 {
		job.SetWorkerCap(controlOperator, -1, opts.Cap)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- job.Run(runCtx) }()
	stop := func() error {
		cancel()
		err := <-done
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return errors.Join(err, job.Close(context.WithoutCancel(ctx)))
	}

	var ctrl *control.Controller
	ctrlDone := make(chan error, 1)
	if mode != ControlOff {
		ctrl, err = newBenchController(mode, job, opts, e.log)
		if err != nil {
			return nil, errors.Join(err, stop())
		}
		go func() { ctrlDone <- ctrl.Run(runCtx) }()
	} else {
		ctrlDone <- nil
	}

	kit := &controlKit{eng: eng, wc: wc, slow: opts.SlowCount, log: e.log}
	run = &ControlRun{Mode: mode}
	start := time.Now()
	spans := make([]phaseSpan, len(phases))
	for i, ph := range phases {
		res := ControlPhase{Name: ph.name, Rate: ph.rate, Expect: ph.expect, DetectedSeconds: -1}
		undo := func() {}
		if ph.setup != nil {
			if undo, err = ph.setup(ctx, job, kit); err != nil {
				return nil, errors.Join(err, stop())
			}
		}
		var pick func(*rand.Rand) int
		if ph.hot != nil {
			pick = ph.hot(job)
		}
		from := time.Now()
		src.set(ph.rate, pick)
		e.step("control %s: phase %s at %s records/s", mode, ph.name, thousands(ph.rate))
		length := opts.Phase
		if ph.vary != nil {
			length = opts.Soak
		}
		for time.Since(from) < length {
			if ph.vary != nil {
				src.set(ph.vary(time.Since(from)), pick)
			}
			select {
			case <-ctx.Done():
				return nil, errors.Join(ctx.Err(), stop())
			case err := <-done:
				return nil, fmt.Errorf("bench: control: the job stopped: %w", err)
			case <-time.After(250 * time.Millisecond):
			}
			if ctrl == nil {
				continue
			}
			st := ctrl.Status()
			if ph.expect != "" && res.DetectedSeconds < 0 && found(st, ph.expect, from) {
				res.DetectedSeconds = time.Since(from).Seconds()
			}
			for _, f := range st.Findings {
				if name := f.Cause + " " + f.Subject; !slices.Contains(res.Findings, name) {
					res.Findings = append(res.Findings, name)
				}
			}
		}
		undo()
		spans[i] = phaseSpan{from, time.Now()}
		res.Workers = workersOf(job)
		run.Phases = append(run.Phases, res)
	}
	// Drain: the source stops, and every record made must be counted.
	made := src.end()
	deadline := time.Now().Add(5 * time.Minute)
	for !sink.caughtUp(src) {
		if time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("bench: control %s: %d records made, not all counted within 5 minutes of the end", mode, made), stop())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-ctrlDone; err != nil && !errors.Is(err, context.Canceled) {
		return nil, errors.Join(fmt.Errorf("bench: control: the control plane: %w", err), stop())
	}
	if err := stop(); err != nil {
		return nil, fmt.Errorf("bench: control: %w", err)
	}
	if err := sink.check(src); err != nil {
		return nil, fmt.Errorf("bench: control %s: %w", mode, err)
	}
	run.Records = made
	if ctrl != nil {
		st := ctrl.Status()
		run.Decisions = slices.Clone(st.Decisions)
		slices.Reverse(run.Decisions) // oldest first
	}
	run.Undone, run.UndoneAll = undone(run.Decisions, spans)
	for i := range run.Phases {
		ph := &run.Phases[i]
		sp := spans[i]
		ph.P99Ms, ph.MaxP99Ms, ph.RecoverySeconds = sink.phaseLatency(sp.from, sp.to)
		for _, d := range run.Decisions {
			if d.Time.Before(sp.from) || !d.Time.Before(sp.to) || d.Outcome == "failed" {
				continue
			}
			switch d.Action.Kind {
			case "move-groups":
				ph.Moves++
			case "set-workers":
				ph.Scales++
			}
		}
	}
	e.step("control %s: %s records in %v, %d decisions", mode, thousands(float64(made)), time.Since(start).Round(time.Second), len(run.Decisions))
	return run, nil
}

// newBenchController makes mode's control plane over job.
func newBenchController(mode string, job *exec.Job, opts ControlOptions, log *slog.Logger) (*control.Controller, error) {
	var policies []control.Policy
	add := func(p control.Policy, err error) error {
		if err != nil {
			return fmt.Errorf("bench: control: %w", err)
		}
		policies = append(policies, p)
		return nil
	}
	latency := func() error {
		return add(control.NewLatency(control.LatencyConfig{Lreq: controlLreq, Low: 50 * time.Millisecond, High: 100 * time.Millisecond}))
	}
	ds2 := func() error {
		return add(control.NewDS2(control.DS2Config{Interval: controlDS2Interval, WarmUp: controlDS2Interval, Activation: controlActivation, DeadBand: 0}))
	}
	var err error
	switch mode {
	case ControlDS2:
		err = ds2()
	case ControlLatency:
		err = latency()
	case ControlAll, ControlSoak:
		err = errors.Join(
			add(control.NewStraggler(control.StragglerConfig{Ratio: 1.5, MinRecords: 1000})),
			ds2(), latency(),
			add(control.NewDoctor(control.DoctorConfig{SlowCommit: 100 * time.Millisecond, SlowVersionRatio: 1.3, HeapRatio: 0.9})))
	}
	if err != nil {
		return nil, err
	}
	return control.New(control.Config{
		Period: controlPeriod, Lock: controlLock, Settle: controlSettle, Window: controlWindow,
		MinWorkers: 1, MaxWorkers: opts.MaxWorkers,
		Policies: policies,
		Sample:   job.Measure,
		Actuator: job,
		Logger:   log,
	})
}

// found reports whether st names cause, in a finding or in a decision of
// the policy of that name, since from.
func found(st schema.Control, cause string, from time.Time) bool {
	for _, f := range st.Findings {
		if f.Cause == cause {
			return true
		}
	}
	for _, d := range st.Decisions {
		if d.Policy == cause && !d.Time.Before(from) {
			return true
		}
	}
	return false
}

// workersOf returns the bench operator's worker count.
func workersOf(job *exec.Job) int {
	for _, op := range job.Measure().Operators {
		if op.Name == controlOperator {
			return len(op.Workers)
		}
	}
	return 0
}

// phaseSpan is when a phase ran.
type phaseSpan struct{ from, to time.Time }

// sameRate is how far the arrival rate at the sources may move between
// two decisions for a reversal of the first by the second to count as
// under the same rate: a tenth of the first's (the rate measured over
// the control plane's two-second window at a steady offered rate varies
// by a few percent).
const sameRate = 0.1

// sourcesRateEvidence names the observation a decision's check records
// of the arrival rate at the sources when the decision was taken (read
// plus backlog growth, over the control plane's window).
const sourcesRateEvidence = "arrival rate at the sources before"

// decisionRate returns the arrival rate at the sources measured when d
// was taken, or NaN when d was not checked.
func decisionRate(d *schema.Decision) float64 {
	for _, e := range d.Observed {
		if e.Name == sourcesRateEvidence {
			return e.Value
		}
	}
	return math.NaN()
}

// undone counts decisions undone within a minute. all counts every
// rollback and every worker count changed back (a set-workers whose
// direction reverses the one before it) within 60 s. same counts those
// under the same rate: every rollback (the effect check already forgives
// a decision whose load rose by a fifth), and the reversals within the
// same phase whose rate, measured at each decision, did not move the
// reversal's way by more than sameRate: a scale-in at a rate lower by
// more than a tenth than the scale-out's it reverses, or a scale-out at
// a rate higher by more than a tenth than the scale-in's, follows a
// changed input rate (a step, the soak's sine) and is not counted; a
// reversal whose rate is not known is.
func undone(ds []schema.Decision, phases []phaseSpan) (same, all int) {
	phaseOf := func(t time.Time) int {
		for i, p := range phases {
			if !t.Before(p.from) && t.Before(p.to) {
				return i
			}
		}
		return -1
	}
	var last *schema.Decision
	for i := range ds {
		d := &ds[i]
		if d.Outcome == "rolled back" {
			same++
			all++
		}
		if d.Action.Kind != "set-workers" || d.Outcome == "failed" {
			continue
		}
		if last != nil && d.Time.Sub(last.Time) <= time.Minute && (d.Action.To-d.Action.From)*(last.Action.To-last.Action.From) < 0 {
			all++
			before, now := decisionRate(last), decisionRate(d)
			followed := (d.Action.To < d.Action.From && now < before*(1-sameRate)) ||
				(d.Action.To > d.Action.From && now > before*(1+sameRate))
			if phaseOf(d.Time) == phaseOf(last.Time) && !followed {
				same++
			}
		}
		last = d
	}
	return same, all
}

// stepSource makes records at a rate that the bench changes phase by
// phase, each due at a fixed time (its event time), with keys picked by
// the phase; it reports its backlog: records due and not yet read.
type stepSource struct {
	keys int

	mu      sync.Mutex
	opened  bool
	after   uint64    // the position Open resumed after
	base    float64   // records due at since
	since   time.Time // when the rate last changed
	rate    float64
	pick    func(*rand.Rand) int
	rnd     *rand.Rand
	made    uint64 // records read out
	ended   bool
	perKey  map[string]uint64 // records made per key
	changed chan struct{}     // closed when the rate changes
}

func newStepSource(keys int) *stepSource {
	return &stepSource{keys: keys, rnd: rand.New(rand.NewPCG(1, 2)), perKey: map[string]uint64{}, changed: make(chan struct{})}
}

func (s *stepSource) Name() string { return "steps" }

func (s *stepSource) Open(_ context.Context, after uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opened, s.after, s.since = true, after, time.Now()
	return nil
}

// set changes the rate and the key picker (nil: uniform over the keys).
func (s *stepSource) set(rate float64, pick func(*rand.Rand) int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.base = s.dueAt(now)
	s.since, s.rate, s.pick = now, rate, pick
	close(s.changed)
	s.changed = make(chan struct{})
}

// dueAt is how many records are due by t.
func (s *stepSource) dueAt(t time.Time) float64 {
	return s.base + t.Sub(s.since).Seconds()*s.rate
}

// Backlog returns the records due and not yet read.
func (s *stepSource) Backlog() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(int64(s.dueAt(time.Now()))-int64(s.made), 0)
}

// end stops the source and returns how many records it made.
func (s *stepSource) end() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	return s.made
}

func (s *stepSource) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	for {
		s.mu.Lock()
		if s.ended {
			s.mu.Unlock()
			return 0, io.EOF
		}
		now := time.Now()
		due := uint64(s.dueAt(now))
		if due > s.made {
			n := int(min(uint64(len(buf)), due-s.made))
			slab := make([]byte, 0, n*8)
			for i := range n {
				k := 0
				if s.pick != nil {
					k = s.pick(s.rnd)
				} else {
					k = s.rnd.IntN(s.keys)
				}
				start := len(slab)
				slab = strconv.AppendInt(slab, int64(k), 10)
				key := slab[start:len(slab):len(slab)]
				s.perKey[string(key)]++
				at := s.since.Add(time.Duration((float64(s.made) - s.base) / s.rate * float64(time.Second)))
				s.made++
				buf[i] = connectors.Message{Record: abi.Record{Key: key, Value: key, Time: at.UnixNano()}, Position: s.after + s.made}
			}
			s.mu.Unlock()
			return n, nil
		}
		wait := time.Duration((float64(s.made+1) - s.base) / s.rate * float64(time.Second))
		wait = max(time.Until(s.since.Add(wait)), 100*time.Microsecond)
		changed := s.changed
		s.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		case <-changed:
			t.Stop()
		}
	}
}

func (s *stepSource) Ack(context.Context, uint64) error { return nil }
func (s *stepSource) Resumable() bool                   { return true }
func (s *stepSource) Close() error                      { return nil }

// checkedCounts checks the word counts (each key's n-th output is n, each
// once) and records every output's latency by the time it was written.
type checkedCounts struct {
	mu     sync.Mutex
	counts map[string]uint64 // the last count seen per key
	n      uint64            // outputs
	err    error
	// at and latency: each output's write time and latency, in order.
	at      []int64
	latency []int64
}

func newCheckedCounts() *checkedCounts { return &checkedCounts{counts: map[string]uint64{}} }

func (s *checkedCounts) Name() string { return "counts" }

func (s *checkedCounts) Write(_ context.Context, out []connectors.Out) error {
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range out {
		r := &out[i].Record
		n, err := strconv.ParseUint(string(r.Value), 10, 64)
		key := string(r.Key)
		switch {
		case err != nil:
			if s.err == nil {
				s.err = fmt.Errorf("output %q=%q is not a count", r.Key, r.Value)
			}
		case n != s.counts[key]+1:
			if s.err == nil {
				s.err = fmt.Errorf("key %q: count %d after %d: a record lost or counted twice", key, n, s.counts[key])
			}
		}
		s.counts[key] = n
		s.n++
		s.at = append(s.at, now)
		s.latency = append(s.latency, now-r.Time)
	}
	return nil
}

func (s *checkedCounts) Flush(context.Context) error { return nil }
func (s *checkedCounts) Close() error                { return nil }

// caughtUp reports whether every record src made has its output.
func (s *checkedCounts) caughtUp(src *stepSource) bool {
	src.mu.Lock()
	made := src.made
	src.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n >= made
}

// check returns an error unless every key's final count is the number of
// records src made with it.
func (s *checkedCounts) check(src *stepSource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	for k, n := range src.perKey {
		if s.counts[k] != n {
			return fmt.Errorf("key %q: %d records made, counted %d", k, n, s.counts[k])
		}
	}
	if s.n != src.made {
		return fmt.Errorf("%d outputs for %d records", s.n, src.made)
	}
	return nil
}

// phaseLatency returns, for the outputs written between from and to, the
// p99 latency of the last third, the worst one-second p99, and how long
// after from every following second's p99 stayed under Lreq (-1: never).
func (s *checkedCounts) phaseLatency(from, to time.Time) (p99, worst, recovery float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lo, _ := slices.BinarySearch(s.at, from.UnixNano())
	hi, _ := slices.BinarySearch(s.at, to.UnixNano())
	// Whole seconds only: a last, partial second would look idle.
	secs := max(int(to.Sub(from)/time.Second), 1)
	per := make([][]int64, secs)
	var tail []int64
	third := to.Add(-to.Sub(from) / 3).UnixNano()
	for i := lo; i < hi; i++ {
		if sec := int((s.at[i] - from.UnixNano()) / int64(time.Second)); sec < secs {
			per[sec] = append(per[sec], s.latency[i])
		}
		if s.at[i] >= third {
			tail = append(tail, s.latency[i])
		}
	}
	p99 = latencyStats(tail).P99Ms
	recovery = 0
	for sec, ls := range per {
		q := latencyStats(ls).P99Ms
		worst = max(worst, q)
		if q > float64(controlLreq)/1e6 || len(ls) == 0 {
			recovery = float64(sec + 1)
		}
	}
	if recovery >= float64(secs) {
		recovery = -1
	}
	return p99, worst, recovery
}

// uncappedVoid says, for a phase whose fault is made through the
// workers' cap, why a run without one cannot check the phase's target;
// "" for the other phases.
func uncappedVoid(phase string) string {
	switch phase {
	case "hot-shift":
		return "uncapped, the shift is not made to exceed a worker's rate"
	case "straggler":
		return "uncapped, no worker is slowed (the cap makes the straggler)"
	case "hot-key":
		return "uncapped, the hot key is not made to exceed a worker's rate"
	}
	return ""
}

// controlTargets checks the targets against the runs; uncapped
// (opts.Cap 0), those of the phases in uncappedVoid are void.
func controlTargets(rep *ControlReport, opts ControlOptions) []Target {
	var ts []Target
	for _, run := range rep.Runs {
		if run.Mode == ControlOff {
			continue
		}
		for _, ph := range run.Phases {
			if ph.Name != "step-up" && ph.Name != "step-down" {
				continue
			}
			ts = append(ts, Target{
				Name: fmt.Sprintf("%s, %s to %s records/s: p99 back under Lreq (%v)", run.Mode, ph.Name, thousands(ph.Rate), controlLreq),
				Want: "within 10 s",
				Got:  recoveryText(ph.RecoverySeconds),
				Met:  ph.RecoverySeconds >= 0 && ph.RecoverySeconds <= 10,
			})
		}
		if run.Mode == ControlDS2 && opts.Cap > 0 {
			for _, ph := range run.Phases {
				if ph.Name != "step-up" {
					continue
				}
				want := min(int(math.Ceil(ph.Rate/opts.Cap)), opts.MaxWorkers)
				ts = append(ts, Target{
					Name: fmt.Sprintf("DS2 reaches its parallelism (%d workers for %s records/s at %s per worker)", want, thousands(ph.Rate), thousands(opts.Cap)),
					Want: "in at most 3 decisions",
					Got:  fmt.Sprintf("%d workers after %d decisions", ph.Workers, ph.Scales),
					Met:  ph.Workers >= want && ph.Scales <= 3,
				})
			}
		}
		ts = append(ts, Target{Name: run.Mode + ": decisions undone within a minute under the same rate (within a tenth)", Want: "0",
			Got: fmt.Sprintf("%d (%d undone whatever the rate)", run.Undone, run.UndoneAll), Met: run.Undone == 0})
		for _, ph := range run.Phases {
			var t Target
			switch {
			case ph.Name == "hot-shift" && run.Mode != ControlDS2:
				t = Target{Name: run.Mode + ": a hot-key shift is resolved by moving key groups, not by scaling out",
					Want: "moves, no scale-out", Got: fmt.Sprintf("%d moves, %d worker changes", ph.Moves, ph.Scales), Met: ph.Moves > 0 && ph.Scales == 0}
			case ph.Name == "straggler" && run.Mode == ControlAll:
				t = Target{Name: "a slowed worker is detected as a straggler", Want: "within 10 s",
					Got: detectedText(ph.DetectedSeconds), Met: ph.DetectedSeconds >= 0 && ph.DetectedSeconds <= 10}
			case ph.Expect != "" && ph.Expect != "straggler":
				t = Target{Name: "the doctor names the injected cause: " + ph.Expect, Want: "named",
					Got: detectedText(ph.DetectedSeconds), Met: ph.DetectedSeconds >= 0}
			default:
				continue
			}
			if opts.Cap <= 0 {
				t.Void = uncappedVoid(ph.Name)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

func recoveryText(s float64) string {
	if s < 0 {
		return "never within the phase"
	}
	return fmt.Sprintf("%.0f s", s)
}

func detectedText(s float64) string {
	if s < 0 {
		return "not found"
	}
	return fmt.Sprintf("after %.1f s", s)
}

// WriteJSON writes the report as indented JSON.
func (r *ControlReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable prints the report as aligned tables with units.
func (r *ControlReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	writeHeader(&b, "Sluice control plane", r.Date, r.Quick, r.Machine, r.Load)
	capText := "uncapped"
	if r.Cap > 0 {
		capText = "each worker capped at " + thousands(r.Cap) + " records/s (a bench setting)"
	}
	fmt.Fprintf(&b, "keyed word count, base rate %s records/s, %s, phases of %.0f s; every record checked counted once\n", thousands(r.Rate), capText, r.Phase)
	fmt.Fprintf(&b, "control: a round every %.0f s, lock %.0f s, effect checked after %.0f s, rates over %.0f s, 1 to %d workers; DS2 every %.0f s at most (its warm-up the same), after %d round(s) agreeing\n",
		r.Options.Period, r.Options.Lock, r.Options.Settle, r.Options.Window, r.Options.MaxWorkers, r.Options.DS2Interval, r.Options.DS2Activation)
	tw := table(&b)
	fmt.Fprintln(tw, "mode\tphase\trate\tworkers\tp99 (last third)\tworst 1 s p99\tunder Lreq after\tmoves\tworker changes\tdetected\t")
	for _, run := range r.Runs {
		for _, ph := range run.Phases {
			det := ""
			if ph.Expect != "" {
				det = ph.Expect + " " + detectedText(ph.DetectedSeconds)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s/s\t%d\t%.0f ms\t%.0f ms\t%s\t%d\t%d\t%s\t\n", run.Mode, ph.Name, thousands(ph.Rate), ph.Workers,
				ph.P99Ms, ph.MaxP99Ms, recoveryText(ph.RecoverySeconds), ph.Moves, ph.Scales, det)
		}
	}
	tw.Flush()
	fmt.Fprintln(&b, "\nThe job doctor's findings during each phase")
	tw = table(&b)
	fmt.Fprintln(tw, "mode\tphase\tfindings\t")
	for _, run := range r.Runs {
		for _, ph := range run.Phases {
			if len(ph.Findings) > 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t\n", run.Mode, ph.Name, strings.Join(ph.Findings, ", "))
			}
		}
	}
	tw.Flush()
	fmt.Fprintln(&b, "\nDecisions")
	tw = table(&b)
	fmt.Fprintln(tw, "mode\tat\tpolicy\taction\tsources' rate\toutcome\treason\t")
	for _, run := range r.Runs {
		var start time.Time
		if len(run.Decisions) > 0 {
			start = run.Decisions[0].Time
		}
		for i := range run.Decisions {
			d := &run.Decisions[i]
			rate := "-"
			if x := decisionRate(d); !math.IsNaN(x) {
				rate = thousands(x) + "/s"
			}
			fmt.Fprintf(tw, "%s\t+%.0f s\t%s\t%s\t%s\t%s\t%s\t\n", run.Mode, d.Time.Sub(start).Seconds(), d.Policy, actionText(d.Action), rate, d.Outcome, d.Reason)
		}
	}
	tw.Flush()
	writeTargets(&b, r.Targets)
	_, err := io.WriteString(w, b.String())
	return err
}

// actionText says what an action does in a few words.
func actionText(a schema.Action) string {
	switch a.Kind {
	case "set-workers":
		return fmt.Sprintf("%s workers %d -> %d", a.Operator, a.From, a.To)
	case "move-groups", "move-host-groups":
		return fmt.Sprintf("%s: %d key groups moved", a.Operator, len(a.Moves))
	}
	return a.Kind
}
