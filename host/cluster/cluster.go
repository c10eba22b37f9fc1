package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/state"
)

// DefaultLease is the lease of a host when Config.Lease is zero.
const DefaultLease = 10 * time.Second

// MinLease is the shortest lease: the server keeps the markers of expired
// leases, which Watch reports, for at least a second.
const MinLease = time.Second

// updateAttempts bounds Update's retries on conflicting writes.
const updateAttempts = 32

// Keys of the pipeline's bucket.
const (
	keyAssignment = "assignment"
	keyPipeline   = "pipeline"
	keyHostPrefix = "hosts."
)

// Errors a caller may test for with errors.Is.
var (
	// ErrPipelineMismatch: a host joined with a pipeline text that differs
	// from the one the cluster runs (see PipelineMismatchError).
	ErrPipelineMismatch = errors.New("pipeline differs from the cluster's")
	// ErrHostExists: a host joined with the id of a live member.
	ErrHostExists = errors.New("host id in use")
	// ErrConflict: Update gave up after too many conflicting writes.
	ErrConflict = errors.New("too many conflicting writes")
	// ErrNotJoined: Leave or a member's operation on a Cluster that has
	// not joined.
	ErrNotJoined = errors.New("not joined")
	// ErrBadConfig: a Config or HostInfo the package cannot use.
	ErrBadConfig = errors.New("bad cluster configuration")
)

// nameRE is what a pipeline name and a host id may hold: they become parts
// of bucket names and keys.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// Config configures one host's view of a pipeline's cluster.
type Config struct {
	// Pipeline is the pipeline's name; it names the buckets. Two pipeline
	// files with one name share them (and the second one's host is
	// refused by the pipeline check). Required.
	Pipeline string
	// Text is the pipeline's canonical text, compared by Join with the
	// text the cluster runs. Required.
	Text []byte
	// KeyGroups is the pipeline's key group count; 0:
	// state.DefaultKeyGroups. A table of another count is refused.
	KeyGroups int
	// Lease is how long a host stays a member without renewing; it renews
	// every third of it. 0: DefaultLease. The lease is a property of the
	// cluster: the host that creates the lease bucket sets it, and later
	// hosts use the bucket's (and log when theirs differs).
	Lease time.Duration
	// Replicas is the number of replicas of the buckets in a clustered
	// JetStream; 0: 1.
	Replicas int
	// ReplacePipeline lets a host whose text differs from the stored one
	// replace it when no other host is live (a pipeline file edited while
	// the cluster was down). A live member's text is never replaced.
	ReplacePipeline bool
	// Logger receives the lease renewer's warnings; nil: slog.Default().
	Logger *slog.Logger
}

// Cluster is one host's handle on the coordination of a pipeline's hosts:
// the assignment of key groups, membership by leases, and the pipeline
// check. The bucket layout is described in the package documentation.
// Its methods may be called from several goroutines.
type Cluster struct {
	cfg    Config
	lease  time.Duration
	js     jetstream.JetStream
	kv     jetstream.KeyValue // assignment, pipeline text, known hosts
	leases jetstream.KeyValue // one expiring key per live host
	log    *slog.Logger

	mu     sync.Mutex
	member *membership // nil until Join, and after Leave
}

// BucketName returns the name of the key-value bucket that holds pipeline's
// assignment, pipeline text and known hosts.
func BucketName(pipeline string) string { return "sluice-cluster-" + pipeline }

// LeaseBucketName returns the name of the key-value bucket that holds the
// leases of pipeline's live hosts.
func LeaseBucketName(pipeline string) string { return "sluice-leases-" + pipeline }

