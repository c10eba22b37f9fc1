package adapt

import (
	"time"

	"github.com/sluicehq/sluice/txn"
)

// Thresholds are the rules' thresholds. Dependencies are counted per
// operation of the batch, so that they do not depend on the punctuation.
type Thresholds struct {
	// StructuredDeps: structured exploration needs at least this many
	// dependencies (temporal and parametric edges) per operation...
	StructuredDeps float64 `json:"structured_deps" yaml:"structured_deps"`
	// StructuredSkew: ...and a skew below this.
	StructuredSkew float64 `json:"structured_skew" yaml:"structured_skew"`
	// DFSSkew: a structured batch with a skew at or above this is explored
	// depth first (no barrier per level), below it breadth first.
	DFSSkew float64 `json:"dfs_skew" yaml:"dfs_skew"`
	// ChainTemporal: chain units need at least this many temporal edges per
	// operation (chains long enough to be worth one unit)...
	ChainTemporal float64 `json:"chain_temporal" yaml:"chain_temporal"`
	// ChainParametric: ...at most this many parametric edges per operation
	// (a chain waits on the chains it reads)...
	ChainParametric float64 `json:"chain_parametric" yaml:"chain_parametric"`
	// ChainCyclic: ...and at most this share of the chains in cycles.
	ChainCyclic float64 `json:"chain_cyclic" yaml:"chain_cyclic"`
	// EagerOpCost: eager abort handling when an operation's function takes
	// at least this long on average...
	EagerOpCost time.Duration `json:"eager_op_cost" yaml:"eager_op_cost"`
	// EagerAborts: ...or when at least this share of the transactions
	// abort; lazy otherwise. 0 turns the lazy rule off: eager always.
	EagerAborts float64 `json:"eager_aborts" yaml:"eager_aborts"`
	// SerialSkew and SerialAborts: a batch with a skew of at least
	// SerialSkew and at least SerialAborts of its transactions aborting
	// runs serially. A hot key then serialises much of the batch anyway,
	// and its aborts cascade down the key's chain, each cascade costing
	// the parallel strategies a pass, while one worker in timestamp order
	// runs every transaction once and builds no TPG.
	SerialSkew   float64 `json:"serial_skew" yaml:"serial_skew"`
	SerialAborts float64 `json:"serial_aborts" yaml:"serial_aborts"`
}

