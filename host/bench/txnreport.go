package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/txn/apps/workload"
)

// The transactional targets of the project (issue 3, "Performance
// targets", and issue 22, "Transactional scaling").
const (
	// TargetTxnLedgerRate is the rate, in events per second, that the best
	// strategy must reach on MorphStream's Streaming Ledger comparison
	// workload with 2 workers and the Wasm operator; TargetTxnLedgerNative
	// the same with the native operator.
	TargetTxnLedgerRate   = 400_000
	TargetTxnLedgerNative = 600_000
	// TargetTxnWasmRatio is the fraction of the native operator's rate
	// that the Wasm operator must reach in the same run.
	TargetTxnWasmRatio = 0.5
	// TargetTxnSpeedup is how much faster 2 workers must be than 1 on
	// GrepSum without cycles, natively and in Wasm (issue 3 asked 1.6x
	// of the Wasm operator; issue 22 1.7x of both).
	TargetTxnSpeedup = 1.7
	// TargetTxnKeys10 and TargetTxnKeys100 are the fractions of its rate
	// that Streaming Ledger must keep with 10 and 100 times the keys
	// (issue 22), in the same run.
	TargetTxnKeys10  = 0.9
	TargetTxnKeys100 = 0.8
)

// ledgerTargetWorkload reports whether the report's workload is the one
// TargetTxnLedgerRate is about: Streaming Ledger with MorphStream's
// comparison settings (any seed), its punctuation of 10,240 events.
func (r *TxnReport) ledgerTargetWorkload() bool {
	if r.App != workload.StreamingLedger || r.Punctuation != DefaultTxnPunctuation {
		return false
	}
	def, _ := workload.Defaults(workload.StreamingLedger)
	want := knobText(workload.StreamingLedger, &def)
	for name, v := range want {
		if name != "seed" && r.Knobs[name] != v {
			return false
		}
	}
	return true
}

// checkTargets evaluates the targets this report's runs bear on.
func (r *TxnReport) checkTargets() []Target {
	if r.Dynamic != nil {
		return r.dynamicTargets()
	}
	var ts []Target
	if r.ledgerTargetWorkload() {
		for _, c := range []struct {
			logic TxnLogic
			name  string
			want  float64
		}{{TxnWasm, "Wasm", TargetTxnLedgerRate}, {TxnNative, "native", TargetTxnLedgerNative}} {
			var best *TxnRun
			for i := range r.Runs {
				x := &r.Runs[i]
				if x.Logic == c.logic && x.Workers == 2 && (best == nil || x.Rate > best.Rate) {
					best = x
				}
			}
			if best != nil {
				ts = append(ts, Target{
					Name: fmt.Sprintf("Streaming Ledger, MorphStream's comparison workload, 2 workers, %s, best strategy", c.name),
					Want: fmt.Sprintf(">= %s events/s", thousands(c.want)),
					Got:  fmt.Sprintf("%s events/s (%s)", thousands(best.Rate), best.Strategy),
					Met:  best.Rate >= c.want,
				})
			}
		}
	}
	if len(r.Ratios) > 0 {
		worst, best := r.Ratios[0], r.Ratios[0]
		for _, x := range r.Ratios[1:] {
			if x.Ratio < worst.Ratio {
				worst = x
			}
			if x.Ratio > best.Ratio {
				best = x
			}
		}
		ts = append(ts, Target{
			Name: fmt.Sprintf("%s: Wasm rate over native, same run (worst of %d strategy and worker pairs)", r.App, len(r.Ratios)),
			Want: fmt.Sprintf(">= %.1f", TargetTxnWasmRatio),
			Got: fmt.Sprintf("%.2f (%s, %s; best %.2f, %s)",
				worst.Ratio, worst.Strategy, workersText(worst.Workers), best.Ratio, best.Strategy),
			Met: worst.Ratio >= TargetTxnWasmRatio,
		})
	}
	if r.App == workload.GrepSum && r.Knobs["acyclic"] == "true" {
		for _, logic := range []TxnLogic{TxnWasm, TxnNative} {
			if t, ok := r.speedupTarget(logic); ok {
				ts = append(ts, t)
			}
		}
	}
	if r.App == workload.StreamingLedger {
		ts = append(ts, r.keyTargets()...)
	}
	ts = append(ts, r.pipelineTargets()...)
	return ts
}

