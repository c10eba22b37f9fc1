package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/checkpoint"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/migrate"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/state"
)

// A pipeline with a cluster section runs on several hosts (docs/cluster.md).
// Each host runs two jobs (a stage after the first of a pipeline cut into
// stages, only the second: the stage before it feeds its partition
// stream):
//
//   - the ingest, on the host that owns key group 0 (so exactly one host
//     runs it once the assignment settles, and it moves with that group):
//     it reads the pipeline's source and publishes each record to the
//     partition stream, on the subject of its key group, with an id from
//     its source position, so that two ingests for a moment (one handing
//     over, one taking over) store each record once;
//   - the host's own job, which runs the pipeline's operators and sinks
//     over the key groups the host owns, read from the partition stream.
//
// Key groups move with package migrate; the host joins the cluster by a
// lease, and the live host with the lowest id rebalances the groups over
// the live hosts whenever they change (a host joins, leaves or fails),
// first giving a failed host's groups to the others in one step
// (migrate.Coordinate).

// clusterPeriod is how often a host looks at the assignment: for its part
// in a migration, and, as the coordinator, for a rebalance.
const clusterPeriod = 200 * time.Millisecond

// clusterHost is what a host of a pipeline spread over hosts holds.
type clusterHost struct {
	cfg    *pipeline.Cluster
	id     string
	pool   bool // started with --pool
	c      *cluster.Cluster
	ckpt   *checkpoint.Bucket
	mig    *migrate.Host // set by runCluster, under Host.ctlMu
	prefix string        // the partition stream's subject prefix
	groups int
	src    *pipeline.Source // the pipeline's source, which the ingest reads
	js     jetstream.JetStream
	mods   *cluster.Modules // the modules swaps recorded, by SHA-256
	// reported is the host's last report of the modules it runs (nil
	// before the first); guarded by Host.ctlMu.
	reported *cluster.Running
	// scaled is, per operator, the epoch of the workers record's count
	// the host has applied (or refused); guarded by Host.ctlMu.
	scaled map[string]uint64
	// epoch is the plugin versions epoch the host runs: the record's,
	// noted when the host starts with it and before it switches to a new
	// one (so a checkpoint made during a switch claims the later epoch,
	// which only makes a host of the earlier one wait).
	epoch  atomic.Uint64
	ingest *ingest    // running while the host owns key group 0
	mu     sync.Mutex // guards ingest
}

