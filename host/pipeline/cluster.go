package pipeline

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Cluster runs the pipeline on several hosts that share one NATS cluster
// (nats.url): each host runs the same file, owns a share of the key
// groups, and key groups move between hosts while the pipeline runs
// (docs/cluster.md).
type Cluster struct {
	// Host is this host's id among the pipeline's hosts: letters, digits,
	// - and _. Default: the machine's host name (cleaned to those). Two
	// hosts of one pipeline must not share an id; give it with --host-id
	// when they run on one machine.
	Host string `yaml:"host"`
	// Lease is how long a host that stops renewing its membership (a
	// crash, a partition) stays a member before its key groups go to the
	// others. Default 10s; at least 1s. The cluster's first host sets it.
	Lease Duration `yaml:"lease"`
	// CheckpointEvery is how often each host ships the key groups changed
	// since its last checkpoint to the NATS object store, from which a
	// host that takes a failed host's groups replays. Default 30s.
	CheckpointEvery Duration `yaml:"checkpoint_every"`
	// Stream is the JetStream stream the input is partitioned into, one
	// subject per key group, which the hosts read their groups from.
	// Default SLUICE_<NAME>_IN (the pipeline's name upper-cased, - as _).
	Stream string `yaml:"stream"`
	// Replicas is the number of copies of the partition stream and of the
	// cluster's buckets in JetStream, 1 to 5. Default 1.
	Replicas int `yaml:"replicas"`
	// Duplicates is the partition stream's and the outputs' de-duplication
	// window: records made again after a failover (those since the failed
	// host's last checkpoint) are dropped by id within it. Default 10m; at
	// least checkpoint_every plus lease.
	Duplicates Duration `yaml:"duplicates"`
	// Stages name operators that each start a stage of their own: the
	// hosts run each stage as a pipeline of its own, with its own key
	// groups, and records go from one stage to the next through a
	// partition stream, so that a stage's operators can be placed on a
	// host apart from the others' (sluice cluster place). Default: none,
	// the whole chain is one stage. Only a chain (no operator names
	// inputs) without a transactional operator can be cut; windowed
	// operators must be in the first stage.
	Stages []string `yaml:"stages"`
}

// Defaults of the cluster section.
const (
	DefaultClusterLease      = 10 * time.Second
	DefaultCheckpointEvery   = 30 * time.Second
	DefaultClusterDuplicates = 10 * time.Minute
)

// validateCluster fills in the cluster section's defaults and checks it
// and what a pipeline spread over hosts can run.
func (p *Pipeline) validateCluster() []error {
	c := p.Cluster
	if c == nil {
		return nil
	}
	var errs []error
	add := func(msg string, path ...any) { errs = append(errs, p.errAt(msg, append([]any{"cluster"}, path...)...)) }
	if c.Host == "" {
		c.Host = DefaultHostID()
	} else if !nameRE.MatchString(c.Host) {
		add(fmt.Sprintf("%q is not a valid host id: use letters, digits, - and _", c.Host), "host")
	}
	switch {
	case c.Lease == 0:
		c.Lease = Duration(DefaultClusterLease)
	case time.Duration(c.Lease) < time.Second:
		add(fmt.Sprintf("lease %s: want at least 1s", time.Duration(c.Lease)), "lease")
	}
	switch {
	case c.CheckpointEvery == 0:
		c.CheckpointEvery = Duration(DefaultCheckpointEvery)
	case c.CheckpointEvery < 0:
		add(fmt.Sprintf("checkpoint_every %s: want a positive duration", time.Duration(c.CheckpointEvery)), "checkpoint_every")
	}
	if c.Stream == "" {
		c.Stream = "SLUICE_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")) + "_IN"
	} else if !nameRE.MatchString(c.Stream) {
		add(fmt.Sprintf("%q is not a valid stream name: use letters, digits, - and _", c.Stream), "stream")
	}
	switch {
	case c.Replicas == 0:
		c.Replicas = 1
	case c.Replicas < 1 || c.Replicas > 5:
		add(fmt.Sprintf("%d replicas: want 1 to 5", c.Replicas), "replicas")
	}
	switch {
	case c.Duplicates == 0:
		c.Duplicates = Duration(DefaultClusterDuplicates)
	case c.Duplicates < c.CheckpointEvery+c.Lease:
		add(fmt.Sprintf("duplicates %s is shorter than checkpoint_every plus lease (%s): records made again after a failover would not be dropped",
			time.Duration(c.Duplicates), time.Duration(c.CheckpointEvery+c.Lease)), "duplicates")
	}
	if len(p.Sources) != 1 {
		add(fmt.Sprintf("a pipeline spread over hosts reads one source (this one has %d): its records are partitioned by key group into one stream", len(p.Sources)))
	} else if t := p.Sources[0].Type; t != "jetstream" && t != "generator" {
		errs = append(errs, p.errAt(fmt.Sprintf("a pipeline spread over hosts reads a jetstream or generator source, which any host can read from any position (not %s)", t), "sources", 0, "type"))
	}
	for i := range p.Operators {
		switch o := &p.Operators[i]; o.Kind {
		case KindJoin:
			errs = append(errs, p.errAt("a window join keeps its open windows in memory and cannot be spread over hosts yet; run this pipeline without cluster", "operators", i, "kind"))
		}
	}
	return append(errs, p.validateStages()...)
}

// Whole reports whether the pipeline's key groups live on one host
// together when it is spread over hosts: it has a transactional operator,
// whose scheduler is one host's and whose transactions, routed by one
// key group's key, write keys of others. The other hosts stand by; the
// groups move all at once (docs/cluster.md).
func (p *Pipeline) Whole() bool {
	return slices.ContainsFunc(p.Operators, func(o Operator) bool { return o.Kind == KindTransactional })
}

// DefaultHostID returns the machine's host name with every character but
// letters, digits, - and _ replaced by -, or "host" when it has none.
func DefaultHostID() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		return "host"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, name)
}
