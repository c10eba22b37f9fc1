package txn

import (
	"fmt"
	"strings"
)

// Exploration is how workers walk the TPG.
type Exploration uint8

// Explorations.
const (
	// BFS explores level by level with a barrier between levels.
	BFS Exploration = iota
	// DFS takes units in dependency-depth order without barriers, each worker
	// waiting on the parents of the unit it took.
	DFS
	// NS is non-structured: a unit becomes ready when its last parent signals.
	NS
)

// Unit is the scheduling unit.
type Unit uint8

// Units.
const (
	// OpUnit schedules one operation at a time.
	OpUnit Unit = iota
	// ChainUnit schedules a per-key operation chain, run in order by one worker.
	ChainUnit
)

// AbortMode is how aborts are handled.
type AbortMode uint8

// Abort modes.
const (
	// Eager publishes an abort the moment it happens and re-executes only
	// operations whose inputs changed.
	Eager AbortMode = iota
	// Lazy runs the whole batch, then marks the aborted transactions, rolls
	// back to the batch start and re-executes everything, until no new abort
	// appears.
	Lazy
)

// Kind is the family of a strategy.
type Kind uint8

// Kinds.
const (
	// TPG is MorphStream's scheduler: Exploration x Unit x AbortMode.
	TPG Kind = iota
	// Serial runs transactions one by one in timestamp order: the oracle.
	Serial
	// TStream is the TStream-like baseline: non-adaptive per-key chains
	// (never split at non-deterministic barriers), non-structured, lazy.
	TStream
	// SStore is the S-Store-like baseline: partition locks in timestamp order.
	SStore
	// Adaptive is not a way to run a batch but a choice made per batch: a
	// decision model (package txn/adapt) picks one TPG strategy for each
	// batch from what the previous batches measured. Scheduler.Run refuses
	// it; the caller that owns the model resolves it first.
	Adaptive
)

// AdaptiveName is the name of the adaptive strategy.
const AdaptiveName = "adaptive"

// Strategy selects how a batch is executed. Build one with ParseStrategy.
type Strategy struct {
	Kind    Kind
	Explore Exploration
	Unit    Unit
	Abort   AbortMode
}

var (
	exploreNames = [...]string{BFS: "bfs", DFS: "dfs", NS: "ns"}
	unitNames    = [...]string{OpUnit: "op", ChainUnit: "chain"}
	abortNames   = [...]string{Eager: "eager", Lazy: "lazy"}
)

// String returns the strategy's name, as ParseStrategy accepts it.
func (s Strategy) String() string {
	switch s.Kind {
	case Serial:
		return "serial"
	case TStream:
		return "tstream"
	case SStore:
		return "sstore"
	case Adaptive:
		return AdaptiveName
	}
	return exploreNames[s.Explore] + "-" + unitNames[s.Unit] + "-" + abortNames[s.Abort]
}

// ParseStrategy parses a name such as "ns-chain-lazy" (exploration bfs|dfs|ns,
// unit op|chain, abort eager|lazy) or one of the baselines "serial",
// "tstream", "sstore", or "adaptive" (AdaptiveName).
func ParseStrategy(name string) (Strategy, error) {
	switch name {
	case AdaptiveName:
		return Strategy{Kind: Adaptive}, nil
	case "serial":
		return Strategy{Kind: Serial}, nil
	case "tstream":
		return Strategy{Kind: TStream, Explore: NS, Unit: ChainUnit, Abort: Lazy}, nil
	case "sstore":
		return Strategy{Kind: SStore}, nil
	}
	parts := strings.Split(name, "-")
	if len(parts) == 3 {
		e, ok1 := index(exploreNames[:], parts[0])
		u, ok2 := index(unitNames[:], parts[1])
		a, ok3 := index(abortNames[:], parts[2])
		if ok1 && ok2 && ok3 {
			return Strategy{Kind: TPG, Explore: Exploration(e), Unit: Unit(u), Abort: AbortMode(a)}, nil
		}
	}
	return Strategy{}, fmt.Errorf("%w: %q (want %s, or one of %s)", ErrUnknownStrategy, name, AdaptiveName, strings.Join(StrategyNames(), ", "))
}

// StrategyNames lists the name of every strategy that runs a batch, TPG
// strategies first; it leaves out AdaptiveName, which chooses among the
// TPG strategies (TPGStrategies).
func StrategyNames() []string {
	var names []string
	for e := range exploreNames {
		for u := range unitNames {
			for a := range abortNames {
				names = append(names, exploreNames[e]+"-"+unitNames[u]+"-"+abortNames[a])
			}
		}
	}
	return append(names, "serial", "tstream", "sstore")
}

func index(names []string, s string) (int, bool) {
	for i, n := range names {
		if n == s {
			return i, true
		}
	}
	return 0, false
}

// TPGStrategies returns the TPG strategies (exploration x unit x abort
// handling), in the order of StrategyNames: the choices of the adaptive
// strategy.
func TPGStrategies() []Strategy {
	var out []Strategy
	for e := range exploreNames {
		for u := range unitNames {
			for a := range abortNames {
				out = append(out, Strategy{Kind: TPG, Explore: Exploration(e), Unit: Unit(u), Abort: AbortMode(a)})
			}
		}
	}
	return out
}
