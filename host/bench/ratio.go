package bench

import (
	"math"
	"strconv"
)

// RateRatio compares the rates of two lanes of a dynamic run over the same
// batches: Ratio is the first lane's rate over the second's, Low and High
// bound its approximate 95% confidence interval.
//
// Both lanes ran every batch on the same events, so the ratio of their rates
// is the ratio of their summed batch times, and batch i of one lane pairs
// with batch i of the other: they ran within a moment of each other, on the
// same events. The interval is the ratio estimator's (the delta method): the
// dispersion of the pairs' residuals x_i - Ratio*y_i, where y is the first
// lane's batch time and x the second's, over the mean y, with Student's t for
// n-1 degrees of freedom. A whole run's noise on this machine is a few
// percent, as large as the differences between the strategies worth
// choosing between; the interval says which differences the run resolves.
//
// It covers the noise from batch to batch, not what persists in one lane
// over many batches: over a phase of 40 batches the adaptive lane running
// ns-op-eager and the ns-op-eager lane differed by up to 7% (13 phases of
// one run: 0.94-1.07, standard deviation 0.04), often outside the
// interval. So the interval of one phase is too narrow by about half;
// over a whole run, whose phases average those offsets out, less so.
type RateRatio struct {
	Ratio float64 `json:"ratio"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	// Batches is the number of paired batches.
	Batches int `json:"batches"`
	// NoInterval says why Low and High are unbounded, when they are.
	NoInterval string `json:"no_interval,omitempty"`
}

// noInterval is RateRatio.NoInterval with fewer than two paired batches.
const noInterval = "fewer than two paired batches: no interval"

// pairedRateRatio returns the rate of the lane with batch times a over the
// rate of the lane with batch times b, paired by index. With fewer than two
// pairs the interval is unbounded.
func pairedRateRatio(a, b []float64) RateRatio {
	n := min(len(a), len(b))
	var sa, sb float64
	for i := range n {
		sa += a[i]
		sb += b[i]
	}
	if n == 0 || sa <= 0 {
		return RateRatio{Low: math.Inf(-1), High: math.Inf(1), NoInterval: "no timed batches"}
	}
	r := sb / sa
	rr := RateRatio{Ratio: r, Low: math.Inf(-1), High: math.Inf(1), Batches: n}
	if n < 2 {
		rr.NoInterval = noInterval
		return rr
	}
	var ss float64
	for i := range n {
		e := b[i] - r*a[i]
		ss += e * e
	}
	se := math.Sqrt(ss/float64(n-1)/float64(n)) / (sa / float64(n))
	half := studentT975(n-1) * se
	rr.Low, rr.High = r-half, r+half
	return rr
}

// Verdict says what the interval resolves about the first lane against the
// second: "faster" or "slower" when the interval excludes 1, "within noise"
// when it does not.
func (r RateRatio) Verdict() string {
	switch {
	case r.Low > 1:
		return "faster"
	case r.High < 1:
		return "slower"
	}
	return "within noise"
}

// String formats the ratio and its interval, "0.97 (0.93-1.01)".
func (r RateRatio) String() string {
	if math.IsInf(r.Low, 0) || math.IsInf(r.High, 0) {
		return fmtRatio(r.Ratio) + " (no interval)"
	}
	return fmtRatio(r.Ratio) + " (" + fmtRatio(r.Low) + "-" + fmtRatio(r.High) + ")"
}

func fmtRatio(x float64) string {
	return strconv.FormatFloat(x, 'f', 3, 64)
}

// studentT975 is the 97.5th percentile of Student's t distribution with df
// degrees of freedom: the factor of a two-sided 95% interval.
func studentT975(df int) float64 {
	table := [...]float64{
		12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
	}
	switch {
	case df < 1:
		return math.Inf(1)
	case df <= len(table):
		return table[df-1]
	case df <= 40:
		return 2.021
	case df <= 60:
		return 2.000
	case df <= 120:
		return 1.980
	}
	return 1.960
}
