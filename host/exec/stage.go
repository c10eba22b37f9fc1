package exec

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/txn/adapt"
)

// stage runs one operator's code on a batch. Each kind of operator
// (stateless, keyed, transactional, and the kinds to come) implements it;
// everything around the code (the graph, failure policies, trials, swaps,
// changes of the worker count, commits) is written once, in terms of it.
//
// Every method is called on the executor's goroutine, between or during
// batches, never concurrently with another method of the same stage.
type stage interface {
	// run processes recs and returns the outputs, each with its Origin set
	// to the index in recs of the record it came from, in the order of
	// their origins (a serial run's order, whatever the number of
	// workers), and the records that failed, by index in recs. Both are
	// valid until the next call of run or retry.
	run(ctx context.Context, recs []abi.Record) ([]abi.Record, []plugin.Reject, error)
	// retry runs rec alone on the worker that runs its key and returns its
	// outputs, or why it failed (a reject's error included). Kinds that
	// cannot run one record alone return errNoRetry.
	retry(ctx context.Context, rec *abi.Record) ([]abi.Record, error)
	// savepoint marks the state the stage has written so far, and
	// rollback takes it back there: a trial's failed run, a quarantined
	// batch.
	savepoint() savepoint
	rollback(savepoint)
	// prepare makes, off the executor's goroutine, a generation of new
	// code for the stage from r, for that many workers, refusing
	// (ErrSwapRefused) a replacement that does not fit the stage. It reads
	// nothing the executor changes, so it runs while batches do.
	prepare(ctx context.Context, op *Operator, r *Replacement, workers int) (*generation, error)
	// install makes gen the stage's code and returns the generation it
	// replaces (with what it ran: instances, or a transactional operator).
	install(gen *generation) *generation
	// apply writes into the tables what the stage holds until the batch
	// commits (a transactional operator's change sets).
	apply() error
	// committed tells the stage that its batch is done and its state
	// captured for a commit, or left to a later one (a commit interval):
	// either way no rollback reaches back past it, and undo logs can be
	// forgotten.
	committed()
	// parallelism is the number of workers the stage runs a batch on.
	parallelism() int
	// report fills the kind's part of the operator's status.
	report(os *OperatorStatus)
	// close releases what the stage runs (instances, operator).
	close(ctx context.Context) error
}

// savepoint is an opaque mark of a stage's state (keyed: one undo log
// position per worker).
type savepoint []int

// errNoRetry is returned by a stage's retry when it cannot run one record
// alone.
var errNoRetry = errors.New("exec: the operator's kind does not retry records alone")

// resizer is a stage whose worker count can change while the job runs.
type resizer interface {
	// prepareResize makes, off the executor's goroutine, what a change
	// from the stage's from workers to n needs (the new workers' instances)
	// from code. Like prepare, it reads nothing the executor changes.
	prepareResize(ctx context.Context, op *Operator, code *plugin.Plugin, from, n int) (*resize, error)
	// resize applies a prepared change at a batch boundary.
	resize(ctx context.Context, r *resize) error
}

// lasting is a stage whose outputs outlive the next batch: they stay
// valid until the run of the batch after next, not merely until the next
// run. One batch is written while the next is processed (the committer),
// so the executor hands a lasting stage's outputs to the sinks without
// copying them out first.
type lasting interface {
	// nextBatch is called once before each batch's first run: the
	// outputs of the batch before last may be overwritten from now on.
	nextBatch()
}

// decider is a stage that keeps the adaptive strategy's decisions.
type decider interface {
	decisions(n int) ([]adapt.Record, error)
}

// generation is one version of an operator's code with what runs it: the
// workers' instances, or a transactional operator.
type generation struct {
	plugin  *plugin.Plugin
	owned   bool // close plugin with the generation
	version string
	insts   []*plugin.Instance // one per worker, in worker order
	txn     *txnop.Operator
}

// close releases the generation's instances or transactional operator.
func (g *generation) close(ctx context.Context) error {
	var errs []error
	for _, in := range g.insts {
		if in != nil {
			errs = append(errs, in.Close(ctx))
		}
	}
	g.insts = nil
	if g.txn != nil {
		errs = append(errs, g.txn.Close(ctx))
		g.txn = nil
	}
	if g.owned && g.plugin != nil {
		errs = append(errs, g.plugin.Close(ctx))
		g.plugin = nil
	}
	return errors.Join(errs...)
}
