package control

import (
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// Sample is a job's measurements at one instant. Counters are cumulative
// since the job started (a rate is the difference of two samples over the
// time between them); gauges (backlogs, heap) are as of At.
type Sample struct {
	At        time.Time
	Operators []OperatorSample
	Sources   []SourceSample
	// Commits counts the commits (one a batch, or fewer under a commit
	// interval); CommitSeconds sums the time they took (the store's write
	// and sync).
	Commits       uint64
	CommitSeconds float64
	// GCPauseSeconds sums the garbage collector's stop-the-world pauses;
	// HeapBytes is the live heap and HeapLimit the soft memory limit
	// (GOMEMLIMIT; 0 when none is set).
	GCPauseSeconds float64
	HeapBytes      uint64
	HeapLimit      uint64
	// SlowConsumers counts the NATS client's slow-consumer errors (the
	// client dropped messages it could not hand over fast enough).
	SlowConsumers uint64
	// Migrating is set while key groups move between hosts (a cluster
	// migration in progress): no decision is applied meanwhile.
	Migrating bool
}

// OperatorSample is one operator's measurements.
type OperatorSample struct {
	Name string
	// Kind is the operator's kind as the pipeline file names it: map,
	// filter, flatmap, keyed, transactional, aggregate, ...
	Kind string
	// Version identifies the operator's plugin (its version, or its
	// module's hash): a swap changes it.
	Version string
	// Inputs are the sources and operators the operator reads, by name
	// (the graph, for DS2's topological order).
	Inputs []string
	// Resizable is set when the operator's worker count can change
	// (stateless and keyed operators); Movable when its key groups can
	// move between its workers (keyed operators).
	Resizable, Movable bool
	// In and Out count the records the operator read and wrote.
	In, Out uint64
	// Workers are the operator's workers, by id.
	Workers []WorkerSample
	// Groups are the operator's key groups (a keyed operator; nil for
	// others), indexed by key group.
	Groups []GroupSample
	// HotKeys are the keys seen most often in a sample of the operator's
	// input (every so many records), most frequent first.
	HotKeys []KeyCount
}

// WorkerSample is one worker's measurements.
type WorkerSample struct {
	ID int
	// Host is the host the worker runs on ("" on one host).
	Host string
	// Groups are the key groups the worker owns (a keyed operator).
	Groups []int
	// Records and Out count the records the worker ran and the records
	// it wrote.
	Records, Out uint64
	// BusySeconds is the worker's useful time (DS2's W_u): running its
	// records, decoding and encoding, not waiting for the batch's other
	// workers or for input.
	BusySeconds float64
	// DelaySeconds sums, over the records the worker ran, the time from
	// each record's arrival at the host to the end of its processing;
	// Delayed counts those records.
	DelaySeconds float64
	Delayed      uint64
}

// GroupSample is one key group's counts at a keyed operator: records that
// arrived for it, and records its worker ran.
type GroupSample struct {
	Arrived, Processed uint64
}

// SourceSample is one source's measurements.
type SourceSample struct {
	Name string
	// Read counts the records of the source the job took into batches.
	Read uint64
	// Backlog is how many records wait, not taken into a batch yet: in
	// the source (the JetStream consumer's pending count; the
	// generator's records due and not yet made) and read from it into
	// the job's queue; -1 when the source cannot tell its own.
	Backlog int64
}

// KeyCount is a sampled key and how often it was seen.
type KeyCount struct {
	Key   string
	Group int
	Count uint64
}

// Proposal is what one policy proposes in a round: an action (Action.Kind
// empty when it proposes none), why, on what evidence, and what it
// predicts once the action is applied.
type Proposal struct {
	Policy    string
	Action    schema.Action
	Reason    string
	Evidence  []schema.Evidence
	Predicted []schema.Evidence
}

// Bounded is a Policy that can tell which operators it would give more
// workers than the view's MaxWorkers, had it no bound: a scale-out the
// host cannot make. The controller reports a host with such an operator
// as saturated (HostLoad.Saturated), for the cluster-level decision.
type Bounded interface {
	// OverMax returns the operators that, at the policy's last Propose,
	// run MaxWorkers and need more.
	OverMax() []string
}

// Policy is one control policy: each round it looks at the recent
// samples (detect), finds a cause (diagnose) and proposes an action
// (resolve), or findings for the job doctor. Policies are pure functions
// of what they are shown plus their own memory of past rounds; they act
// only through the controller.
type Policy interface {
	// Name names the policy in decisions and the configuration.
	Name() string
	// Propose returns the policy's proposal for this round (nil for none)
	// and its findings.
	Propose(v *View) (*Proposal, []schema.Finding)
	// Outcome tells the policy what became of a decision it proposed:
	// applied, kept, rolled back or failed.
	Outcome(d schema.Decision)
}