// keyTargets checks TargetTxnKeys10 and TargetTxnKeys100 on the sweep's
// sizes that are 10 and 100 times the first, worst of its strategy,
// worker and logic combinations.
func (r *TxnReport) keyTargets() []Target {
	var ts []Target
	for _, c := range []struct {
		times int
		want  float64
	}{{10, TargetTxnKeys10}, {100, TargetTxnKeys100}} {
		var worst, best *TxnKeyRatio
		n := 0
		for i := range r.KeySweep {
			x := &r.KeySweep[i]
			if x.Keys != c.times*x.FromKeys {
				continue
			}
			n++
			if worst == nil || x.Ratio < worst.Ratio {
				worst = x
			}
			if best == nil || x.Ratio > best.Ratio {
				best = x
			}
		}
		if worst == nil {
			continue
		}
		ts = append(ts, Target{
			Name: fmt.Sprintf("sl: rate with %dx the keys (%s) over %s keys, same run (worst of %d)",
				c.times, thousands(float64(worst.Keys)), thousands(float64(worst.FromKeys)), n),
			Want: fmt.Sprintf(">= %.1f", c.want),
			Got: fmt.Sprintf("%.2f (%s, %s, %s; best %.2f, %s %s)", worst.Ratio, worst.Strategy, workersText(worst.Workers), worst.Logic,
				best.Ratio, best.Strategy, best.Logic),
			Met: worst.Ratio >= c.want,
		})
	}
	return ts
}

// speedupTarget checks TargetTxnSpeedup on the strategy whose runs in
// logic have the best 2-worker rate; false when no strategy ran in logic
// with 1 and 2 workers.
func (r *TxnReport) speedupTarget(logic TxnLogic) (Target, bool) {
	rate := func(s string, w int) float64 {
		for _, x := range r.Runs {
			if x.Strategy == s && x.Workers == w && x.Logic == logic {
				return x.Rate
			}
		}
		return 0
	}
	var best *TxnRun
	for i := range r.Runs {
		x := &r.Runs[i]
		if x.Logic == logic && x.Workers == 2 && rate(x.Strategy, 1) > 0 && (best == nil || x.Rate > best.Rate) {
			best = x
		}
	}
	if best == nil {
		return Target{}, false
	}
	sp := best.Rate / rate(best.Strategy, 1)
	return Target{
		Name: fmt.Sprintf("GrepSum without cycles: 2 workers over 1, %s, strategy with the best 2-worker rate", logic),
		Want: fmt.Sprintf(">= %.1fx", TargetTxnSpeedup),
		Got:  fmt.Sprintf("%.2fx (%s)", sp, best.Strategy),
		Met:  sp >= TargetTxnSpeedup,
	}, true
}