// Open creates the pipeline's buckets if they do not exist, or binds to
// them, and returns a handle that has not joined: it can read the
// assignment and the members; Join makes the host a member.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Cluster, error) {
	if !nameRE.MatchString(cfg.Pipeline) {
		return nil, fmt.Errorf("cluster: %w: pipeline name %q: use letters, digits, - and _", ErrBadConfig, cfg.Pipeline)
	}
	if len(cfg.Text) == 0 {
		return nil, fmt.Errorf("cluster: pipeline %q: %w: the pipeline text is empty", cfg.Pipeline, ErrBadConfig)
	}
	if cfg.KeyGroups == 0 {
		cfg.KeyGroups = state.DefaultKeyGroups
	}
	if cfg.KeyGroups < 1 || cfg.KeyGroups > state.MaxKeyGroups {
		return nil, fmt.Errorf("cluster: pipeline %q: %w: key groups %d is not between 1 and %d", cfg.Pipeline, ErrBadConfig, cfg.KeyGroups, state.MaxKeyGroups)
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Lease < MinLease {
		return nil, fmt.Errorf("cluster: pipeline %q: %w: lease %v is under the minimum %v", cfg.Pipeline, ErrBadConfig, cfg.Lease, MinLease)
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	c := &Cluster{cfg: cfg, js: js, log: cfg.Logger}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("pipeline", cfg.Pipeline)
	var err error
	c.kv, err = bucket(ctx, js, jetstream.KeyValueConfig{
		Bucket:      BucketName(cfg.Pipeline),
		Description: "sluice cluster of pipeline " + cfg.Pipeline + ": assignment, pipeline text, hosts",
		History:     16,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, err
	}
	if c.kv, err = readFromLeader(ctx, js, c.kv); err != nil {
		return nil, err
	}
	c.leases, err = bucket(ctx, js, jetstream.KeyValueConfig{
		Bucket:         LeaseBucketName(cfg.Pipeline),
		Description:    "sluice cluster of pipeline " + cfg.Pipeline + ": leases of live hosts",
		TTL:            cfg.Lease,
		LimitMarkerTTL: cfg.Lease,
		Replicas:       cfg.Replicas,
	})
	if err != nil {
		return nil, err
	}
	// A lease read from a lagging replica could make a live host look gone.
	if c.leases, err = readFromLeader(ctx, js, c.leases); err != nil {
		return nil, err
	}
	st, err := c.leases.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: %w", LeaseBucketName(cfg.Pipeline), err)
	}
	c.lease = st.TTL()
	if c.lease < MinLease {
		return nil, fmt.Errorf("cluster: bucket %s: %w: its entries expire after %v, under the minimum lease %v", LeaseBucketName(cfg.Pipeline), ErrBadConfig, c.lease, MinLease)
	}
	if c.lease != cfg.Lease {
		c.log.Warn("cluster: the lease bucket's lease differs from the configured one; using the bucket's", "bucket", LeaseBucketName(cfg.Pipeline), "lease", c.lease, "configured", cfg.Lease)
	}
	return c, nil
}

// bucket creates the bucket of cfg, or binds to it when it exists (with
// the configuration it was created with).
func bucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, cfg.Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// readFromLeader makes kv's reads go to its stream's leader. A bucket
// with replicas answers reads from any of them by default (direct gets),
// and a replica that lags answers with an older entry: a host that read
// its own release back as planned would release the groups again, and a
// lease not yet copied would make a live host look gone. The buckets must
// be read as they were last written, so their streams do not allow direct
// gets, and kv is bound again to read that way.
func readFromLeader(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue) (jetstream.KeyValue, error) {
	name := "KV_" + kv.Bucket()
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: %w", kv.Bucket(), err)
	}
	cfg := s.CachedInfo().Config
	if !cfg.AllowDirect {
		return kv, nil
	}
	cfg.AllowDirect = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: reading from its leader only: %w", kv.Bucket(), err)
	}
	if kv, err = js.KeyValue(ctx, kv.Bucket()); err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: %w", kv.Bucket(), err)
	}
	return kv, nil
}

// Lease returns the lease hosts hold in this cluster.
func (c *Cluster) Lease() time.Duration { return c.lease }

// where names the assignment's key in errors.
func (c *Cluster) where() string {
	return fmt.Sprintf("bucket %s key %q", BucketName(c.cfg.Pipeline), keyAssignment)
}

// Assignment reads the assignment. With no entry yet it returns a table of
// unassigned groups at revision 0. An entry that breaks the table's
// invariants (edited by hand) gives an *InvalidError matching
// ErrInvalidAssignment, naming the key and the field at fault.
func (c *Cluster) Assignment(ctx context.Context) (*Assignment, error) {
	a, _, err := c.read(ctx)
	return a, err
}

