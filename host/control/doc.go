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
package control
