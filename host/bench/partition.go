package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/migrate"
)

// partitionRate is the pace of the partition run's publisher: far above
// what the publisher reaches, so it publishes as fast as the stream takes
// records, and a whole number of nanoseconds apart, so each record's due
// time is exact.
const partitionRate = 1e6

// partitionPeriod is how often the partition run's hosts look at the
// assignment: host/runner's period.
const partitionPeriod = 200 * time.Millisecond

// partitionLimit bounds how long one drain of the partition run waits for
// the last output before it fails.
const partitionLimit = 3 * time.Minute

// PartitionResult is the partition run of RunMigrate: the cost of running
// a keyed pipeline partitioned over several hosts instead of in one. The
// same backlog of records, published into the partition stream before any
// host starts, is drained once by one host owning every key group and once
// by Hosts hosts owning a share each, alternately, Rounds times; every
// host in this process, on this machine's cores, against the same NATS
// servers. Rates are from the first output to the last (the hosts' start
// is left out); CPU is the process's (hosts and NATS servers) over the
// same span.
type PartitionResult struct {
	Records int `json:"records"`
	Rounds  int `json:"rounds"`
	// Hosts is the host count of the partitioned drains.
	Hosts int            `json:"hosts"`
	Runs  []PartitionRun `json:"runs"`
	// One and Many are the medians of the one-host and the partitioned
	// drains.
	One  PartitionRun `json:"one_host"`
	Many PartitionRun `json:"partitioned"`
	// RateRatio is Many's rate over One's; CPURatio Many's CPU per record
	// over One's.
	RateRatio float64 `json:"rate_ratio"`
	CPURatio  float64 `json:"cpu_ratio"`
}

// PartitionRun is one drain of the backlog.
type PartitionRun struct {
	Hosts int `json:"hosts"`
	Round int `json:"round,omitempty"`
	// Rate is records per second reaching the sink, from the first
	// output to the last.
	Rate float64 `json:"records_per_s"`
	// CPUMicros is the process's CPU time per record over the same span,
	// in microseconds: the hosts, the NATS servers and the sink.
	CPUMicros float64 `json:"cpu_us_per_record"`
}

// drainSink counts the outputs of a partition drain for the latency sink
// behind it and notes the time and the process's CPU time at the first
// output and at the last of want.
type drainSink struct {
	next connectors.Sink
	want uint64

	mu                sync.Mutex
	n, before         uint64 // outputs so far; outputs up to the first write's
	first, last       time.Time
	firstCPU, lastCPU time.Duration
	done              chan struct{}
}

func newDrainSink(next connectors.Sink, want uint64) *drainSink {
	return &drainSink{next: next, want: want, done: make(chan struct{})}
}

func (s *drainSink) Name() string                { return "latency" }
func (s *drainSink) Flush(context.Context) error { return nil }
func (s *drainSink) Close() error                { return nil }

func (s *drainSink) Write(ctx context.Context, out []connectors.Out) error {
	if err := s.next.Write(ctx, out); err != nil {
		return err
	}
	now, cpu := time.Now(), processCPU()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		s.first, s.firstCPU, s.before = now, cpu, uint64(len(out))
	}
	was := s.n
	s.n += uint64(len(out))
	if was < s.want && s.n >= s.want {
		s.last, s.lastCPU = now, cpu
		close(s.done)
	}
	return nil
}

// run returns the drain's figures once it is done.
func (s *drainSink) run(hosts, round int) PartitionRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	run := PartitionRun{Hosts: hosts, Round: round}
	n := float64(s.want - s.before)
	if d := s.last.Sub(s.first); d > 0 && n > 0 {
		run.Rate = n / d.Seconds()
		run.CPUMicros = float64(s.lastCPU-s.firstCPU) / float64(time.Microsecond) / n
	}
	return run
}

// runPartition makes the partition run: opts.PartitionRounds rounds of a
// drain on one host and one on opts.Hosts hosts, their order alternating.
func runPartition(ctx context.Context, e *env, urls []string, opts MigrateOptions) (*PartitionResult, error) {
	res := &PartitionResult{Records: opts.PartitionRecords, Rounds: opts.PartitionRounds, Hosts: opts.Hosts}
	var ones, manys []PartitionRun
	for round := range opts.PartitionRounds {
		order := []int{1, opts.Hosts}
		if round%2 == 1 {
			order = []int{opts.Hosts, 1}
		}
		for _, n := range order {
			var run PartitionRun
			var err error
			// The drain's goroutines (its hosts' jobs and connections)
			// carry its host count in a CPU profile, apart from the NATS
			// servers' (started before).
			pprof.Do(ctx, pprof.Labels("partition", strconv.Itoa(n)+" host(s)"), func(ctx context.Context) {
				run, err = drainBacklog(ctx, e, urls, opts, n, round)
			})
			if err != nil {
				return nil, err
			}
			res.Runs = append(res.Runs, run)
			if n == 1 {
				ones = append(ones, run)
			} else {
				manys = append(manys, run)
			}
		}
	}
	res.One, res.Many = medianRun(ones), medianRun(manys)
	if res.One.Rate > 0 {
		res.RateRatio = res.Many.Rate / res.One.Rate
	}
	if res.One.CPUMicros > 0 {
		res.CPURatio = res.Many.CPUMicros / res.One.CPUMicros
	}
	return res, nil
}

