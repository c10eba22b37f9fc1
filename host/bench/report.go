package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The project's targets.
const (
	// TargetWasmOverheadNs is the most a record may cost in the Wasm map
	// over the same function in native Go.
	TargetWasmOverheadNs = 100
	// TargetNATSRate is the rate, in messages per second, that the NATS
	// pipeline must reach with 64-byte messages, unless it reaches
	// TargetNATSRatio.
	TargetNATSRate = 1_000_000
	// TargetNATSRatio is the fraction of raw publish -> subscribe that the
	// NATS pipeline must reach with 64-byte messages, unless it reaches
	// TargetNATSRate.
	TargetNATSRatio = 0.5
	// targetNATSSize is the message size the NATS target is about.
	targetNATSSize = 64
	// TargetDashboardRatio is the least the NATS pipeline's rate with a
	// dashboard page open may be over its rate with none (64-byte
	// messages): the page costs under 2% of throughput.
	TargetDashboardRatio = 0.98
)

// checkTargets evaluates the targets whose suites ran.
func (r *Report) checkTargets() []Target {
	var ts []Target
	if r.Wasm != nil && len(r.Wasm.Batches) > 0 {
		for _, on := range []bool{true, false} {
			worst, at := 0.0, 0
			for i, b := range r.Wasm.Batches {
				o := b.OverheadNs
				if !on {
					o = b.OverheadNoTimeoutNs
				}
				if i == 0 || o > worst {
					worst, at = o, b.Size
				}
			}
			name := "Wasm map over native Go, call timeout on (worst batch size)"
			if !on {
				name = "Wasm map over native Go, call timeout off (worst batch size)"
			}
			ts = append(ts, Target{
				Name: name,
				Want: fmt.Sprintf("<= +%d ns/record", TargetWasmOverheadNs),
				Got:  fmt.Sprintf("%+.1f ns/record (batch %d)", worst, at),
				Met:  worst <= TargetWasmOverheadNs,
			})
		}
	}
	if r.NATS != nil {
		for _, s := range r.NATS.Sizes {
			if s.Size != targetNATSSize {
				continue
			}
			name := fmt.Sprintf("NATS -> Wasm map -> NATS, %d-byte messages", s.Size)
			if !r.NATS.CallTimeout {
				name += " (call timeout OFF)"
			}
			ts = append(ts, Target{
				Name: name,
				Want: fmt.Sprintf(">= %s msgs/s or >= %.1f x raw", thousands(TargetNATSRate), TargetNATSRatio),
				Got:  fmt.Sprintf("%s msgs/s, %.2f x raw", thousands(s.PipelineRate), s.Ratio),
				Met:  s.PipelineRate >= TargetNATSRate || s.Ratio >= TargetNATSRatio,
			})
			if pg := s.Page; pg != nil {
				ts = append(ts, Target{
					Name: fmt.Sprintf("Dashboard: NATS pipeline with a page open over closed, %d-byte messages", s.Size),
					Want: fmt.Sprintf(">= %.2f", TargetDashboardRatio),
					Got:  fmt.Sprintf("%.3f (%s over %s msgs/s)", pg.Ratio, thousands(pg.OpenRate), thousands(pg.ClosedRate)),
					Met:  pg.Ratio >= TargetDashboardRatio,
				})
			}
		}
	}
	return ts
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable prints the report as aligned tables with units.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	writeHeader(&b, "Sluice benchmarks", r.Date, r.Quick, r.Machine, r.LoadAfter)
	if r.Engine != "" {
		fmt.Fprintf(&b, "WebAssembly engine: %s\n", r.Engine)
	}

	if x := r.Wasm; x != nil {
		fmt.Fprintf(&b, "\nWasm call path: batched map (upper), %d-byte records, median of %d rounds of %.0f ms\n",
			x.RecordSize, x.Rounds, x.RoundSeconds*1e3)
		tw := table(&b)
		fmt.Fprintln(tw, "batch\tnative Go\tWasm, timeout on\tWasm, timeout off\tWasm - native, on\tWasm - native, off\t")
		for _, bt := range x.Batches {
			fmt.Fprintf(tw, "%d\t%.1f ns/rec\t%.1f ns/rec\t%.1f ns/rec\t%+.1f ns/rec\t%+.1f ns/rec\t\n",
				bt.Size, bt.NativeNs, bt.WasmNs, bt.WasmNoTimeoutNs, bt.OverheadNs, bt.OverheadNoTimeoutNs)
		}
		tw.Flush()
	}
	if x := r.NATS; x != nil {
		fmt.Fprintf(&b, "\nNATS -> Wasm map -> NATS, embedded server: %s messages per round, window %s, %d workers, batches of %d, %s, median of %d rounds\n",
			thousands(float64(x.Messages)), thousands(float64(x.Window)), x.Parallelism, x.BatchSize, timeoutWords(x.CallTimeout), x.Rounds)
		tw := table(&b)
		fmt.Fprintln(tw, "message\traw pub -> sub\trelay\tpipeline\trelay / raw\tpipeline / raw\t")
		for _, s := range x.Sizes {
			fmt.Fprintf(tw, "%s\t%s msgs/s\t%s msgs/s\t%s msgs/s\t%.2f\t%.2f\t\n", byteSize(s.Size),
				thousands(s.RawRate), thousands(s.RelayRate), thousands(s.PipelineRate), s.RelayRatio, s.Ratio)
		}
		tw.Flush()
		fmt.Fprintln(&b, "relay: a subscription that publishes each message again as it arrives, the pipeline's two crossings of the server with nothing between them")
		if len(x.Sizes) > 0 && x.Sizes[0].Page != nil {
			fmt.Fprintln(&b, "\nDashboard: the pipeline with the job's event stream served on 127.0.0.1, a page open (a client decoding each event) and closed, rounds interleaved, medians")
			tw := table(&b)
			fmt.Fprintln(tw, "message	page closed	page open	open / closed	events read	")
			for _, s := range x.Sizes {
				if pg := s.Page; pg != nil {
					fmt.Fprintf(tw, "%s\t%s msgs/s\t%s msgs/s\t%.3f\t%d\t\n", byteSize(s.Size),
						thousands(pg.ClosedRate), thousands(pg.OpenRate), pg.Ratio, pg.Events)
				}
			}
			tw.Flush()
		}
	}
	if x := r.Keyed; x != nil {
		fmt.Fprintf(&b, "\nKeyed counting with Pebble commits: generator -> wordcount -> discard, %s records, %s keys, %d workers, batches of %d, %s, median of %d rounds\n",
			thousands(float64(x.Records)), thousands(float64(x.Keys)), x.Parallelism, x.BatchSize, timeoutWords(x.CallTimeout), x.Rounds)
		tw := table(&b)
		fmt.Fprintln(tw, "throughput\tcommits\tentries / commit\tcommit\tcommit share of run\t")
		fmt.Fprintf(tw, "%s records/s\t%d\t%.0f\t%.1f µs\t%.1f %%\t\n",
			thousands(x.Rate), x.Commits, x.EntriesPerCommit, x.CommitUs, 100*x.CommitShare)
		tw.Flush()
	}
	writeTargets(&b, r.Targets)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHeader prints a report's title line, machine and load average.
func writeHeader(b *strings.Builder, title string, date time.Time, quick bool, m Machine, loadAfter string) {
	q := ""
	if quick {
		q = " (quick: small sizes, figures indicative only)"
	}
	fmt.Fprintf(b, "%s, %s%s\n", title, date.Format("2006-01-02 15:04 MST"), q)
	fmt.Fprintf(b, "machine: %d CPUs, GOMAXPROCS %d, %s, %s %s/%s\n",
		m.NumCPU, m.GOMAXPROCS, orUnknown(m.CPUModel, "CPU model unknown"), m.GoVersion, m.OS, m.Arch)
	fmt.Fprintf(b, "load average (1, 5, 15 min): before %s, after %s\n", orUnknown(m.Load, "unknown"), orUnknown(loadAfter, "unknown"))
}

// writeTargets prints the targets checked, if any.
func writeTargets(b *strings.Builder, targets []Target) {
	if len(targets) == 0 {
		return
	}
	fmt.Fprintln(b, "\nTargets")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "target\twant\tmeasured\tresult")
	for _, t := range targets {
		res := "met"
		switch {
		case t.Void != "":
			res = "not checked: " + t.Void
		case !t.Met:
			res = "NOT MET"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Want, t.Got, res)
	}
	tw.Flush()
}

func timeoutWords(on bool) string {
	if on {
		return "default call timeout"
	}
	return "call timeout OFF"

}

// table returns a tabwriter that right-aligns figures.
func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

func orUnknown(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// thousands formats x rounded to an integer with comma separators.
func thousands(x float64) string {
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// byteSize formats a message size: 64 B, 1 KiB.
func byteSize(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// commitCadence says how a run's job committed, given its commit interval
// as a duration's text: every batch ("" or "0s"), or at most every
// interval.
func commitCadence(interval string) string {
	if interval == "" || interval == "0s" {
		return "every batch committed"
	}
	return "committed at most every " + interval + " while batches come full"
}
