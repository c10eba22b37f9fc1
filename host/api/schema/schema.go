// Package schema holds the documents the host's HTTP API answers with
// (package api): one Go type per JSON shape, imported by the server, by
// the packages that produce the documents (host/exec, host/runner,
// host/registry) and by the clients (api.Client, cmd/sluice), so that the
// server and its clients decode and encode the same types and cannot
// drift. docs/api.md documents each shape.
//
// The package is a leaf: it imports nothing of the host (txn/adapt
// defines the adaptive strategy's records), so that every producer can
// import it without an import cycle through api.
package schema

import (
	"time"

	"github.com/sluicehq/sluice/txn/adapt"
)

// Status is the answer of GET /api/v1/pipeline: a snapshot of a job's
// progress.
type Status struct {
	Pipeline  string            `json:"pipeline"`
	State     string            `json:"state"` // starting, running, draining, stopped, failed
	Batches   uint64            `json:"batches"`
	RecordsIn uint64            `json:"records_in"`
	Outputs   uint64            `json:"records_out"`
	Dead      uint64            `json:"dead_letters"`
	Positions map[string]uint64 `json:"positions"`
	Operators []OperatorStatus  `json:"operators"`
	// Sinks are the job's sinks and the streams each writes (operators'
	// or sources' names), for drawing the graph.
	Sinks []SinkStatus `json:"sinks"`
	// BatchSeconds is the distribution of the batches' durations (read,
	// process, write, commit), as the sluice_batch_duration_seconds
	// histogram counts them.
	BatchSeconds Histogram `json:"batch_seconds"`
	// Sources are the sources' event time, for a job with a windowed
	// operator or join (empty otherwise), in the pipeline's order.
	Sources []SourceStatus `json:"sources,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// SourceStatus describes one source's event time in a Status, as of the
// last batch.
type SourceStatus struct {
	Name string `json:"name"`
	// Watermark is the source's watermark: the event time below which it
	// expects no more records. Nil until the source delivers a record
	// with an event time.
	Watermark *time.Time `json:"watermark,omitempty"`
	// LagSeconds is how far the watermark is behind the host's clock at
	// the last batch (0 while Watermark is nil).
	LagSeconds float64 `json:"watermark_lag_seconds"`
	// Idle is set while the source is idle (nothing for its idle time):
	// the watermarks of the operators that read it leave it out.
	Idle bool `json:"idle"`
}

// WindowStatus is a windowed operator's or join's part of an
// OperatorStatus, as of the last batch.
type WindowStatus struct {
	// Watermark is the operator's watermark at the end of the last batch:
	// the least of its sources' that are not idle. Nil before any.
	Watermark *time.Time `json:"watermark,omitempty"`
	// OpenSlices is how many window slices a windowed operator keeps
	// (records or accumulators of windows not yet purged), and Firings
	// how many windows it fired (early and late firings included), the
	// sluice_window_open_slices and sluice_window_firings_total metrics;
	// both 0 for a join.
	OpenSlices int64  `json:"open_slices"`
	Firings    uint64 `json:"firings"`
	// Late counts the records that came after their windows closed
	// (sluice_operator_late_records_total).
	Late uint64 `json:"late_records"`
}

// SinkStatus describes one sink in a Status.
type SinkStatus struct {
	Name   string   `json:"name"`
	Inputs []string `json:"inputs"`
}

// Histogram counts observations into buckets: Counts[i] is how many were
// at most Bounds[i] and more than Bounds[i-1]; the last count, one past
// Bounds, is those above every bound. Counts grow for the life of the job,
// so the difference of two snapshots is what happened between them.
type Histogram struct {
	Bounds []float64 `json:"bounds"`
	Counts []uint64  `json:"counts"`
}

// OperatorStatus describes one operator in a Status.
type OperatorStatus struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Plugin string `json:"plugin"`
	// Inputs are the streams the operator reads: sources' and other
	// operators' names.
	Inputs      []string `json:"inputs"`
	Parallelism int      `json:"parallelism"`
	RecordsIn   uint64   `json:"records_in"`
	RecordsOut  uint64   `json:"records_out"`
	Dead        uint64   `json:"dead_letters"`
	// Retries counts the runs of a failed record again, alone (the
	// operator's retries policy).
	Retries uint64 `json:"retries"`
	// Version is the running plugin's version.
	Version string `json:"version,omitempty"`
	// Swaps and Rollbacks count the swaps made and the automatic
	// rollbacks; LastRollback says why the last rollback was made.
	Swaps        uint64 `json:"swaps"`
	Rollbacks    uint64 `json:"rollbacks"`
	LastRollback string `json:"last_rollback,omitempty"`
	// TrialBatches is how many batches remain of a swapped-in plugin's
	// trial (0: none in progress).
	TrialBatches int `json:"trial_batches"`
	// Quarantined is set while the operator waits for a swap.
	Quarantined bool `json:"quarantined"`
	// Workers are the operator's workers (stateless and keyed operators).
	Workers []WorkerStatus `json:"workers,omitempty"`
	// Assignment is the version of a keyed operator's assignment of key
	// groups to workers (it changes with the worker count).
	Assignment uint64 `json:"assignment_version,omitempty"`
	// Txn is set for a transactional operator.
	Txn *TxnStatus `json:"txn,omitempty"`
	// Window is set for a windowed operator or join.
	Window *WindowStatus `json:"window,omitempty"`
}

// WorkerStatus describes one worker of an operator: what it ran and for
// how long (busy, not waiting for the batch's other workers), so that a
// straggler shows.
type WorkerStatus struct {
	ID          int     `json:"id"`
	Records     uint64  `json:"records"`
	BusySeconds float64 `json:"busy_seconds"`
	// KeyGroups is how many key groups a keyed operator's worker owns.
	KeyGroups int `json:"key_groups,omitempty"`
}

// TxnStatus is a transactional operator's part of an OperatorStatus:
// totals since the job started.
type TxnStatus struct {
	Strategy     string `json:"strategy"`
	Workers      int    `json:"workers"`
	Batches      uint64 `json:"batches"`
	FailedBatch  uint64 `json:"failed_batches"`
	Committed    uint64 `json:"committed"`
	Aborted      uint64 `json:"aborted"`
	ReExecutions uint64 `json:"re_executions"`
	// Seconds spent per phase, summed over the scheduler's workers: plan
	// (TPG construction), explore (scheduling), useful (inside the
	// operations' functions), abort (passes after the first), finish
	// (assembling the change set), guest (the operator's plan and post
	// calls, outside the scheduler).
	PlanSeconds    float64 `json:"plan_seconds"`
	ExploreSeconds float64 `json:"explore_seconds"`
	UsefulSeconds  float64 `json:"useful_seconds"`
	AbortSeconds   float64 `json:"abort_seconds"`
	FinishSeconds  float64 `json:"finish_seconds"`
	GuestSeconds   float64 `json:"guest_seconds"`
	// Running is the strategy that ran the last batch: Strategy itself,
	// or the adaptive strategy's choice.
	Running string `json:"running,omitempty"`
	// Last is what the last batch measured, with the adaptive strategy's
	// decision after it under that strategy.
	Last *adapt.Record `json:"last_batch,omitempty"`
	// Switches and Mispredictions count the adaptive strategy's changes
	// of strategy and the batches after a change that ran slower than it
	// predicted; DecideSeconds is the time it spent deciding.
	Switches       uint64  `json:"adaptive_switches,omitempty"`
	Mispredictions uint64  `json:"adaptive_mispredictions,omitempty"`
	DecideSeconds  float64 `json:"adaptive_decide_seconds,omitempty"`
}

// Decisions is the answer of GET /api/v1/operators/{name}/decisions: the
// latest batches of a transactional operator under the adaptive strategy,
// oldest first, each with the decision taken after it.
type Decisions []adapt.Record

// TPG is the answer of GET /api/v1/operators/{name}/tpg: the task
// precedence graph of one batch of a transactional operator, sampled on
// request.
type TPG struct {
	// Strategy is the strategy that ran the batch.
	Strategy string `json:"strategy"`
	// Txns and TotalOps are the batch's transactions and operations; Ops
	// holds the first of them only (Truncated says so), Edges the
	// dependencies between those.
	Txns      int  `json:"txns"`
	TotalOps  int  `json:"total_ops"`
	Truncated bool `json:"truncated"`
	// Units is the number of scheduling units the batch had.
	Units int       `json:"units"`
	Ops   []TPGOp   `json:"ops"`
	Edges []TPGEdge `json:"edges"`
}

// TPGOp is one operation of a TPG.
type TPGOp struct {
	// Txn is the operation's transaction (its timestamp in the batch),
	// Index its position in the transaction.
	Txn   int32 `json:"txn"`
	Index int32 `json:"index"`
	// Table and Key are the key a deterministic operation writes; a
	// non-deterministic one (NonDet) has its table only.
	Table  uint32 `json:"table"`
	Key    string `json:"key"`
	NonDet bool   `json:"nondet"`
	// Unit is the scheduling unit the operation was in, Order the place
	// of that unit in the order the units first ran (0 first, -1 never
	// ran) and Worker the scheduler's worker that ran it.
	Unit   int32 `json:"unit"`
	Order  int32 `json:"order"`
	Worker int32 `json:"worker"`
	// Aborted is set when the operation's transaction aborted.
	Aborted bool `json:"aborted"`
}

// TPGEdge is one dependency of a TPG, by the operations' indexes in Ops:
// To runs after From. Kind is temporal (To accesses the key From writes),
// parametric (To reads it), nondet (a non-deterministic operation and one
// on its table) or logical (consecutive operations of one transaction).
type TPGEdge struct {
	From int32  `json:"from"`
	To   int32  `json:"to"`
	Kind string `json:"kind"`
}

// Module describes one module of the plugin registry.
type Module struct {
	// SHA256 is the hex digest of the module's bytes, its identity.
	SHA256 string `json:"sha256"`
	// Name is the file name the module was first deployed under.
	Name string `json:"name"`
	// Version is what the module declares in its "sluice.version" custom
	// section; "" when it declares none.
	Version string `json:"version"`
	// Size is the module's size in bytes.
	Size int `json:"size"`
	// ABIVersion is the ABI version the module declares (0: unreadable).
	ABIVersion int32 `json:"abi_version"`
	// Language is the source language the module's producers section
	// names, "" when unknown.
	Language string `json:"language,omitempty"`
	// Kinds are the operator kinds the module can serve.
	Kinds []string `json:"kinds"`
	// Exports and Imports are the module's functions with their signatures.
	Exports []string `json:"exports"`
	Imports []string `json:"imports"`
	// Deployed is when the module was first stored.
	Deployed time.Time `json:"deployed"`
}

// Label names the module for people: its version, else a short hash.
func (m Module) Label() string {
	if m.Version != "" {
		return m.Version
	}
	return "sha256:" + m.SHA256[:min(12, len(m.SHA256))]
}

// Deployment records that an operator started running a module.
type Deployment struct {
	Operator string    `json:"operator"`
	SHA256   string    `json:"sha256"`
	At       time.Time `json:"at"`
	// Reason is why: "start", "swap", "rollback" or "auto-rollback".
	Reason string `json:"reason"`
	// Detail says more, for instance the error that caused an automatic
	// rollback.
	Detail string `json:"detail,omitempty"`
}

// OperatorPlugins is one operator's part of Plugins.
type OperatorPlugins struct {
	Operator    string       `json:"operator"`
	Current     Module       `json:"current"`
	Previous    []Module     `json:"previous"`
	Deployments []Deployment `json:"deployments"`
}

// Plugins is the answer of GET /api/v1/plugins: the registry's modules
// and each operator's current and previous modules and deployments.
type Plugins struct {
	Modules   []Module          `json:"modules"`
	Operators []OperatorPlugins `json:"operators"`
}

// SwapResult is the answer of POST /api/v1/operators/{name}/swap and
// .../rollback: the operator's module before and after, where the new
// module came from, and how long each step of the swap took.
type SwapResult struct {
	Operator string `json:"operator"`
	From     Module `json:"from"`
	To       Module `json:"to"`
	// Source is where the new module came from: one of the Source*
	// constants.
	Source string    `json:"source"`
	Steps  SwapSteps `json:"steps"`
}

// Where a swapped-in or prepared module came from (SwapResult.Source,
// PrepareResult.Source).
const (
	// SourceUpload is a module new to the host: stored, checked and
	// compiled by this request.
	SourceUpload = "upload"
	// SourceRegistry is a module the registry held already (deployed or
	// prepared before, or a rollback's): not checked again, and loaded
	// from the compilation cache.
	SourceRegistry = "registry"
	// SourcePrepared is the module a prepare of the operator loaded: the
	// swap only made its instances and installed them.
	SourcePrepared = "prepared"
)

// SwapSteps are how long each step of a swap or rollback took, in
// milliseconds; a step that was not needed took 0. The steps run one
// after the other, so they add up to at most TotalMS.
type SwapSteps struct {
	// CheckMS is storing the module in the registry and checking it,
	// which compiles it into the compilation cache: nearly all of it is
	// the compile. 0 when the registry held the module.
	CheckMS float64 `json:"check_ms"`
	// LoadMS is loading the module for the operator's kind (from the
	// compilation cache) and reading its ABI version from one instance.
	// 0 when a prepare had loaded it.
	LoadMS float64 `json:"load_ms"`
	// InstancesMS is making the new module's instances, one per worker,
	// configured (a transactional operator's scheduler with its
	// instance), while batches go on.
	InstancesMS float64 `json:"instances_ms"`
	// BoundaryMS is waiting for the executor to reach the next batch
	// boundary.
	BoundaryMS float64 `json:"boundary_ms"`
	// InstallMS is putting the new instances in place at that boundary:
	// the time the pipeline stood still for the swap.
	InstallMS float64 `json:"install_ms"`
	// TotalMS is the whole swap as the host served it, from the request
	// (its module received) to the answer, waiting for another swap or
	// prepare of the host included.
	TotalMS float64 `json:"total_ms"`
}

// PrepareResult is the answer of POST /api/v1/operators/{name}/prepare:
// the module stored, checked, compiled and loaded for the operator, ready
// for a swap that only makes its instances and installs them.
type PrepareResult struct {
	Operator string `json:"operator"`
	Module   Module `json:"module"`
	// Source is SourceUpload for a module new to the host, SourceRegistry
	// for one the registry held (not checked again).
	Source string       `json:"source"`
	Steps  PrepareSteps `json:"steps"`
}

// PrepareSteps are how long each step of a prepare took, in
// milliseconds, as in SwapSteps.
type PrepareSteps struct {
	// CheckMS is storing and checking the module, which compiles it
	// into the compilation cache; 0 when the registry held it.
	CheckMS float64 `json:"check_ms"`
	// LoadMS is loading it for the operator's kind, from the cache.
	LoadMS float64 `json:"load_ms"`
	// TotalMS is the whole prepare, as SwapSteps.TotalMS.
	TotalMS float64 `json:"total_ms"`
}

// Millis returns d in milliseconds, to the microsecond, for the *MS
// fields of SwapSteps and PrepareSteps.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// StatePage is the answer of GET /api/v1/state: Next is the after of the
// next page, "" when this one is the last.
type StatePage struct {
	Entries []StateEntry `json:"entries"`
	Next    string       `json:"next"`
}

// StateEntry is one entry of a StatePage and one line of `sluice state
// dump`. A key or value that is valid UTF-8 is given as text (key, value),
// any other in standard base64 (key_base64, value_base64), the convention
// of the file source's records.
//
// The key is the routing key; a namespaced key (state.Key) also has its
// namespace and user key, in the same convention, both absent for a plain
// key.
type StateEntry struct {
	Table           string  `json:"table"`
	Key             *string `json:"key,omitempty"` // nil only when KeyBase64 holds the key
	KeyBase64       string  `json:"key_base64,omitempty"`
	Namespace       *string `json:"namespace,omitempty"`
	NamespaceBase64 string  `json:"namespace_base64,omitempty"`
	User            *string `json:"user,omitempty"`
	UserBase64      string  `json:"user_base64,omitempty"`
	Value           *string `json:"value,omitempty"` // nil only when ValueBase64 holds the value
	ValueBase64     string  `json:"value_base64,omitempty"`
	KeyGroup        int     `json:"key_group"`
	// Window describes, for an entry a windowed operator keeps (a
	// window's slice of records or accumulator, its firing state), what
	// it holds; "" for other entries.
	Window string `json:"window,omitempty"`
}

// Workers is the answer of POST /api/v1/operators/{name}/workers: the
// operator's worker count before and after the change, and the version of
// a keyed operator's key-group assignment after it (0 for a stateless
// operator).
type Workers struct {
	Operator   string `json:"operator"`
	From       int    `json:"from"`
	To         int    `json:"to"`
	Assignment uint64 `json:"assignment_version,omitempty"`
}

// Error is the answer of every route that fails, with its HTTP status.
type Error struct {
	Error string `json:"error"`
}

// ClusterStatus is the answer of GET /api/v1/cluster and what `sluice
// cluster status --json` prints: the hosts of a pipeline that runs on
// several, the key groups each owns, the migration in progress and the
// checkpoints.
type ClusterStatus struct {
	// Host is the id of the host that answered; omitted by the CLI, which
	// reads the cluster from NATS, not from a host.
	Host string `json:"host,omitempty"`
	// Pipeline is the pipeline's name.
	Pipeline string `json:"pipeline"`
	// KeyGroups is its key group count.
	KeyGroups int `json:"key_groups"`
	// Revision is the assignment's revision in the bucket (0: none yet).
	Revision uint64 `json:"revision"`
	// LeaseSeconds is the cluster's lease: a host that has not renewed
	// for this long is no longer live.
	LeaseSeconds float64 `json:"lease_seconds"`
	// Hosts are every host that has joined, live or not, by id.
	Hosts []ClusterHost `json:"hosts"`
	// Unassigned are the key groups no host owns, and UnassignedRanges
	// the same as ranges.
	Unassigned       []int  `json:"unassigned"`
	UnassignedRanges string `json:"unassigned_ranges"`
	// Whole says the key groups live on one host together, the other
	// hosts standing by: the pipeline has a transactional operator.
	Whole bool `json:"whole"`
	// Placed is the host every key group was placed on (sluice cluster
	// place), where rebalances keep them while it is live; omitted when
	// the groups are spread.
	Placed string `json:"placed,omitempty"`
	// Migration is the migration in progress; null when none is.
	Migration *ClusterMigration `json:"migration"`
	// Checkpoints are the checkpoints in the pipeline's object store, by
	// the host that wrote them, by host id.
	Checkpoints []ClusterCheckpoints `json:"checkpoints"`
	// Versions is the modules a plugin swap recorded for every host, and
	// which live hosts run them; null before the first swap.
	Versions *ClusterVersions `json:"versions"`
	// Workers is the worker counts a scale recorded for every host (or
	// for some), and which live hosts run them; null before the first
	// scale.
	Workers *ClusterWorkers `json:"workers"`
	// PoolEpoch counts the changes of the host pool (0: none yet), and
	// PoolLast describes the last one ("" when none).
	PoolEpoch uint64 `json:"pool_epoch"`
	PoolLast  string `json:"pool_last,omitempty"`
}

// ClusterWorkers is the cluster's workers record in a ClusterStatus: the
// number of workers each scaled operator runs on the hosts, and how far
// the last scale has come.
type ClusterWorkers struct {
	// Epoch counts the scales recorded.
	Epoch uint64 `json:"epoch"`
	// Operators are the recorded counts, by operator name.
	Operators []ClusterOperatorWorkers `json:"operators"`
	// Scaled are the live hosts that run every recorded count.
	Scaled []string `json:"scaled"`
	// Pending are the live hosts that do not yet (by their last report).
	Pending []string `json:"pending"`
}

// ClusterOperatorWorkers is one operator's recorded worker count.
type ClusterOperatorWorkers struct {
	// Operator is the operator's name.
	Operator string `json:"operator"`
	// Count is the number of workers every host runs; 0 when only Hosts
	// give counts.
	Count int `json:"count"`
	// Hosts are the hosts that run another count, by host id; omitted
	// when none.
	Hosts map[string]int `json:"hosts,omitempty"`
	// Epoch is the record's epoch when the count was last changed; By is
	// who changed it ("cli", "host <id>"); At is when.
	Epoch uint64    `json:"epoch"`
	By    string    `json:"by"`
	At    time.Time `json:"at"`
}

// ClusterScale is the answer of POST
// /api/v1/cluster/operators/{name}/workers: the count recorded, for every
// host or for one, and the assignment revision that holds it. The hosts
// apply it at their next batch boundary; GET /api/v1/cluster shows when
// they have.
type ClusterScale struct {
	// Operator is the operator scaled.
	Operator string `json:"operator"`
	// Workers is the count recorded.
	Workers int `json:"workers"`
	// Host is the host the count is for; omitted when it is every host's.
	Host string `json:"host,omitempty"`
	// Epoch is the workers record's epoch after the scale.
	Epoch uint64 `json:"epoch"`
	// Revision is the assignment's revision that holds it.
	Revision uint64 `json:"revision"`
}

// ClusterHostChange is the answer of POST
// /api/v1/cluster/hosts/{id}/activate and .../release: the host's place
// after the change and the pool record's epoch and revision that hold it.
// The coordinator then moves the key groups; GET /api/v1/cluster shows
// when they have.
type ClusterHostChange struct {
	// Host is the host changed.
	Host string `json:"host"`
	// Pool reports whether it is in the pool now.
	Pool bool `json:"pool"`
	// PoolEpoch is the pool's epoch after the change.
	PoolEpoch uint64 `json:"pool_epoch"`
	// PoolHosts are the pool's hosts after it.
	PoolHosts []string `json:"pool_hosts"`
	// Revision is the assignment's revision that holds it.
	Revision uint64 `json:"revision"`
}

// ClusterVersions is the cluster's versions record in a ClusterStatus:
// the module every host must run, per swapped operator, and how far the
// last swap has come.
type ClusterVersions struct {
	// Epoch counts the swaps and rollbacks recorded.
	Epoch uint64 `json:"epoch"`
	// Operators are the recorded modules, by operator name.
	Operators []ClusterOperatorVersion `json:"operators"`
	// Switched are the live hosts that run every recorded module.
	Switched []string `json:"switched"`
	// Pending are the live hosts that do not yet: a swap is in progress
	// while it is not empty (and no migration begins meanwhile).
	Pending []string `json:"pending"`
}

// ClusterOperatorVersion is one operator's recorded module.
type ClusterOperatorVersion struct {
	// Operator is the operator's name.
	Operator string `json:"operator"`
	// SHA256 and Name are the module's hash and name.
	SHA256 string `json:"sha256"`
	Name   string `json:"name"`
	// Epoch is the record's epoch when it was recorded; Reason is swap or
	// rollback; Host is the host that received it; At is when.
	Epoch  uint64    `json:"epoch"`
	Reason string    `json:"reason"`
	Host   string    `json:"host"`
	At     time.Time `json:"at"`
}

// ClusterHost is one host of a ClusterStatus.
type ClusterHost struct {
	// ID is the host's id.
	ID string `json:"id"`
	// Live reports whether the host holds a lease.
	Live bool `json:"live"`
	// Addr is the HTTP address a live host gave; omitted when none.
	Addr string `json:"addr,omitempty"`
	// Started is when a live host started; omitted when unknown.
	Started time.Time `json:"started,omitzero"`
	// LeaseAgeSeconds is how long ago a live host last renewed its lease;
	// omitted for a host that is not live.
	LeaseAgeSeconds *float64 `json:"lease_age_seconds,omitempty"`
	// Groups is the number of key groups the host owns.
	Groups int `json:"groups"`
	// KeyGroups are those groups, and Ranges the same as "0-31, 64-95".
	KeyGroups []int  `json:"key_groups"`
	Ranges    string `json:"ranges"`
	// Operators are the SHA-256s of the modules the host runs, by
	// operator, as it last reported them; omitted before its first
	// report. Epoch is the versions record's epoch it runs whole (0:
	// none).
	Operators map[string]string `json:"operators,omitempty"`
	Epoch     uint64            `json:"epoch"`
	// Workers are the number of workers each stateless or keyed operator
	// runs on the host, as it last reported them; omitted before its
	// first report.
	Workers map[string]int `json:"workers,omitempty"`
	// Pool reports a pool host: one that joined with sluice run --pool
	// (or was given back) and is given no key groups until it is taken
	// into service.
	Pool bool `json:"pool"`
	// Load is the host's last load report (written while the pipeline's
	// control.hosts is on); omitted when none.
	Load *ClusterHostLoad `json:"load,omitempty"`
}

// ClusterHostLoad is a host's load report in a ClusterHost: what the
// cluster-level scaling decision reads.
type ClusterHostLoad struct {
	// Utilisation is the mean share of the last window the host's
	// workers spent busy, 0 to 1.
	Utilisation float64 `json:"utilisation"`
	// Saturated is set when the host's controller wants more workers
	// than control.workers.max allows.
	Saturated bool `json:"saturated"`
	// InputRate is the records per second its sources delivered.
	InputRate float64 `json:"input_rate"`
	// Behind is set when one of its sources has a backlog that grows:
	// no host is given back meanwhile.
	Behind bool `json:"behind,omitempty"`
	// At is when the host wrote it.
	At time.Time `json:"at"`
}

// ClusterMigration is the migration in progress of a ClusterStatus.
type ClusterMigration struct {
	// ID is the migration's id.
	ID string `json:"id"`
	// Step is the current step, from 1, of Steps.
	Step  int `json:"step"`
	Steps int `json:"steps"`
	// State is the current step's state: planned, released or installed.
	State string `json:"state"`
	// Moves are the current step's moves, each with its state.
	Moves []ClusterMove `json:"moves"`
	// GroupsDone counts the groups the migration has installed, of
	// GroupsTotal it moves.
	GroupsDone  int `json:"groups_done"`
	GroupsTotal int `json:"groups_total"`
}

// ClusterMove is one key group's move in a migration.
type ClusterMove struct {
	// Group is the key group.
	Group int `json:"group"`
	// From is the host that owns it before the move ("" if none), To the
	// one after.
	From string `json:"from"`
	To   string `json:"to"`
	// Replicated marks a group whose destination may keep a warm copy of
	// it ahead of the move.
	Replicated bool `json:"replicated,omitempty"`
	// State is how far the move has come: planned, released or installed.
	State string `json:"state"`
}

// ClusterCheckpoints sums the key group checkpoints one host wrote, or
// describes the pipeline's cut (docs/cluster.md).
type ClusterCheckpoints struct {
	// Host is the host that wrote them.
	Host string `json:"host"`
	// Count is the number of key groups, Bytes their size.
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
	// Newest is when the newest of them was put.
	Newest time.Time `json:"newest"`
	// Cut says the entry is the pipeline's cut: every key group's
	// checkpoint at one batch boundary, in one object, as a pipeline
	// with a transactional operator keeps them.
	Cut bool `json:"cut"`
}

// ClusterKnobs are the migration planner's knobs in the body of POST
// /api/v1/cluster/move and .../rebalance; each omitted one is its
// default.
type ClusterKnobs struct {
	// Order is the order each source host's groups move in: keygroup (the
	// default), reverse, random (drawn from Seed) or hottest.
	Order string `json:"order,omitempty"`
	// Batch is the number of key groups each source host moves per step;
	// 0 moves them all in one step.
	Batch int `json:"batch,omitempty"`
	// Global makes Batch count a step's groups over all source hosts.
	Global bool `json:"global,omitempty"`
	// Replicate marks the moves of the groups g with g % Replicate == 0
	// replicated (1: all, 2: half, 0: none).
	Replicate int `json:"replicate,omitempty"`
	// Seed draws the order of Order random.
	Seed uint64 `json:"seed,omitempty"`
}

// ClusterMoveRequest is the body of POST /api/v1/cluster/move: give the
// key groups Groups to the live host To, planned by Knobs.
type ClusterMoveRequest struct {
	Groups []int        `json:"groups"`
	To     string       `json:"to"`
	Knobs  ClusterKnobs `json:"knobs,omitzero"`
}

// ClusterPlaceRequest is the body of POST /api/v1/cluster/place: give
// every key group of the stage that runs Operator (the whole chain, in a
// pipeline not cut into stages) to the live host To, planned by Knobs,
// and keep them there (sluice cluster place).
type ClusterPlaceRequest struct {
	Operator string       `json:"operator"`
	To       string       `json:"to"`
	Knobs    ClusterKnobs `json:"knobs,omitzero"`
}

// ClusterRebalanceRequest is the body of POST /api/v1/cluster/rebalance:
// spread the key groups evenly over the live hosts, planned by Knobs. An
// empty body takes every knob's default.
type ClusterRebalanceRequest struct {
	Knobs ClusterKnobs `json:"knobs,omitzero"`
}

// ClusterStart is the answer of POST /api/v1/cluster/move and
// .../rebalance: the migration started, or null when no key group changes
// owner, and the assignment's revision after it.
type ClusterStart struct {
	Migration *ClusterPlan `json:"migration"`
	Revision  uint64       `json:"revision"`
}

// ClusterPlan is a migration as planned: its id and its steps, each the
// moves it makes.
type ClusterPlan struct {
	ID    string          `json:"id"`
	Steps [][]ClusterMove `json:"steps"`
}

// Control is the answer of GET /api/v1/control and what `sluice doctor`
// prints: the control plane's policies, its view of each worker at the
// last round, the decisions it made and the job doctor's findings.
type Control struct {
	// Enabled is false when the pipeline has no control: section (or
	// turns it off); the rest is then empty.
	Enabled bool `json:"enabled"`
	// Policies are the policies that run, highest priority first.
	Policies []string `json:"policies"`
	// Rounds counts the management rounds run; LastRound is the last
	// one's time.
	Rounds    uint64    `json:"rounds"`
	LastRound time.Time `json:"last_round,omitzero"`
	// LockedUntil is the end of the lock period after the last decision:
	// no decision is applied before it.
	LockedUntil time.Time `json:"locked_until,omitzero"`
	// Workers are the measurements and the latency guarantor's verdict
	// for each worker of each stateless or keyed operator, at the last
	// round.
	Workers []WorkerHealth `json:"workers,omitempty"`
	// Decisions are the last decisions (at most 100), newest first.
	Decisions []Decision `json:"decisions"`
	// Findings are the job doctor's diagnoses at the last round: causes
	// no automatic action fixes, each with its evidence.
	Findings []Finding `json:"findings"`
}

// WorkerHealth is one worker's load and latency as a control round saw
// them.
type WorkerHealth struct {
	Operator string `json:"operator"`
	Worker   int    `json:"worker"`
	// Host is the host the worker runs on (a spread pipeline), "" for a
	// pipeline on one host.
	Host      string `json:"host,omitempty"`
	KeyGroups int    `json:"key_groups"`
	// ArrivalRate is records/s arriving for the worker's key groups (λ);
	// ServiceRate is records it runs per second of busy time (μ, DS2's
	// true processing rate); Utilization is λ/μ.
	ArrivalRate float64 `json:"arrival_rate"`
	ServiceRate float64 `json:"service_rate"`
	Utilization float64 `json:"utilization"`
	// DelaySeconds is the instantaneous delay l: the smoothed mean time
	// from a record's arrival to its processing, over the last seconds.
	DelaySeconds float64 `json:"delay_seconds"`
	// PredictedSeconds is the long-term delay L = 1/(μ-λ); Saturated is
	// set instead when μ <= λ (L is infinite).
	PredictedSeconds float64 `json:"predicted_seconds"`
	Saturated        bool    `json:"saturated,omitempty"`
	// State is the worker's healthiness: good, moderate or severe.
	State string `json:"state"`
}

// Decision is one decision of the control plane: what a policy chose,
// on what evidence, what it predicted, and what happened after.
type Decision struct {
	ID   uint64    `json:"id"`
	Time time.Time `json:"time"`
	// Trigger is what started the round: "period", "request", or
	// "condition: " and the condition (backlog growing, latency over
	// the bound).
	Trigger string `json:"trigger"`
	Policy  string `json:"policy"`
	Action  Action `json:"action"`
	// Reason says in a sentence why the policy chose the action.
	Reason   string     `json:"reason"`
	Evidence []Evidence `json:"evidence,omitempty"`
	// Predicted is what the policy expects once the action is applied.
	Predicted []Evidence `json:"predicted,omitempty"`
	// Outcome is "applied" until it is checked, then "kept" or
	// "rolled back" (it made things worse: Observed says how), or
	// "failed" (the actuator refused it: Error says why).
	Outcome  string     `json:"outcome"`
	Observed []Evidence `json:"observed,omitempty"`
	Error    string     `json:"error,omitempty"`
	// Others are the proposals of other policies in the same round that
	// were not applied (one decision per round, by priority).
	Others []string `json:"others,omitempty"`
}

// Action is what a decision does.
type Action struct {
	// Kind is "move-groups" (key groups to other workers of the
	// operator), "set-workers" (the operator's worker count),
	// "move-host-groups" (key groups to other hosts), or one of the
	// cluster-level scaling decision's: "activate-host" (a pool host
	// into service), "request-host" (the request command run),
	// "release-host" (a host back to the pool).
	Kind     string `json:"kind"`
	Operator string `json:"operator,omitempty"`
	// Host is the host an activate-host or release-host action is about.
	Host string `json:"host,omitempty"`
	// Moves are the key groups a move-groups or move-host-groups action
	// moves, or those a set-workers action places once the count has
	// changed (none: where the executor spreads them).
	Moves []GroupMove `json:"moves,omitempty"`
	// From and To are the worker counts of a set-workers action.
	From int `json:"from,omitempty"`
	To   int `json:"to,omitempty"`
}

// GroupMove is one key group's move: between workers of an operator
// (FromWorker, ToWorker) or between hosts (FromHost, ToHost).
type GroupMove struct {
	Group      int    `json:"group"`
	FromWorker int    `json:"from_worker,omitempty"`
	ToWorker   int    `json:"to_worker,omitempty"`
	FromHost   string `json:"from_host,omitempty"`
	ToHost     string `json:"to_host,omitempty"`
}

// Evidence is one measurement a decision or finding rests on.
type Evidence struct {
	// Name says what was measured, with its subject ("delay of
	// count/1", "arrival rate of key group 7").
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Unit is "s", "records/s", "bytes", "ratio", "count" or "".
	Unit string `json:"unit,omitempty"`
}

// Finding is one diagnosis of the job doctor.
type Finding struct {
	// Cause names the kind of fault: "backlog", "hot-key",
	// "slow-version", "slow-commits", "memory-pressure",
	// "slow-consumer", "straggler" or "idle-with-lag".
	Cause string `json:"cause"`
	// Subject is what the finding is about: an operator, a worker
	// ("count/1"), a key group, a source, the store.
	Subject        string     `json:"subject"`
	Summary        string     `json:"summary"`
	Evidence       []Evidence `json:"evidence,omitempty"`
	Recommendation string     `json:"recommendation"`
	// Since is when the doctor first found it (it is found again at each
	// round while it lasts).
	Since time.Time `json:"since"`
}

// ControlRoundRequest is the body of POST /api/v1/control/round: run a
// management round now.
type ControlRoundRequest struct {
	// Reason is recorded as the round's trigger ("request: " Reason).
	Reason string `json:"reason,omitempty"`
}