// openCluster opens the pipeline's cluster buckets and its module store
// for host hostID (cluster.host when ""), without joining, and returns the
// assignment, whose versions and workers records say the modules the
// host must load and the workers it starts its operators with. A table
// that is invalid (edited by hand) fails the start.
func (h *Host) openCluster(ctx context.Context, hostID string, pool bool) (*cluster.Assignment, error) {
	p := h.p
	cfg := p.Cluster
	id := cfg.Host
	if hostID != "" {
		id = hostID
	}
	text, err := os.ReadFile(p.File)
	if err != nil {
		return nil, fmt.Errorf("the pipeline file: %w", err)
	}
	js, err := jetstream.New(h.nc)
	if err != nil {
		return nil, err
	}
	ch := &clusterHost{cfg: cfg, id: id, pool: pool, prefix: pipeline.PartitionPrefix(p.Name), groups: p.State.KeyGroups, src: &p.Sources[0], js: js}
	var a *cluster.Assignment
	err = natsconn.UntilAnswered(ctx, h.log, unanswered, func() error {
		var err error
		ch.c, err = cluster.Open(ctx, js, cluster.Config{Pipeline: p.Name, Text: text, KeyGroups: p.State.KeyGroups,
			Lease: time.Duration(cfg.Lease), Replicas: cfg.Replicas, Logger: h.log})
		if err != nil {
			return err
		}
		if ch.mods, err = cluster.OpenModules(ctx, js, p.Name, cfg.Replicas); err != nil {
			return err
		}
		a, err = ch.c.Assignment(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	if a.Versions != nil {
		ch.noteEpoch(a.Versions.Epoch)
	}
	h.cluster = ch
	return a, nil
}

// unanswered reports whether err is JetStream not answering yet
// (natsconn.Unanswered), or a stream not found: one that another host's
// start creates at the same time.
func unanswered(ctx context.Context, err error) bool {
	return natsconn.Unanswered(ctx, err) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound)
}

// startCluster joins the cluster and returns the source the host's job
// reads (its key groups of the partition stream) and the groups it owns.
func (h *Host) startCluster(ctx context.Context) (connectors.Source, []int, error) {
	p := h.p
	ch := h.cluster
	cfg, id, js := ch.cfg, ch.id, ch.js
	// Each step can be taken again (Join finds its own lease, joinTable
	// changes a table once), so a NATS cluster electing leaders (a server
	// lost) only delays the start.
	info := cluster.HostInfo{ID: id, Started: time.Now()}
	if err := natsconn.UntilAnswered(ctx, h.log, unanswered, func() error { return ch.c.Join(context.WithoutCancel(ctx), info) }); err != nil {
		return nil, nil, fmt.Errorf("cluster: join as host %q: %w", id, err)
	}
	var a *cluster.Assignment
	var src *natsconn.PartitionedSource
	err := natsconn.UntilAnswered(ctx, h.log, unanswered, func() error {
		var err error
		if a, err = ch.c.Update(ctx, func(a *cluster.Assignment) error { return joinTable(a, id, ch.pool, p.Whole()) }); err != nil {
			return err
		}
		if ch.ckpt, err = checkpoint.Open(ctx, js, p.Name, checkpoint.Options{Host: id, Replicas: cfg.Replicas, Logger: h.log}); err != nil {
			return err
		}
		spec := &natsconn.StreamSpec{Subjects: []string{ch.prefix + ".*"}, Replicas: cfg.Replicas, Duplicates: time.Duration(cfg.Duplicates)}
		src, err = natsconn.NewPartitionedSource(h.nc, natsconn.PartitionedSourceConfig{Stream: cfg.Stream, Prefix: ch.prefix,
			KeyGroups: ch.groups, CreateStream: spec, Name: p.Sources[0].Name, Logger: h.log})
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	owned := migrate.Owned(a, id)
	h.log.Info("joined the cluster", "host", id, "key_groups", len(owned), "of", ch.groups, "pool", a.Pooled(id))
	return src, owned, nil
}

// joinTable is the change of the assignment a host that joins makes. The
// first host takes every key group, a pool host too (rather than leave
// the pipeline unserved). A host started with --pool (pool) that owns no
// group joins the pool; one that owns groups (taken into service before
// it restarted) keeps them. A host started without --pool that the pool
// holds is taken into service: the flag says what the host is for. whole
// is the pipeline's pipeline.Whole: it marks the table Whole, so that its
// key groups stay on one host together.
func joinTable(a *cluster.Assignment, id string, pool, whole bool) error {
	a.Whole = whole
	by := "host " + id
	switch {
	case !slices.ContainsFunc(a.Owners, func(o string) bool { return o != "" }):
		a.Owners = cluster.Spread(a.KeyGroups, []string{id}) // the first host takes every group
		if a.Pooled(id) {
			return a.Activate(cluster.PoolChange{Host: id, By: by, Reason: "the first host takes every key group"})
		}
	case pool && !a.Pooled(id) && migrate.Drained(a, id):
		return a.AddToPool(cluster.PoolChange{Host: id, By: by, Reason: "started with --pool"})
	case !pool && a.Pooled(id):
		return a.Activate(cluster.PoolChange{Host: id, By: by, Reason: "started without --pool"})
	}
	return nil
}

// runCluster runs the host's job with its part in the cluster until ctx
// is done (then, if other hosts are live, it hands its key groups over
// first) or the job fails.
func (h *Host) runCluster(ctx context.Context, dataDir string) error {
	ch := h.cluster
	// Under ctlMu: a swap through the API (switched) reads it.
	h.ctlMu.Lock()
	ch.mig = &migrate.Host{ID: ch.id, Job: h.job, Cluster: ch.c, Checkpoints: ch.ckpt, Logger: h.log,
		CheckpointEvery: time.Duration(ch.cfg.CheckpointEvery), Epoch: ch.epoch.Load, Whole: h.p.Whole()}
	h.ctlMu.Unlock()
	if err := natsconn.UntilAnswered(ctx, h.log, unanswered, func() error { return h.firstCut(ctx) }); err != nil {
		return fmt.Errorf("cluster: the first checkpoint of the key groups: %w", err)
	}
	jobCtx, stopJob := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJob()
	jobDone := make(chan error, 1)
	go func() { jobDone <- runUntilFailed(jobCtx, h.store, h.log, h.job.Run) }()

	loopCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	var loops sync.WaitGroup
	// The cluster's loops outlive what NATS does meanwhile (a server
	// restarting, a leader being elected): a failed round is logged and
	// tried again, and the job keeps its groups meanwhile.
	loops.Go(func() { retry(loopCtx, h.log, "migration", func() error { return ch.mig.Run(loopCtx, clusterPeriod) }) })
	loops.Go(func() { migrate.Coordinate(loopCtx, ch.c, ch.id, clusterPeriod, h.log) })
	if st := h.p.Stage; st == nil || st.Index == 0 {
		// A later stage's partition stream is fed by the stage before it.
		loops.Go(func() { retry(loopCtx, h.log, "ingest", func() error { return h.manageIngest(loopCtx, dataDir) }) })
	}
	loops.Go(func() { _ = h.followVersions(loopCtx) })
	loops.Go(func() { h.runHosts(loopCtx) })
	defer func() {
		stopLoops()
		loops.Wait()
		h.stopIngest()
	}()

	var err error
	select {
	case err = <-jobDone:
		return err
	case <-ch.c.Lost():
		err = fmt.Errorf("cluster: host %q lost its lease (it did not renew in time): its key groups may be another host's now; stopping", ch.id)
	case <-ctx.Done():
		ch.handOver(context.WithoutCancel(ctx), h.log)
	}
	stopJob()
	if jerr := <-jobDone; err == nil {
		err = jerr
	}
	return err
}

// firstCut puts the first cut of a pipeline whose key groups live on one
// host together (pipeline.Whole), when this host owns them all, has
// committed no record and the bucket holds no cut: every group as it
// stands before the first record (a transactional operator's initial
// tables), with every floor 0. Without it, a failover before the host's
// first periodic checkpoint would install the groups empty, without
// their initial tables.
func (h *Host) firstCut(ctx context.Context) error {
	ch := h.cluster
	if !h.p.Whole() || len(h.job.Groups()) != ch.groups {
		return nil
	}
	for k, pos := range h.store.Positions() {
		if pos > 0 && !strings.HasPrefix(k, "sink/") {
			return nil // a record was read (a source's position or floor)
		}
	}
	if has, err := ch.ckpt.HasCut(ctx); err != nil || has {
		return err
	}
	groups := make([]checkpoint.Group, ch.groups)
	for kg := range groups {
		data, err := h.store.ExportKeyGroup(kg)
		if err != nil {
			return fmt.Errorf("key group %d: %w", kg, err)
		}
		meta, err := json.Marshal(h.job.EmptyGroup(kg).Floors)
		if err != nil {
			return fmt.Errorf("key group %d: %w", kg, err)
		}
		groups[kg] = checkpoint.Group{KeyGroup: kg, Host: ch.id, Meta: meta, Data: data}
	}
	am, err := ch.ckpt.PutCut(ctx, ch.epoch.Load(), groups)
	if err != nil {
		return err
	}
	h.log.Info("cluster: the key groups' first checkpoint put, before any record", "groups", ch.groups, "bytes", am.Bytes)
	return nil
}

// retryPause is how long a cluster loop that failed waits before it runs
// again.
const retryPause = time.Second

// retry runs loop until ctx is done, running it again, after a warning
// and a pause, whenever it fails.
func retry(ctx context.Context, log *slog.Logger, what string, loop func() error) {
	for ctx.Err() == nil {
		err := loop()
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Warn("cluster: "+what+" failed; trying again", "err", err, "in", retryPause)
		select {
		case <-ctx.Done():
		case <-time.After(retryPause):
		}
	}
}

// handOverLimit bounds how long a host that is asked to stop waits for
// its key groups to move to the others.
const handOverLimit = time.Minute

// handOver moves the host's key groups to the other live hosts before it
// stops, and leaves the cluster. Without other hosts it just leaves: its
// groups stay assigned to it, and it takes them back when it starts again.
func (ch *clusterHost) handOver(ctx context.Context, log *slog.Logger) {
	leaveCtx := ctx
	defer func() {
		if err := ch.c.Leave(leaveCtx); err != nil {
			log.Warn("cluster: leaving", "err", err)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, handOverLimit)
	defer cancel()
	for first := true; ctx.Err() == nil; first = false {
		// The live hosts are read again each round: another host may be
		// stopping too (every host of the cluster stopped at once), and
		// one that has left must not be given the groups.
		live, err := migrate.Live(ctx, ch.c)
		if err != nil {
			log.Warn("cluster: cannot hand the key groups over", "err", err)
			return
		}
		a, err := ch.c.Assignment(ctx)
		if err != nil {
			log.Warn("cluster: cannot hand the key groups over", "err", err)
			return
		}
		owned := len(migrate.Owned(a, ch.id)) > 0
		if !owned && a.Migration == nil {
			if !first {
				log.Info("cluster: every key group handed over")
			}
			return
		}
		if a.Migration == nil {
			others := slices.DeleteFunc(a.Active(live), func(id string) bool { return id == ch.id })
			if len(others) == 0 {
				// No other active host: the host keeps its groups and
				// takes them back when it starts again; a live pool host,
				// if any, is taken into service by the coordinator once
				// this host's lease is gone.
				if !first {
					log.Info("cluster: no other active host is live; keeping the key groups")
				}
				return
			}
			if _, err := migrate.Start(ctx, ch.c, "leave-"+ch.id, a.Balanced(others), cluster.AllAtOnce(), nil); err == nil {
				log.Info("cluster: handing the key groups over before stopping", "to", others)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(clusterPeriod):
		}
	}
	log.Warn("cluster: stopped before every key group was handed over; the others take the rest when its lease expires")
}

// ingest is the job that partitions the pipeline's source.
type ingest struct {
	job   *exec.Job
	store *state.Store
	src   connectors.Source
	sink  connectors.Sink
	dead  connectors.Sink
	stop  context.CancelFunc
	done  chan error
}

// manageIngest runs the ingest while the host owns key group 0, checking
// on every period.
func (h *Host) manageIngest(ctx context.Context, dataDir string) error {
	t := time.NewTicker(clusterPeriod)
	defer t.Stop()
	for {
		ch := h.cluster
		own := slices.Contains(h.job.Groups(), 0)
		ch.mu.Lock()
		running := ch.ingest != nil
		ch.mu.Unlock()
		switch {
		case own && !running:
			if err := h.startIngest(ctx, dataDir); err != nil {
				return err
			}
		case !own && running:
			h.stopIngest()
		case running:
			select {
			case err := <-ch.ingest.done:
				ch.ingest.done <- err // for stopIngest
				if err != nil {
					// Started again in the next round, from what it committed.
					h.stopIngest()
					return err
				}
			default:
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ingestResumeMargin is how many source positions before the last one it
// finds in the partition stream a new ingest starts from: the records the
// one before it may have had in flight, which the stream then stores once.
const ingestResumeMargin = 4096

// startIngest starts the ingest job: the pipeline's source into the
// partition stream.
func (h *Host) startIngest(ctx context.Context, dataDir string) error {
	ch := h.cluster
	p := h.p
	store, err := state.Open(filepath.Join(dataDir, "ingest"), state.Options{Logger: h.log})
	if err != nil {
		return err
	}
	in := &ingest{store: store, done: make(chan error, 1)}
	fail := func(err error) error {
		if in.src != nil {
			in.src.Close()
		}
		if in.sink != nil {
			in.sink.Close()
		}
		if in.dead != nil {
			in.dead.Close()
		}
		store.Close()
		return err
	}
	if in.src, err = h.source(ctx, ch.src); err != nil {
		return fail(err)
	}
	sink, err := natsconn.NewJetStreamSink(ctx, h.nc, natsconn.JetStreamSinkConfig{Subject: ch.prefix, Stream: ch.cfg.Stream,
		KeyGroups: ch.groups, KeyGroup: state.KeyGroup, Name: "partition", Logger: h.log})
	if err != nil {
		return fail(err)
	}
	in.sink = sink
	// An ingest that takes over from another host has no position of its
	// own: it starts a little before the last one the stream holds.
	name := p.Name + "-ingest"
	if _, ok := store.Positions()[ch.src.Name]; !ok {
		if pos, ok, err := lastIngested(ctx, h.nc, ch.cfg.Stream, name, ch.src.Name); err != nil {
			return fail(err)
		} else if ok {
			from := uint64(0)
			if pos > ingestResumeMargin {
				from = pos - ingestResumeMargin
			}
			if err := store.Commit(map[string]uint64{ch.src.Name: from}); err != nil {
				return fail(err)
			}
			h.log.Info("cluster: ingest takes over", "after", from, "last_in_stream", pos)
		}
	}
	// Records the source cannot decode are dead-lettered by the ingest,
	// to a file of their own: the host's job has its own.
	deadPath := filepath.Join(dataDir, "ingest-"+pipeline.DefaultDeadLetterFile)
	deadFile, err := file.NewSink(file.SinkConfig{Path: deadPath, Name: "dead_letter"})
	if err != nil {
		return fail(err)
	}
	in.dead = deadLetterFile{Sink: deadFile, path: deadPath, log: h.log}
	in.job, err = exec.New(ctx, exec.Config{Name: name, Sources: []exec.Input{{Name: ch.src.Name, Source: in.src}},
		Sinks: []exec.Output{{Name: "partition", Sink: sink}}, DeadLetter: in.dead, Store: store,
		BatchSize: p.Batch.Size, Linger: time.Duration(p.Batch.Linger), Logger: h.log.With("job", "ingest")})
	if err != nil {
		return fail(err)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	in.stop = stop
	go func() { in.done <- in.job.Run(runCtx) }()
	ch.mu.Lock()
	ch.ingest = in
	ch.mu.Unlock()
	h.log.Info("cluster: this host ingests the source into the partition stream", "source", ch.src.Name, "stream", ch.cfg.Stream)
	return nil
}

// stopIngest stops the ingest job, if it runs, after it commits what it
// read.
func (h *Host) stopIngest() {
	ch := h.cluster
	if ch == nil {
		return
	}
	ch.mu.Lock()
	in := ch.ingest
	ch.ingest = nil
	ch.mu.Unlock()
	if in == nil {
		return
	}
	in.stop()
	if err := <-in.done; err != nil {
		h.log.Warn("cluster: the ingest stopped with an error", "err", err)
	}
	ctx := context.Background()
	_ = in.job.Close(ctx)
	_ = in.sink.Close()
	_ = in.dead.Close()
	_ = in.src.Close()
	_ = in.store.Close()
	h.log.Info("cluster: this host stopped ingesting the source")
}

// lastIngested returns the source position of the last record the
// partition stream holds from the ingest job named job, from its message
// id ("<job>/<source>/<position>/<n>").
func lastIngested(ctx context.Context, nc *nats.Conn, stream, job, source string) (uint64, bool, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, false, err
	}
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("stream %s: %w", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("stream %s: %w", stream, err)
	}
	if info.State.Msgs == 0 {
		return 0, false, nil
	}
	m, err := s.GetMsg(ctx, info.State.LastSeq)
	if err != nil {
		return 0, false, fmt.Errorf("stream %s: the last message: %w", stream, err)
	}
	id := m.Header.Get(jetstream.MsgIDHeader)
	parts := strings.Split(id, "/")
	if len(parts) != 4 || parts[0] != job || parts[1] != source {
		return 0, false, fmt.Errorf("stream %s: the last message's id %q is not one of ingest %s from source %s: is the stream another pipeline's?", stream, id, job, source)
	}
	pos, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("stream %s: the last message's id %q: %w", stream, id, err)
	}
	return pos, true, nil
}

// migrating reports whether key groups are moving between the hosts (a
// migration in the assignment), or whether that cannot be told: the
// control plane applies nothing meanwhile.
func (ch *clusterHost) migrating() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a, err := ch.c.Assignment(ctx)
	return err != nil || a.Migration != nil
}
