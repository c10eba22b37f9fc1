package exec

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/window"
	"github.com/sluicehq/sluice/state"
)

// node is one operator of the graph: its stage (the code of its kind), its
// place in the graph, and the lifecycle every kind shares.
type node struct {
	op   *Operator
	code stage
	m    *opMetrics
	// meter is the operator's measurements for Job.Measure.
	meter *meter
	// inputs are the streams the operator reads, in the order of
	// Operator.Inputs (a record's abi.Record.Input is its position here).
	inputs []ref

	// Counters, updated by the executor goroutine only.
	in, out, dead, retries, late uint64
	// wm is a windowed node's watermark at the end of the last batch
	// (window.MinWatermark before any).
	wm int64

	// The code's lifecycle (swap.go, policy.go), executor goroutine only:
	// the running version; the previous code, kept during a swapped-in
	// module's trial of probation batches; swap and rollback counts; and
	// the failure streak that quarantines the operator.
	version          string
	ownsPlugin       bool // op.Plugin came with ClosePlugin: close it with the stage
	prev             *generation
	probation        int
	swaps, rollbacks uint64
	lastRollback     string
	failStreak       int
	quarantined      bool
	// lastSwap is how long the steps of the last swap took (Job.LastSwap),
	// guarded by Job.changeMu; firstPending says the first batch on its
	// code is yet to run (executor goroutine only), and lastBatch is how
	// long the last batch on the code before took.
	lastSwap     SwapTimes
	firstPending bool
	lastBatch    time.Duration
	// synced counts Job.syncStatus's copies of the node into the status
	// (written by the executor goroutine under Job.mu), so that finish
	// keeps them over the status of a batch processed before them.
	synced uint64

	// This batch's output stream: records, and the batch input each one
	// descends from.
	recs []abi.Record
	idx  []int32
	// Scratch reused from batch to batch.
	merged    []abi.Record
	mergedIdx []int32
	fit       []abi.Record
	fitIdx    []int32
	outIdx    []int32
	// madeProv maps the stage's made records to their inputs in the batch
	// (-1: none yet).
	madeProv []int32
	// A windowed node's watermark at each batch input, and at each of its
	// input records.
	batchWMs []int64
	wms      []int64
}

// newStage makes the stage of op's kind.
func newStage(ctx context.Context, op *Operator, store *state.Store, m *Metrics, om *opMetrics, log *slog.Logger) (stage, error) {
	switch {
	case op.Txn != nil:
		return newTxnStage(op, store, m)
	case op.Join != nil && op.Join.Window.Assigner == window.Session:
		return newSessionJoinStage(ctx, op, store, om, log)
	case op.Join != nil:
		return newJoinStage(ctx, op, store)
	case op.Interval != nil:
		return newIntervalStage(ctx, op, store, om.workers)
	case op.Window != nil:
		return newWindowStage(ctx, op, store, om, log)
	case op.Kind == plugin.KindKeyed:
		return newKeyedStage(ctx, op, store, om.workers)
	default:
		return newStatelessStage(ctx, op, om.workers)
	}
}

// close releases the node's code: its stage, the previous code of a trial,
// and the plugin when the node owns it.
func (n *node) close(ctx context.Context) error {
	// The stage stays (closing it again does nothing), for Decisions
	// after the job ended.
	err := n.code.close(ctx)
	if n.prev != nil {
		if cerr := n.prev.close(ctx); cerr != nil && err == nil {
			err = fmt.Errorf("exec: operator %q: close the replaced plugin: %w", n.op.Name, cerr)
		}
		n.prev = nil
	}
	if n.ownsPlugin && n.op.Plugin != nil {
		if cerr := n.op.Plugin.Close(ctx); cerr != nil && err == nil {
			err = fmt.Errorf("exec: operator %q: close: %w", n.op.Name, cerr)
		}
		n.ownsPlugin = false
	}
	return err
}

// install makes gen the node's code and returns the generation it
// replaces, plugin and version included.
func (n *node) install(gen *generation) *generation {
	old := n.code.install(gen)
	old.plugin, old.owned, old.version = n.op.Plugin, n.ownsPlugin, n.version
	n.op.Plugin, n.ownsPlugin, n.version = gen.plugin, gen.owned, gen.version
	gen.plugin = nil
	return old
}

// status fills the operator's status.
func (n *node) status(os *OperatorStatus) {
	os.Name, os.Kind, os.Plugin, os.Version = n.op.Name, string(n.op.Kind), n.op.pluginName(), n.version
	os.Parallelism = n.code.parallelism()
	os.RecordsIn, os.RecordsOut, os.Dead, os.Retries = n.in, n.out, n.dead, n.retries
	os.Swaps, os.Rollbacks, os.LastRollback = n.swaps, n.rollbacks, n.lastRollback
	os.TrialBatches, os.Quarantined = n.probation, n.quarantined
	if _, ok := n.code.(clocked); ok {
		os.Window = &schema.WindowStatus{Watermark: wmTime(n.wm), Late: n.late}
	}
	n.code.report(os)
}