// read reads the assignment, then the hosts that have joined, and
// validates the one against the other; it returns both. In that order: a
// host joins before any table names it and its entry stays, so the hosts
// listed after the table hold every host it names, where a list taken
// before could miss one that joined, and was given groups, in between.
func (c *Cluster) read(ctx context.Context) (*Assignment, []string, error) {
	e, err := c.kv.Get(ctx, keyAssignment)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil, fmt.Errorf("cluster: reading %s: %w", c.where(), err)
	}
	hosts, herr := c.Known(ctx)
	if herr != nil {
		return nil, nil, herr
	}
	if err != nil { // not found
		return NewAssignment(c.cfg.KeyGroups), hosts, nil
	}
	a, err := decodeAssignment(e.Value())
	if err == nil {
		err = c.validate(a, hosts)
	}
	if err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) {
			ie.Key = fmt.Sprintf("%s (revision %d)", c.where(), e.Revision())
		}
		return nil, nil, err
	}
	a.Revision = e.Revision()
	return a, hosts, nil
}

// validate checks a against the pipeline's group count and hosts.
func (c *Cluster) validate(a *Assignment, hosts []string) error {
	if a.KeyGroups != c.cfg.KeyGroups {
		return invalid("key_groups", "%d, but pipeline %q has %d key groups", a.KeyGroups, c.cfg.Pipeline, c.cfg.KeyGroups)
	}
	return a.Validate(hosts)
}

// Update changes the assignment by compare-and-set: it reads the table,
// applies fn to a copy, validates the result and writes it with the
// revision it read; when another writer got there first it reads again
// and retries (fn may run several times, so it must be pure: no effects
// but on the table it is given). It returns the table written, with its
// revision. An error of fn is returned as it is, and nothing is written;
// a stored table that is invalid, or a result that is, gives an error
// matching ErrInvalidAssignment, and nothing is written. After 32
// conflicting writes it gives up with an error matching ErrConflict.
func (c *Cluster) Update(ctx context.Context, fn func(*Assignment) error) (*Assignment, error) {
	for attempt := range updateAttempts {
		cur, hosts, err := c.read(ctx)
		if err != nil {
			return nil, err
		}
		next := cur.Clone()
		if err := fn(next); err != nil {
			return nil, err
		}
		next.Revision = cur.Revision
		if err := c.validate(next, hosts); err != nil {
			return nil, fmt.Errorf("cluster: update of %s refused: %w", c.where(), err)
		}
		data, err := json.Marshal(next)
		if err != nil {
			return nil, fmt.Errorf("cluster: encoding the assignment: %w", err)
		}
		var rev uint64
		if cur.Revision == 0 {
			rev, err = c.kv.Create(ctx, keyAssignment, data)
		} else {
			rev, err = c.kv.Update(ctx, keyAssignment, data, cur.Revision)
		}
		if err == nil {
			next.Revision = rev
			return next, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, fmt.Errorf("cluster: writing %s: %w", c.where(), err)
		}
		// Another writer won: back off a little, at random, so that
		// racing writers spread out, and try again.
		wait := time.Duration(rand.N(int64(attempt+1))+1) * time.Millisecond
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: updating %s: %w", c.where(), ctx.Err())
		}
	}
	return nil, fmt.Errorf("cluster: updating %s: %w (%d attempts)", c.where(), ErrConflict, updateAttempts)
}

// Known returns the ids of every host that has joined the cluster (live or
// not), sorted: the hosts an assignment may name.
func (c *Cluster) Known(ctx context.Context) ([]string, error) {
	es, err := entries(ctx, c.js, c.kv, keyHostPrefix+">")
	if err != nil {
		return nil, fmt.Errorf("cluster: listing hosts in bucket %s: %w", BucketName(c.cfg.Pipeline), err)
	}
	ids := make([]string, 0, len(es))
	for _, e := range es {
		ids = append(ids, strings.TrimPrefix(e.Key(), keyHostPrefix))
	}
	slices.Sort(ids)
	return ids, nil
}

// entries returns the live entries of kv whose keys match filter, read
// from js. It takes the keys from the stream's own list of subjects (one
// answer from the server) and then reads each key's last entry. A watch's
// initial values cannot serve here: the server lists the last message of
// each subject when the watch starts, skips one overwritten meanwhile, and
// sends the new one after the end-of-initial-values marker, so a lease
// renewed during a listing went missing from it and a live host looked
// dead. A key deleted or expired between the two reads is left out, as it
// would be a moment later.
func entries(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, filter string) ([]jetstream.KeyValueEntry, error) {
	s, err := js.Stream(ctx, "KV_"+kv.Bucket())
	if err != nil {
		return nil, err
	}
	prefix := "$KV." + kv.Bucket() + "."
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(prefix+filter))
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		keys = append(keys, strings.TrimPrefix(subj, prefix))
	}
	slices.Sort(keys)
	out := make([]jetstream.KeyValueEntry, 0, len(keys))
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// stopWatcher stops w and drains what it still delivers, so that its
// delivery goroutine, blocked on a full channel, can end.
func stopWatcher(w jetstream.KeyWatcher) {
	_ = w.Stop()
	for range w.Updates() {
	}
}