// medianRun returns the median rate and the median CPU per record of
// runs, each taken on its own.
func medianRun(runs []PartitionRun) PartitionRun {
	if len(runs) == 0 {
		return PartitionRun{}
	}
	rates, cpus := make([]float64, len(runs)), make([]float64, len(runs))
	for i, r := range runs {
		rates[i], cpus[i] = r.Rate, r.CPUMicros
	}
	return PartitionRun{Hosts: runs[0].Hosts, Rate: median(rates), CPUMicros: median(cpus)}
}

// drainBacklog publishes opts.PartitionRecords records into a new
// partition stream, then starts hosts hosts over the key groups (spread
// evenly) and waits until every record's output reached the sink once.
func drainBacklog(ctx context.Context, e *env, urls []string, opts MigrateOptions, hosts, round int) (run PartitionRun, err error) {
	o := opts
	// The hosts look at the assignment as often as a real host does
	// (host/runner), not every few milliseconds as the move phases' do
	// to time their steps closely: nothing moves here, and each look is
	// a read from the NATS cluster.
	o.Hosts, o.State, o.Rate, o.Period = hosts, 0, partitionRate, partitionPeriod
	name := fmt.Sprintf("partition, %d host(s), round %d", hosts, round+1)
	r := &migRun{e: e, opts: o, strategy: MigrateStrategy{Name: "partition"},
		pipeline: "bench-migrate-p" + strconv.Itoa(hosts) + "-" + strconv.Itoa(round), count: uint64(opts.PartitionRecords)}
	a, src, closeRun, err := r.setUp(ctx, urls)
	defer func() {
		if cerr := closeRun(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return run, err
	}
	want := uint64(opts.PartitionRecords)
	r.sink = newLatencySink(want, r.pub.keys.seq)
	drain := newDrainSink(r.sink, want)
	e.step("migrate %s: publishing %s records into the partition stream", name, thousands(float64(want)))
	if err := src.Open(ctx, 0); err != nil {
		return run, fmt.Errorf("bench: migrate %s: %w", name, err)
	}
	r.start = src.openedAt()
	r.pub.keys.setStart(r.start)
	if err := r.pub.run(ctx); err != nil {
		return run, fmt.Errorf("bench: migrate %s: %w", name, err)
	}
	e.step("migrate %s: starting the host(s) and draining", name)
	for _, h := range r.hosts {
		h.out = drain
		if err := r.startHost(ctx, h, migrate.Owned(a, h.id)); err != nil {
			return run, fmt.Errorf("bench: migrate %s: host %s: %w", name, h.id, err)
		}
	}
	limit := time.NewTimer(partitionLimit)
	defer limit.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-drain.done:
			waiting = false
		case <-tick.C:
			if err := r.hostsOK(); err != nil {
				return run, fmt.Errorf("bench: migrate %s: %w", name, err)
			}
		case <-limit.C:
			return run, fmt.Errorf("bench: migrate %s: %d of %d outputs after %v", name, r.sink.seen(), want, partitionLimit)
		case <-ctx.Done():
			return run, ctx.Err()
		}
	}
	var dead uint64
	for _, h := range r.hosts {
		dead += h.job.Status().Dead
	}
	if err := r.sink.check(want, dead); err != nil {
		return run, fmt.Errorf("bench: migrate %s: %w", name, errors.Join(ErrMigrateOutput, err))
	}
	return drain.run(hosts, round+1), nil
}

// partitionTargets reports the partition run as the issue's "measured and
// explained" item.
func partitionTargets(p *PartitionResult) []Target {
	if p == nil {
		return nil
	}
	return []Target{{
		Name: fmt.Sprintf("partitioned over %d hosts against one process, on this machine", p.Hosts),
		Want: "measured",
		Got:  fmt.Sprintf("%.2fx the rate, %.2fx the CPU per record", p.RateRatio, p.CPURatio),
		Met:  p.RateRatio > 0,
	}}
}

// writePartition prints the partition run.
func writePartition(b *strings.Builder, p *PartitionResult) {
	fmt.Fprintf(b, "\npartition cost: a backlog of %s records drained by one host and by %d hosts, %d round(s), alternately; from the first output to the last\n",
		thousands(float64(p.Records)), p.Hosts, p.Rounds)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "hosts\tround\trecords/s\tprocess CPU per record\t")
	for _, x := range p.Runs {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.2f µs\t\n", x.Hosts, x.Round, thousands(x.Rate), x.CPUMicros)
	}
	fmt.Fprintf(tw, "%d\tmedian\t%s\t%.2f µs\t\n", p.One.Hosts, thousands(p.One.Rate), p.One.CPUMicros)
	fmt.Fprintf(tw, "%d\tmedian\t%s\t%.2f µs\t\n", p.Many.Hosts, thousands(p.Many.Rate), p.Many.CPUMicros)
	tw.Flush()
	fmt.Fprintf(b, "partitioned over one: %.2fx the rate, %.2fx the CPU per record\n", p.RateRatio, p.CPURatio)
}
