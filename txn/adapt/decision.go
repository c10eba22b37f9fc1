package adapt

import (
	"encoding/json"
	"fmt"
	"time"
)

// Decision is what the model chose after a batch, for the next one.
type Decision struct {
	// Strategy is the strategy of the next batch; Previous the one that
	// ran the batch measured.
	Strategy string `json:"strategy"`
	Previous string `json:"previous"`
	// Rule is the rules' choice; Reasons says why, one line per dimension.
	Rule string `json:"rule"`
	// Learned: measurements overrode the rules' choice.
	Learned bool `json:"learned,omitempty"`
	// Held: hysteresis kept the previous strategy although the choice
	// differs (Patience not reached).
	Held bool `json:"held,omitempty"`
	// PredictedRate is the throughput the model expects of the next batch
	// (events per second): the mean it measured of that strategy in this
	// regime, else that of the strategy just run, else the batch's own.
	PredictedRate float64 `json:"predicted_rate"`
	// Spread is the standard deviation of one batch's rate around
	// PredictedRate (events per second): the dispersion measured of that
	// strategy in this regime, shrunk towards the regime's pooled one (at
	// least Config.Spread for a strategy measured once).
	Spread float64 `json:"spread,omitempty"`
	// Samples is the number of batches PredictedRate rests on (0: none of
	// that strategy in this regime).
	Samples int `json:"samples,omitempty"`
	// Over and Z, when the choice is learned: the strategy it was measured
	// against (the rules' choice, or the learned strategy it replaced) and
	// the difference of their mean rates in standard errors of that
	// difference (Config.Significance is the least that switches).
	Over string  `json:"over,omitempty"`
	Z    float64 `json:"z,omitempty"`
	// Mispredicted: the batch measured ran right after a switch and came
	// out slower than predicted by more than Tolerance and by more than
	// its dispersion allows.
	Mispredicted bool `json:"mispredicted,omitempty"`
	// Probe: the next batch runs a neighbour of the current strategy to
	// measure it (ProbeEvery).
	Probe bool `json:"probe,omitempty"`
	// DecideNs is the time deciding took, in nanoseconds.
	DecideNs int64 `json:"decide_ns"`

	// why holds what Reasons formats: deciding formats nothing. The
	// fourth is set when the serial rule fired.
	why [4]reason
	// decoded holds the reasons of a Decision read from JSON.
	decoded []string
}

// Reasons returns why the rules chose Rule: one line per dimension
// (exploration, unit, abort handling), naming the rule that fired and the
// measurements and thresholds it compared, and a fourth when the serial
// rule fired. Nil for an empty batch.
func (d Decision) Reasons() []string {
	if d.decoded != nil {
		return d.decoded
	}
	var out []string
	for _, r := range d.why {
		if r.kind != 0 {
			out = append(out, r.String())
		}
	}
	return out
}

// MarshalJSON writes the Decision with its reasons.
func (d Decision) MarshalJSON() ([]byte, error) {
	type plain Decision // without the method
	return json.Marshal(struct {
		plain
		Reasons []string `json:"reasons,omitempty"`
	}{plain(d), d.Reasons()})
}

// UnmarshalJSON reads a Decision that MarshalJSON wrote, its reasons
// included: a client of the API decodes what the host encoded.
func (d *Decision) UnmarshalJSON(b []byte) error {
	type plain Decision // without the method
	var v struct {
		plain
		Reasons []string `json:"reasons,omitempty"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = Decision(v.plain)
	d.decoded = v.Reasons
	return nil
}

// Record is one batch: what it measured and what the model decided after it.
type Record struct {
	Measurement
	Decision Decision `json:"decision"`
}

// Stats counts what the model did since it was made.
type Stats struct {
	// Batches is the number of non-empty batches observed.
	Batches uint64 `json:"batches"`
	// Switches counts the batches after which the strategy changed
	// (probes and the returns from them included).
	Switches uint64 `json:"switches"`
	// Learned counts the decisions that measurements took over the rules.
	Learned uint64 `json:"learned"`
	// Mispredictions counts the batches after a switch that came out
	// slower than predicted (Decision.Mispredicted).
	Mispredictions uint64 `json:"mispredictions"`
	// Probes counts the probe batches; ProbesWon those whose strategy was
	// kept.
	Probes    uint64 `json:"probes"`
	ProbesWon uint64 `json:"probes_won"`
	// Analysed counts the batches run with NeedsCycles set.
	Analysed uint64 `json:"analysed"`
}

// reasonKind is which rule fired in one dimension.
type reasonKind uint8

const (
	_ reasonKind = iota
	whyBFS
	whyDFS
	whyNSFewDeps
	whyNSSkew
	whyOpCycles
	whyOpTemporal
	whyOpParametric
	whyChain
	whyEagerCost
	whyEagerAborts
	whyEagerNoLazy
	whyLazy
	whySerial
)

// reason is one dimension's rule and the figures it compared.
type reason struct {
	kind          reasonKind
	a, b, c, d, e float64
}

// String formats the reason.
func (r reason) String() string {
	switch r.kind {
	case whyBFS:
		return fmt.Sprintf("bfs: %.2f dependencies per operation >= %.2f and skew %.3g < %.3g", r.a, r.b, r.c, r.d)
	case whyDFS:
		return fmt.Sprintf("dfs: %.2f dependencies per operation >= %.2f and skew %.3g >= %.3g", r.a, r.b, r.c, r.d)
	case whyNSFewDeps:
		return fmt.Sprintf("ns: %.2f dependencies per operation < %.2f", r.a, r.b)
	case whyNSSkew:
		return fmt.Sprintf("ns: skew %.3g >= %.3g", r.a, r.b)
	case whyOpCycles:
		return fmt.Sprintf("op: %.3g of the chains in cycles > %.3g", r.a, r.b)
	case whyOpTemporal:
		return fmt.Sprintf("op: %.2f temporal dependencies per operation < %.2f", r.a, r.b)
	case whyOpParametric:
		return fmt.Sprintf("op: %.2f parametric dependencies per operation > %.2f", r.a, r.b)
	case whyChain:
		return fmt.Sprintf("chain: %.2f temporal >= %.2f and %.2f parametric <= %.2f per operation, %.3g of the chains in cycles", r.a, r.b, r.c, r.d, r.e)
	case whyEagerCost:
		return fmt.Sprintf("eager: an operation takes %v >= %v", time.Duration(r.a), time.Duration(r.b))
	case whyEagerAborts:
		return fmt.Sprintf("eager: %.3g of the transactions abort >= %.3g", r.a, r.b)
	case whyEagerNoLazy:
		return fmt.Sprintf("eager: %.3g of the transactions abort, an operation takes %v; lazy is off (eager_aborts 0)", r.a, time.Duration(r.b))
	case whySerial:
		return fmt.Sprintf("serial: skew %.3g >= %.3g and %.3g of the transactions abort >= %.3g", r.a, r.b, r.c, r.d)
	case whyLazy:
		return fmt.Sprintf("lazy: an operation takes %v < %v and %.3g abort < %.3g", time.Duration(r.a), time.Duration(r.b), r.c, r.d)
	}
	return "?"
}