// DefaultThresholds returns the thresholds calibrated on Sluice's own
// costs: the per-phase tables of `sluice bench txn --dynamic morphstream`
// (BENCHMARKS.md, "Adaptive scheduling"; three runs of Streaming Ledger and
// two of GrepSum, WebAssembly, 2 workers), and for the serial rule the
// hot-key runs of "Adaptive scheduling, with paired intervals". Against them the rules choose
// ns-op-eager wherever nothing measurably beats it, which is almost
// everywhere: it was the best static strategy, or within the noise of one
// phase (about 8% for 20 batches), in every phase of those runs. Ratios
// below are each strategy's phase rate over ns-op-eager's, averaged over
// the runs.
//
//   - StructuredDeps 1.0 and StructuredSkew 0.01: breadth first only on
//     dense, flat batches. Where the skew reached 0.04 (SL phases 3, 4,
//     10, 11) bfs-op-eager ran at 1.03, 0.95, 0.95 and 0.90, and
//     structured chains at 0.77-0.91; on SL's sparse phases (0.13-0.3
//     dependencies per operation) it was 0.94-1.05, nothing to gain. Only
//     GrepSum's phases with 1.3-1.4 dependencies per operation and a skew
//     near 0.001 (3 reads, cyclic reads, transactions of 4) kept it level
//     or ahead: 1.05, 1.01, 0.99.
//   - DFSSkew 0.01, equal to StructuredSkew: depth first has no range.
//     It never beat the best of the other two: dfs-op-eager ran at 0.80
//     and 0.89 of ns-op-eager in SL's skewed phases 4 and 10, 0.87 in
//     GrepSum's, and 0.95-0.98 over whole runs. It stays reachable by
//     configuration and by probes.
//   - ChainTemporal 1.0: chain units are off (an operation has at most
//     one temporal predecessor, so fewer than one temporal dependency per
//     operation is all a batch can have); ChainParametric 0.1 and
//     ChainCyclic 0.05 apply when ChainTemporal is lowered (0.5 gives
//     MorphStream's case: long chains that read little of other chains).
//     Chain units never measurably won. Where the earlier defaults (0.2
//     and 0.3) chose them (SL phase 3) they lost: bfs-chain-eager 0.91,
//     ns-chain-eager 0.99; at high skew ns-chain-eager ran at 0.89-0.91,
//     over whole runs 0.97-0.98 on SL and level on GrepSum. In
//     MorphStream's own case, GrepSum with single-key operations (no
//     parametric dependency; 0.34-0.84 temporal ones per operation, skew
//     0.003-0.6; one run of 8 batches a phase on a loaded machine),
//     ns-chain-eager ran at 0.88, 0.98 and 0.82 of ns-op-eager, the best
//     chain strategy at 0.88-1.05. Probes still measure the other unit.
//   - EagerAborts 0: the lazy rule is off, eager always. Where nothing
//     aborts lazy gained nothing measurable (ns-op-lazy at 0.97-1.02 on SL,
//     1.02 on average on GrepSum, within the noise), and wherever
//     transactions abort it lost: 0.72-0.75 on SL (4-48% aborts),
//     0.87-0.95 on GrepSum, 0.54-0.60 with heavy operations; the rules
//     would also run the first batch of an abort phase lazy, as they see
//     the aborts only after it. Probes still measure the lazy neighbour
//     where nothing aborts.
//   - EagerOpCost 10 µs: with the lazy rule turned on (EagerAborts above
//     0), operations this heavy are handled eagerly whatever the aborts:
//     each lazy re-run of a batch costs its operations again; in the
//     heavy phases measured (11-12 µs an operation, 4-5% aborts) lazy ran
//     at 0.54-0.60 of eager.
//   - SerialSkew 0.3, SerialAborts 0.5: a hot key with most transactions
//     aborting, the one regime measured where a strategy beat ns-op-eager
//     beyond the noise. With the band, a batch enters serial from a skew
//     of 0.36 and 60% aborts and leaves it below 0.24 or 40%. Streaming
//     Ledger at Zipf 2.0 with 95% transfers (skew 0.44 on 2 workers: the
//     hottest key's chain holds 22% of the operations) ran serial at 1.09x ns-op-eager with 64% of the transactions
//     aborting and 1.28x with 82%; at Zipf 1.6 (skew 0.36, 47-56% aborts)
//     at 1.03x, a tie. Below those serial lost: 0.91-0.93 on SL phase 11
//     (skew 0.18, 48% aborts), 0.87-0.90 on GrepSum phase 9 (skew 0.6,
//     30% aborts).
func DefaultThresholds() Thresholds {
	return Thresholds{
		StructuredDeps:  1.0,
		StructuredSkew:  0.01,
		DFSSkew:         0.01,
		ChainTemporal:   1.0,
		ChainParametric: 0.1,
		ChainCyclic:     0.05,
		EagerOpCost:     10 * time.Microsecond,
		EagerAborts:     0,
		SerialSkew:      0.3,
		SerialAborts:    0.5,
	}
}

