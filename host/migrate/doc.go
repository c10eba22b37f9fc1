// Package migrate moves key groups between the hosts of a pipeline while
// it runs: Spacker's planned, progressive migration over Trisk's partial
// pause, on NATS alone.
//
// The parts it joins are each another package's: package cluster holds
// the assignment (which host owns which group, and the migration in
// progress, step by step, in a JetStream key-value bucket changed only by
// compare-and-set) and plans the steps; package checkpoint carries a
// group's state between hosts in a JetStream object store; package exec
// releases and acquires groups at a batch boundary, with the groups it
// keeps running.
//
// # The protocol
//
// Start writes the migration into the assignment: cluster.Plan cuts the
// moves into steps by Spacker's knobs (order, batch size, replication).
// Every host runs Host.Step (or Host.Run, which calls it on a period),
// which does the host's part of the current step:
//
//  1. The source host releases the step's groups: its job finishes the
//     batch in hand, commits, stops reading the groups and exports their
//     committed state with their floors (the position of each group's
//     last applied record). It puts each group in the checkpoint bucket,
//     marks the moves released, and drops the groups from its store.
//  2. The destination host, seeing them released, gets them from the
//     bucket; its job imports them at a batch boundary, commits them with
//     their floors and reads each group's records after its floor. It
//     marks the moves installed, which makes it the groups' owner.
//  3. Once every move of the step is installed, a host advances the
//     migration to the next step; after the last, the migration is over.
//
// Records of a moving group wait in JetStream meanwhile (the input is
// partitioned by key group), so none is lost and each key keeps its
// order; every other group on both hosts keeps running.
//
// Start begins no migration while a live host does not yet run the
// modules the assignment's versions record names (a plugin swap in
// progress: cluster.SwapPending), and a swap is refused while a migration
// is in progress (cluster.Assignment.SetVersion): a group is never
// exported by one version and installed by another. Failover does not
// wait (a dead host's groups are served by nobody meanwhile); every
// checkpoint a Host puts carries the epoch it runs (Host.Epoch), and a
// Host does not install a group of a later epoch (ErrNewerVersion) until
// it runs that epoch, which guards both.
//
// # Replication
//
// A move marked replicated (cluster.Knobs.Replicate) has a warm copy of
// its group at its destination before its step runs, so the move ships
// only what changed since (Spacker's replication). When a host's Step
// first sees a migration whose current or later steps move replicated
// groups onto it, it makes a checkpoint.Replica of those groups and
// fetches their checkpoints; Run then watches the checkpoint bucket and
// fetches a group's checkpoint again each time its source puts one (the
// sources keep checkpointing meanwhile, every CheckpointEvery). A group
// leaves the replica once installed; the replica goes when the migration
// ends.
//
// At a group's step the source releases it as before, at a batch
// boundary with its exact floors, and hands it over with
// checkpoint.Bucket.Amend: when the bucket's checkpoint holds the state
// just exported (the group did not change since it was checkpointed), only
// the floors are sent, replacing the checkpoint's metadata; otherwise
// what changed since the checkpoint is sent as a delta against it when the
// host put it (checkpoint's Deltas), else the checkpoint is put whole.
// Under load, where every group changes between checkpoints, a move then
// sends and fetches the changes since the group's last periodic
// checkpoint, and a replicated group's destination, holding that
// checkpoint already, fetches its delta alone. The floors are always those of the release:
// a group whose state did not change but whose floors advanced (records
// that wrote nothing) hands over its new floors, so the destination reads
// exactly the records after them, none twice. The decision compares the
// export itself (by its SHA-256) rather than the store's generation, so
// it holds for a checkpoint put by another host or before a restart. This
// applies to every move, replicated or not: an unchanged group is never
// sent twice.
//
// The destination installs a replicated group through its replica: from
// the copy when the copy is of the bucket's latest object (an amendment
// keeps the object, so the copy stays current, and the floors are read
// from the amendment, checked against the object's content digest), else
// by fetching the object. Host.Moved counts what releases put and installs
// fetched; the replica's fetches ahead of the moves are in the bucket's
// Stats (PrefetchBytes). The groups of the migration's first step are
// fetched when the migration begins, concurrently with their release, so
// replication pays for the groups of later steps.
//
// # Crashes
//
// Each effect comes before the mark that records it, and the marks are
// the truth: a host restarted mid-step takes its groups from Owned (the
// table's owners, less what it has released) and runs the step again. A
// source that crashed before marking a release still owns the groups and
// reads them again from its committed floors; the state it had exported
// is put again. A destination that crashed before marking an install
// installs again from the bucket and replays from the floors, making the
// same outputs, which sinks drop by id. So a move finishes or stays
// undone, never both.
//
// # Periodic checkpoints
//
// Host.Checkpoint (Host.Run calls it every CheckpointEvery) exports, at a
// batch boundary, the owned groups whose state changed since the host's
// last checkpoint, with their floors, and puts them in the checkpoint
// bucket after the boundary, while the job runs on. The bucket then holds,
// for every group that ever changed, a state and the floors it is
// consistent with, at most a checkpoint period old.
//
// # Whole pipelines
//
// A pipeline with a transactional operator keeps its groups on one host
// (cluster.Assignment.Whole): its transactions write keys of any group,
// so its groups' states agree only at one batch boundary. A Host with
// Whole set checkpoints cuts (checkpoint.Bucket.PutCut: every group, at
// one boundary, in one object) rather than groups; it releases every
// group at one boundary into a cut, and installs from the cut, so that a
// move and a failover both start the groups from one boundary and replay
// the records after it in the partition stream's order, the order they
// first ran in. The table makes such a migration one step that moves
// every group from one host to one other, and Failover and Coordinate
// give every group to one host. Replication does not apply: the cut is
// read whole.
//
// # Failover
//
// A host whose lease expired (a crash, a hang, a partition) is dead; any
// live host may call Failover, which starts a migration of the dead
// host's groups to the live ones (only those groups move). The dead host
// cannot release them: each destination, seeing a planned move whose
// source holds no lease, marks it released itself, installs the group
// from its last checkpoint (empty, with every floor 0, for a group never
// checkpointed) and reads the group's input after the checkpoint's
// floors. The records the dead host applied after that checkpoint are
// applied again, in order, and make again the outputs they made, under
// the same ids: sinks drop them by id, so a JetStream sink's duplicate
// window must cover the checkpoint period plus the lease (and the time a
// failover takes to start). Of two Failover calls at once, the bucket's
// compare-and-set lets one begin the migration; the other is refused as
// another migration in progress. Coordinate, which every host of
// host/runner runs, calls Failover, with every group in one step, on the
// live host with the lowest id once it finds a host that owns groups and
// holds no lease.
//
// A move whose destination dies is given to another live host; when its
// source is the only one, the move is cancelled
// (cluster.Assignment.Cancel) and the group stays the source's. A source
// that had released the group finds, at its next Step, a group the table
// says it owns and its job does not hold, and takes it back from the
// bucket, where its release put the group's state with its floors.
//
// A host whose lease expired must not come back owning its old groups:
// the survivors may have taken them. When cluster.Cluster.Lost's channel
// is closed, the host must stop its job at once (without committing
// another batch or putting another checkpoint), drop its Host, and start
// again as a new member: Join again, and open a job with Owned of the
// table as it then is, which no longer names it for the groups taken.
// Its local store's copy of those groups is never read again.
package migrate
