// Package cluster coordinates the hosts that run one pipeline against one
// NATS cluster: which host owns which key group (the assignment), which
// hosts are alive (membership by leases), that they all run the same
// pipeline (the pipeline check), and how key groups move between them (the
// placement functions and the migration planner). Everything shared lives
// in JetStream key-value buckets; there is no coordinator process: a host
// changes the shared state only by compare-and-set, so any host may make a
// change and two racing changes cannot both be lost.
//
// The package moves no state and reads no records: the executor releases
// and installs key groups, package checkpoint ships their state. It records
// what the hosts agree on.
//
// # Buckets and keys
//
// Each pipeline has two buckets, named after the pipeline (pipeline names
// hold letters, digits, - and _, so the two prefixes keep any two
// pipelines' buckets apart):
//
//	sluice-cluster-<pipeline>   kept (history 16, so a person can see past tables)
//	  assignment                the Assignment, as JSON, with its versions and
//	                            workers records
//	  pipeline                  the canonical pipeline text the cluster runs
//	  hosts.<id>                a HostInfo per host that has ever joined
//	  running.<id>              a Running per host: the modules it runs and
//	                            its operators' worker counts
//	  load.<id>                 a Load per host: its workers' utilisation and
//	                            whether its controller wants more workers
//	                            (written while control.hosts is on)
//	sluice-leases-<pipeline>    entries expire after the lease (the bucket's MaxAge)
//	  <id>                      a live host's HostInfo, its lease
//	sluice-modules-<pipeline>   an object store: the modules swaps recorded, by SHA-256
//
// The hosts.<id> keys are the hosts an assignment may name: a table that
// names another host is refused. A host that has left stays known, so a
// table that still gives it groups (before failover moves them) is valid.
//
// # Leases
//
// A host's lease is its key in the lease bucket. Join creates it (a live
// host's id cannot be taken: the create fails); a goroutine renews it every
// third of the lease by a compare-and-set on its revision, until Leave or
// the end of the context given to Join. Leave deletes it: the others see
// the host leave at once. A host that stops renewing (a crash, a hang, a
// partition) disappears when the entry ages out, and the server leaves a
// marker that Watch reports as Expired. The server finds aged entries by a
// periodic check, up to a few hundred milliseconds after their age passed,
// so a Watch does not wait for it: when it has seen a lease go a whole
// lease without a renewal, it purges the lease at the revision it saw (a
// compare-and-set: a host that renewed meanwhile keeps its lease), and
// every watch sees that purge as the expiry. If a renewal finds the lease gone,
// the host has lost it: Lost's channel is closed and the host must stop
// serving its groups, which the survivors may have taken.
//
// The lease is the bucket's MaxAge, not a per-key TTL: with a MaxAge every
// write of a key starts its age afresh, so a renewal is an ordinary update
// by revision, and the server expires a lease with no help from its host;
// a per-key TTL is set when a key is created and the key-value API cannot
// set it again on an update. The lease is therefore the cluster's, not a
// host's: the host that creates the bucket sets it (Config.Lease, 10 s by
// default), and the others use the bucket's. The bucket's limit markers
// (LimitMarkerTTL) make an expiry visible to watchers.
//
// # The pipeline check
//
// The first host to join writes its pipeline text to the pipeline key (by
// create, so two first hosts cannot both write). A host that joins with a
// different text is refused with a *PipelineMismatchError naming the first
// line that differs, and its lease is removed. Two pipeline files with one
// name share the buckets, so the second is refused the same way. A host
// with Config.ReplacePipeline set replaces the text when no other host is
// live (its own lease is created before it looks, so of two such hosts
// joining at once at most one replaces it).
//
// # The assignment and the compare-and-set rule
//
// Update reads the table with its revision, applies a pure function to a
// copy, validates the result, and writes it only if the entry is still at
// that revision; if another host wrote first it reads again and retries
// (up to 32 times). A table that breaks an invariant (see Assignment) is
// never written, and a stored one (edited by hand) is refused when read,
// with an error naming the key, its revision and the field at fault:
// nothing is applied until a person fixes the entry.
//
// # Migrations and step states
//
// A migration is a list of steps, each a set of moves (group, from, to).
// Steps run one at a time. Each move goes
//
//	planned    the source host still reads the group
//	released   the source stopped reading it at a batch boundary, committed,
//	           and shipped its state with its floors
//	installed  the destination installed that state and reads the group
//	           from the floors; Owners names the destination
//
// and a step's state is the least of its moves', until Advance marks it
// done and makes the next step current. Steps before the current one are
// done, steps after it planned. Begin, Mark and Advance are the changes,
// made inside Update.
//
// # Plugin versions, and why they live in the assignment
//
// A plugin swap on a pipeline spread over hosts is the cluster's: the
// assignment's Versions record names, per operator, the module (by
// SHA-256, its bytes in the module store) every host must run, and
// counts the swaps in an epoch. Each host reports under running.<id> the
// modules it runs. The record is a field of the assignment rather than a
// key of its own so that a swap and a migration are ordered by one
// compare-and-set: SetVersion refuses a swap while the table holds a
// migration, and package migrate begins a migration (other than a
// failover) only in an Update whose table's record every live host runs
// (SwapPending), so a key group
// never moves between hosts that run different modules. Two keys would
// need a check of one and a write of the other, which a racing change
// slips between. A record edited by hand into an invalid state is refused
// with the rest of the table, naming the field (versions.operators[...]).
//
// # Worker counts, and why they live in the assignment too
//
// A change of an operator's parallelism (Trisk's primitive; sluice
// cluster scale) is recorded the same way: the assignment's Workers
// record gives, per operator, the count every host runs and the hosts
// with a count of their own, with an epoch that counts the scales.
// SetWorkers, inside Update, makes two racing scales land one after the
// other, each with its own epoch, where two writes of a key of their own
// would lose one. The table does not know the pipeline: that the
// operator exists and may change its workers is checked by the caller
// (package clusterctl) and again by each host before it applies a
// count. Each host reports the counts it runs under running.<id>, and
// WorkersPending names the live hosts that do not run the record yet. A
// record edited by hand into an invalid state (a count out of range, a
// host that never joined) is refused with the rest of the table, naming
// the field (workers.operators[...]). Scales and migrations do not wait
// for each other: a host's workers read whichever key groups the host
// owns, and its executor makes one change at a time, at batch
// boundaries.
//
// # The host pool, and why it lives in the assignment too
//
// A pool host (sluice run --pool) has joined and holds a lease, but is
// given no key groups until it is taken into service. The assignment's
// Pool record names the pool's hosts, counts its changes in an epoch and
// keeps the last change (what, which host, by whom, why). Membership by
// a field of HostInfo would be the host's own word, written at join and
// fixed by its lease; taking a host into service is a decision about it
// made elsewhere (a person, the coordinator's control plane), so it is a
// change of the shared table, by compare-and-set, like a migration:
//
//   - a pool change and a migration are ordered by one compare-and-set,
//     so a table never moves a group to a pool host (Validate refuses a
//     move that is not installed whose destination is pooled, and
//     AddToPool refuses a host a migration is moving groups to);
//   - two deciders cannot both act: Activate refuses a host no longer in
//     the pool, and a change that names the epoch it was decided on
//     (PoolChange.Expect) is refused once the pool has moved on, even
//     for another host.
//
// The table does not move groups itself when the pool changes: the
// coordinator balances the groups over the live hosts that are not
// pooled (Active), which moves a released host's groups off and gives an
// activated one its share. A pool host may own groups for a while (it
// was given back and its groups have not all moved yet); Validate allows
// that. A pool host's lease, reports and checkpoints are a host's like
// any other.
//
// # Whole tables
//
// A table marked Whole (a pipeline with a transactional operator, whose
// transactions write keys of any group) keeps every group on one host:
// Validate refuses a table that splits them, or a migration that is not
// one step moving every group from one host to one other, naming the
// field. Balanced is the rebalance every caller uses: Rebalance's for
// other tables, and for a Whole one every group on its owner while it is
// live, else on one live host. The hosts set Whole as they join, from
// the pipeline file they all run.
//
// # Placed tables
//
// A table whose groups were placed on one host (Placed, set by sluice
// cluster place with the migration that moves them there) keeps them
// there: Balanced gives every group to the placed host while it is among
// the live hosts, so the coordinator's rebalances on a join or a leave
// leave them in place; without it they are spread as usual, and they go
// back when it returns. Validate refuses a placement on a host that never
// joined. A move or rebalance a person asks for forgets the placement
// (package migrate's StartPlacing with ""): Placed is a person's choice,
// and the next person's choice replaces it.
//
// # The planner
//
// Plan turns an old and a new table into steps with Spacker's knobs:
//
//   - Order: the order each source host's groups move in: "keygroup"
//     (ascending), "reverse", "random" (drawn from Seed, the same
//     everywhere), "hottest" (most load first, ties by group).
//   - Batch: groups per source host per step; 0 moves all at once. Each
//     source host's ordered groups are cut into chunks of Batch, and step
//     i moves every source host's i-th chunk, so sources run in parallel.
//     With Global, Batch counts a step's groups over all source hosts.
//   - Replicate: group g is replicated ahead of its move (its destination
//     keeps a warm copy, so the move ships only what changed since) iff
//     Replicate > 0 and g % Replicate == 0: 1 all, 2 half, 0 none.
//
// AllAtOnce (one step) and Fluid (one group per step, over all hosts) are
// the baselines. Spread and Rebalance make the new tables: Spread deals
// groups round robin, Rebalance moves the fewest groups that leave every
// live host within one group of the others.
package cluster