// WriteJSON writes the report as indented JSON.
func (r *TxnReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable prints the report as aligned tables with units: one row per
// strategy, worker count and logic; the Wasm/native ratios and the
// speedups when they apply; the targets.
func (r *TxnReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	writeHeader(&b, fmt.Sprintf("Sluice transactional benchmark: %s (%s)", r.Title, r.App), r.Date, r.Quick, r.Machine, r.LoadAfter)
	names, _ := workload.AppKnobs(r.App)
	var knobs []string
	for _, n := range names {
		knobs = append(knobs, n+"="+r.Knobs[n])
	}
	fmt.Fprintf(&b, "workload: %s\n", strings.Join(knobs, " "))
	warm := ""
	if r.WarmupBatches > 0 {
		warm = ", the first not timed (warm-up)"
		if r.WarmupBatches > 1 {
			warm = fmt.Sprintf(", the first %d not timed (warm-up)", r.WarmupBatches)
		}
	}
	fmt.Fprintf(&b, "runs: %s events each in batches of %s%s; lanes interleaved batch by batch\n",
		thousands(float64(r.Events)), thousands(float64(r.Punctuation)), warm)
	if r.CallTimeoutSeconds > 0 {
		fmt.Fprintf(&b, "Wasm: the plugin on wazero with the default call timeout (%s), one instance per worker\n",
			time.Duration(r.CallTimeoutSeconds*float64(time.Second)))
	}
	fmt.Fprintf(&b, "state: %s\n", r.Store)
	fmt.Fprintf(&b, "checked: every run's final state, outputs and commits equal those of %s: state %s, outputs %s, %s committed, %s aborted\n",
		r.Oracle, r.StateHash, r.OutputHash, thousands(float64(r.Committed)), thousands(float64(r.Aborted)))

	sweep := r.sweep()
	if sweep {
		fmt.Fprintf(&b, "key spaces: %s keys a table, interleaved batch by batch, each checked against its own oracle\n", r.keySizes())
	}
	if r.MaxRSSBytes > 0 {
		fmt.Fprintf(&b, "memory: peak resident %s MiB (the whole process: every lane's store, the plugin's instances)\n", thousands(float64(r.MaxRSSBytes)/(1<<20)))
	}

	fmt.Fprintln(&b)
	tw := table(&b)
	keysCol := func(x TxnRun) string {
		if !sweep {
			return ""
		}
		return thousands(float64(x.Keys)) + "\t"
	}
	keysHead := ""
	if sweep {
		keysHead = "keys\t"
	}
	fmt.Fprintf(tw, "strategy\tworkers\tlogic\t%sevents/s\tlatency mean\tlatency p99\tplan\texplore\tuseful\tabort\tfinish\top plan+post\tapply\tcommitted\taborted\t\n", keysHead)
	for _, x := range r.Runs {
		per := func(s float64) string {
			if x.Events == 0 {
				return "-"
			}
			return fmt.Sprintf("%.0f", s*1e9/float64(x.Events))
		}
		bd := x.Breakdown
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s%s\t%.2f ms\t%.2f ms\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			x.Strategy, x.Workers, x.Logic, keysCol(x), thousands(x.Rate), x.LatencyMeanMs, x.LatencyP99Ms,
			per(bd.Plan), per(bd.Explore), per(bd.Useful), per(bd.Abort), per(bd.Finish), per(bd.Guest), per(bd.Apply),
			thousands(float64(x.Committed)), thousands(float64(x.Aborted)))
	}
	tw.Flush()
	fmt.Fprintln(&b, "latency: an event's is its batch's processing time (plan, schedule, post), not the wait for the batch to fill")
	fmt.Fprintln(&b, "breakdown, plan to apply: ns per event; plan, finish, op plan+post and apply are wall time, explore, useful and abort")
	fmt.Fprintln(&b, "  worker time summed over the workers; apply (the change set into the store) is not part of events/s")

	if r.Dynamic != nil {
		r.writeDynamic(&b)
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintln(&b, "\nWasm / native, same run, interleaved batch by batch")
		tw := table(&b)
		fmt.Fprintf(tw, "strategy\tworkers\t%sWasm\tnative\tWasm / native\t\n", keysHead)
		for _, x := range r.Ratios {
			fmt.Fprintf(tw, "%s\t%d\t%s%s events/s\t%s events/s\t%.2f\t\n",
				x.Strategy, x.Workers, keysCol(TxnRun{Keys: x.Keys}),
				thousands(r.rate(x.Strategy, x.Workers, TxnWasm, x.Keys)), thousands(r.rate(x.Strategy, x.Workers, TxnNative, x.Keys)), x.Ratio)
		}
		tw.Flush()
	}
	if len(r.Speedups) > 0 {
		s0 := r.Speedups[0]
		fmt.Fprintf(&b, "\nSpeedup, %s over %d, same run\n", workersText(s0.To), s0.From)
		tw := table(&b)
		fmt.Fprintf(tw, "strategy\tlogic\t%s%s\t%s\tspeedup\t\n", keysHead, workersText(s0.From), workersText(s0.To))
		for _, x := range r.Speedups {
			fmt.Fprintf(tw, "%s\t%s\t%s%s events/s\t%s events/s\t%.2fx\t\n",
				x.Strategy, x.Logic, keysCol(TxnRun{Keys: x.Keys}),
				thousands(r.rate(x.Strategy, x.From, x.Logic, x.Keys)), thousands(r.rate(x.Strategy, x.To, x.Logic, x.Keys)), x.Speedup)
		}
		tw.Flush()
	}
	if len(r.KeySweep) > 0 {
		k0 := r.KeySweep[0].FromKeys
		fmt.Fprintf(&b, "\nKey-space sweep, rate over the rate with %s keys, same run (the breakdown per size is in the table above)\n", thousands(float64(k0)))
		tw := table(&b)
		fmt.Fprintf(tw, "strategy\tworkers\tlogic\t%s keys\tkeys\tevents/s\tratio\t\n", thousands(float64(k0)))
		for _, x := range r.KeySweep {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s events/s\t%s\t%s events/s\t%.2f\t\n",
				x.Strategy, x.Workers, x.Logic, thousands(r.rate(x.Strategy, x.Workers, x.Logic, x.FromKeys)),
				thousands(float64(x.Keys)), thousands(x.Rate), x.Ratio)
		}
		tw.Flush()
	}
	if len(r.Pipeline) > 0 {
		r.writePipeline(&b)
	}
	writeTargets(&b, r.Targets)
	_, err := io.WriteString(w, b.String())
	return err
}