// rules applies the thresholds to a measurement: the rules' strategy and
// one reason per dimension. Each threshold is moved by Band towards the
// side the current strategy cur is on, so that a measurement must cross it
// clearly to change the choice. Logical dependencies are left out of the
// structure rule: Sluice's TPG does not order the operations of a
// transaction (abort atomicity is a per-transaction status), so they add no
// level. rules also records whether the unit rule needs the cycles between
// chains counted in the next batch (md.cycles).
func (md *Model) rules(ms *Measurement, cur txn.Strategy) (txn.Strategy, [4]reason) {
	th := &md.cfg.Thresholds
	band := md.cfg.Band
	// at returns the threshold t as seen from the current strategy: lower
	// when the current strategy is on the side of x >= t, higher when not.
	at := func(t float64, onHighSide bool) float64 {
		if onHighSide {
			return t * (1 - band)
		}
		return t * (1 + band)
	}
	st := txn.Strategy{Kind: txn.TPG}
	var why [4]reason

	deps := ms.perOp(ms.Temporal + ms.Parametric)
	tDeps := at(th.StructuredDeps, cur.Explore != txn.NS)
	tSkew := at(th.StructuredSkew, cur.Explore == txn.NS)
	tDFS := at(th.DFSSkew, cur.Explore == txn.DFS)
	switch {
	case deps < tDeps:
		st.Explore = txn.NS
		why[0] = reason{kind: whyNSFewDeps, a: deps, b: tDeps}
	case ms.Skew >= tSkew:
		st.Explore = txn.NS
		why[0] = reason{kind: whyNSSkew, a: ms.Skew, b: tSkew}
	case ms.Skew >= tDFS:
		st.Explore = txn.DFS
		why[0] = reason{kind: whyDFS, a: deps, b: tDeps, c: ms.Skew, d: tDFS}
	default:
		st.Explore = txn.BFS
		why[0] = reason{kind: whyBFS, a: deps, b: tDeps, c: ms.Skew, d: tDFS}
	}

	td, pd, cyc := ms.perOp(ms.Temporal), ms.perOp(ms.Parametric), ms.cyclicShare()
	tCyc := at(th.ChainCyclic, cur.Unit == txn.OpUnit)
	tTD := at(th.ChainTemporal, cur.Unit == txn.ChainUnit)
	tPD := at(th.ChainParametric, cur.Unit == txn.OpUnit)
	// The cycles decide the unit only where the other two conditions
	// point to chains.
	md.cycles = td >= tTD && pd <= tPD
	switch {
	case cyc > tCyc:
		st.Unit = txn.OpUnit
		why[1] = reason{kind: whyOpCycles, a: cyc, b: tCyc}
	case td < tTD:
		st.Unit = txn.OpUnit
		why[1] = reason{kind: whyOpTemporal, a: td, b: tTD}
	case pd > tPD:
		st.Unit = txn.OpUnit
		why[1] = reason{kind: whyOpParametric, a: pd, b: tPD}
	default:
		st.Unit = txn.ChainUnit
		why[1] = reason{kind: whyChain, a: td, b: tTD, c: pd, d: tPD, e: cyc}
	}

	cost := ms.OpCostNs
	tCost := at(float64(th.EagerOpCost), cur.Abort == txn.Eager)
	tAborts := at(th.EagerAborts, cur.Abort == txn.Eager)
	switch {
	case cost >= tCost:
		st.Abort = txn.Eager
		why[2] = reason{kind: whyEagerCost, a: cost, b: tCost}
	case th.EagerAborts == 0:
		st.Abort = txn.Eager
		why[2] = reason{kind: whyEagerNoLazy, a: ms.AbortRatio, b: cost}
	case ms.AbortRatio >= tAborts:
		st.Abort = txn.Eager
		why[2] = reason{kind: whyEagerAborts, a: ms.AbortRatio, b: tAborts}
	default:
		st.Abort = txn.Lazy
		why[2] = reason{kind: whyLazy, a: cost, b: tCost, c: ms.AbortRatio, d: tAborts}
	}

	tSS := at(th.SerialSkew, cur.Kind == txn.Serial)
	tSA := at(th.SerialAborts, cur.Kind == txn.Serial)
	if ms.Skew >= tSS && ms.AbortRatio >= tSA {
		why[3] = reason{kind: whySerial, a: ms.Skew, b: tSS, c: ms.AbortRatio, d: tSA}
		return txn.Strategy{Kind: txn.Serial}, why
	}
	return st, why
}
