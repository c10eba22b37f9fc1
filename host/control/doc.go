// Package control is the job's control plane: management rounds that look
// at the executor's measurements and move key groups between workers,
// change operators' worker counts, or report what no automatic action
// fixes.
//
// A round is detect -> diagnose -> resolve (StreamOps): each Policy is
// shown a View of the recent Samples and proposes at most one action; one
// proposal is applied per round, the highest-priority policy's. Every
// decision is recorded with its evidence and predicted effect and checked
// against what follows: a decision that made things worse is rolled back
// and its policy told.
//
// Policies are pure functions of the samples they are shown (plus their
// own memory of earlier rounds), so they are tested on synthetic and
// recorded traces without a running pipeline.
//
// No policy removes workers while a source's backlog grows by more than
// backlogNoise of its read rate (and no host is given back while a host
// is behind so): a job whose reader falls behind can show idle, healthy
// workers, whose delays and arrivals count from the read, and the
// records waiting unread at the source are in none of the figures a
// scale-in is sized on. One band serves every reading of a backlog (DS2,
// the guarantor, the doctor, the effect check): the read-ahead queue,
// counted in the backlog, moves by about that much as the rate moves.
//
// # Scaling across hosts
//
// Hosts is the cluster-level decision of a pipeline spread over hosts
// (the pipeline file's control.hosts): take a pool host into service, ask
// for one with the configured request command when the pool is empty, or
// give a host back to the pool. It is not a Policy: a Policy proposes
// changes of its own host's job from that job's samples, while Hosts
// decides for the cluster from every host's report, and only on the
// coordinator (the live host with the lowest id), so that one decision
// is made cluster-wide at a time. Each host's Controller supplies its
// part of the figures (Load: the mean utilisation of its workers,
// whether a policy wanted more workers than MaxWorkers for an operator
// already at MaxWorkers, its input rate), and records the coordinator's
// decisions with its own (Record), so they show where the others do.
//
// Decisions, and why:
//
//   - Saturated means every active host, not the mean: one host hot and
//     the others idle is a placement problem (the rebalance, the latency
//     guarantor), not a lack of hosts.
//   - A host's controller wanting more than workers.max is saturation
//     whatever the utilisation says: it is the scale-out the host itself
//     found and could not make.
//   - Scale-in asks that the load fit on n-1 hosts under ScaleInBelow,
//     which is under ScaleOutAbove, and every decision starts the spans
//     afresh: a flat load does not flap. No host may be behind (its
//     Load.Behind: a source's backlog growing).
//   - No decision while a migration runs or a released host drains: the
//     figures then measure the move, not the load.
//   - Hosts decisions are not checked and rolled back: undoing a host
//     change is another migration, and the next decision, a span later,
//     answers one that did not help.
//
// Hosts is a pure function of the figures it is shown plus its memory of
// when each condition began and of its lock, tested on synthetic traces
// (hosts_test.go); package runner reads the figures and applies the
// decisions (package migrate's Activate and Release, the commands).
package control