// PipelineMismatchError is the error of a host that joins with a pipeline
// text that differs from the cluster's. It matches ErrPipelineMismatch.
type PipelineMismatchError struct {
	// Pipeline is the pipeline's name.
	Pipeline string
	// Line is the first line (from 1) that differs.
	Line int
	// Cluster and Host are that line in the cluster's text and in the
	// host's; "" where the text has ended.
	Cluster, Host string
	// ClusterEnded and HostEnded report a text that has no such line.
	ClusterEnded, HostEnded bool
}

// Error implements error.
func (e *PipelineMismatchError) Error() string {
	show := func(line string, ended bool) string {
		if ended {
			return "(end of file)"
		}
		return fmt.Sprintf("%q", line)
	}
	return fmt.Sprintf("cluster: pipeline %q: %v: line %d is %s in the cluster's and %s in this host's",
		e.Pipeline, ErrPipelineMismatch, e.Line, show(e.Cluster, e.ClusterEnded), show(e.Host, e.HostEnded))
}

// Unwrap returns ErrPipelineMismatch.
func (e *PipelineMismatchError) Unwrap() error { return ErrPipelineMismatch }

// mismatch returns the error naming the first line where the cluster's
// text and the host's differ; they must differ.
func mismatch(pipeline string, cluster, host []byte) *PipelineMismatchError {
	cl, hl := lines(cluster), lines(host)
	i := 0
	for i < len(cl) && i < len(hl) && cl[i] == hl[i] {
		i++
	}
	e := &PipelineMismatchError{Pipeline: pipeline, Line: i + 1}
	if i < len(cl) {
		e.Cluster = strings.TrimSuffix(cl[i], "\n")
	} else {
		e.ClusterEnded = true
	}
	if i < len(hl) {
		e.Host = strings.TrimSuffix(hl[i], "\n")
	} else {
		e.HostEnded = true
	}
	if !e.ClusterEnded && !e.HostEnded && e.Cluster == e.Host {
		// The lines differ only by the newline of the last one.
		if strings.HasSuffix(cl[i], "\n") {
			e.Host += " (no newline at the end)"
		} else {
			e.Cluster += " (no newline at the end)"
		}
	}
	return e
}

// lines splits text into its lines, each with its newline.
func lines(text []byte) []string {
	ls := strings.SplitAfter(string(text), "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// checkPipeline compares the host's text with the cluster's; the first
// host writes it. self is the joining host, whose lease exists already, so
// that of two hosts that join at once with different texts at most one
// replaces the stored text (each sees the other's lease, or one of them
// writes first and the other reads its text).
func (c *Cluster) checkPipeline(ctx context.Context, self string) error {
	for range updateAttempts {
		e, err := c.kv.Get(ctx, keyPipeline)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			_, err = c.kv.Create(ctx, keyPipeline, c.cfg.Text)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			if err != nil {
				return fmt.Errorf("cluster: writing bucket %s key %q: %w", BucketName(c.cfg.Pipeline), keyPipeline, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("cluster: reading bucket %s key %q: %w", BucketName(c.cfg.Pipeline), keyPipeline, err)
		}
		if string(e.Value()) == string(c.cfg.Text) {
			return nil
		}
		if !c.cfg.ReplacePipeline {
			return mismatch(c.cfg.Pipeline, e.Value(), c.cfg.Text)
		}
		members, err := c.Members(ctx)
		if err != nil {
			return err
		}
		for _, m := range members {
			if m.ID != self {
				err := mismatch(c.cfg.Pipeline, e.Value(), c.cfg.Text)
				return fmt.Errorf("%w (not replaced: host %s is live)", err, m.ID)
			}
		}
		_, err = c.kv.Update(ctx, keyPipeline, c.cfg.Text, e.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cluster: writing bucket %s key %q: %w", BucketName(c.cfg.Pipeline), keyPipeline, err)
		}
		c.log.Info("cluster: replaced the pipeline text no live host ran", "host", self)
		return nil
	}
	return fmt.Errorf("cluster: writing bucket %s key %q: %w", BucketName(c.cfg.Pipeline), keyPipeline, ErrConflict)
}