// writePipeline prints the runs through a real job beside the in-memory
// runs of the same strategy, workers and logic.
func (r *TxnReport) writePipeline(b *strings.Builder) {
	commits := commitCadence(r.Pipeline[0].CommitInterval)
	fmt.Fprintf(b, "\nThrough a pipeline: generator -> operator -> discarding sink, %s to Pebble (no fsync, memtable %s MiB);\n",
		commits, thousands(float64(r.Pipeline[0].MemTableSize)/(1<<20)))
	fmt.Fprintln(b, "run after the strategy's in-memory runs; tables read back from Pebble equal the oracle's")
	tw := table(b)
	fmt.Fprintln(tw, "strategy\tworkers\tlogic\tpipeline\tin memory\tpipeline / in memory\tbatches\tcommits\tcommit\tentries/commit\toutputs\t")
	for _, x := range r.Pipeline {
		perCommit, commit := "-", "-"
		if x.Commits > 0 {
			perCommit = thousands(float64(x.CommitEntries) / float64(x.Commits))
			commit = fmt.Sprintf("%.2f ms/commit", 1e3*x.CommitSeconds/float64(x.Commits))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s events/s\t%s events/s\t%.2fx\t%d\t%d\t%s\t%s\t%s\t\n",
			x.Strategy, x.Workers, x.Logic, thousands(x.Rate), thousands(x.InMemoryRate), x.Ratio, x.Batches, x.Commits, commit, perCommit, thousands(float64(x.Outputs)))
	}
	tw.Flush()
	fmt.Fprintln(b, "pipeline rate: the events after the first batch over the time from the first batch's outputs to the last commit;")
	fmt.Fprintln(b, "  commit: Pebble's write of the batches since the last commit, which overlaps the next batch's processing")
}

// sweep reports whether the runs cover several key-space sizes.
func (r *TxnReport) sweep() bool {
	return slices.ContainsFunc(r.Runs, func(x TxnRun) bool { return x.Keys != r.Runs[0].Keys })
}

// keySizes lists the runs' key-space sizes, in order: "115,200; 1,152,000".
func (r *TxnReport) keySizes() string {
	var sizes []string
	for _, x := range r.Runs {
		if k := thousands(float64(x.Keys)); !slices.Contains(sizes, k) {
			sizes = append(sizes, k)
		}
	}
	return strings.Join(sizes, "; ")
}

// rate returns the rate of the run of strategy s with w workers, logic l
// and the given keys, or 0.
func (r *TxnReport) rate(s string, w int, l TxnLogic, keys int) float64 {
	i := slices.IndexFunc(r.Runs, func(x TxnRun) bool { return x.Strategy == s && x.Workers == w && x.Logic == l && x.Keys == keys })
	if i < 0 {
		return 0
	}
	return r.Runs[i].Rate
}
