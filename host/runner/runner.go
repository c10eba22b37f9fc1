// Package runner turns a pipeline file into a running host: it compiles
// and checks the plugins (saying in the log which it compiles and which it
// finds in the compile cache), opens the state store, starts the embedded
// NATS server or connects to the one configured (only for a pipeline that
// uses NATS), builds the sources and sinks, serves the HTTP API and runs
// the job until it ends.
//
// A transactional operator's plugin is loaded for that kind and runs as a
// txnop.Operator with one plugin instance per scheduler worker. Its tables
// are given their initial contents (a JSON Lines file or a workload
// generator's table) at the pipeline's first start only: when no batch was
// ever committed and the table is empty, all tables in one commit, so that
// a restart never overwrites state with the initial contents.
//
// Data directory layout (pipeline data_dir, or --data-dir):
//
//	state/     committed state and source positions (Pebble)
//	nats/      the embedded NATS server's JetStream store
//	cache/     compiled plugin code, so restarts skip compilation
//	plugins/   the plugin registry: every module deployed, by SHA-256, and
//	           the deployments log (package registry)
//	api-token  the bearer token of the API (mode 0600)
//	api-addr   the address the API listens on, while the host runs
//	uploads/   swaps' modules while they arrive (emptied at start)
//	dead-letters.jsonl  the dead letters, unless dead_letter says otherwise
//
// Plugins change at run time through the API (control.go): a swap checks
// and loads the new module on the operator's own engine (its limits and
// grants), refuses one with another ABI version or one that lacks what the
// operator's kind needs, and hands it to exec.Job.Swap; a rollback deploys
// the module that ran before. Each operator's history is kept in memory
// and recorded in the registry's deployments log.
// On a host of a pipeline spread over hosts, a swap or rollback is
// recorded for every host, which follow it (clusterswap.go, and the
// versions record of package cluster).
package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/connectors/generator"
	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/control"
	"github.com/sluicehq/sluice/host/dashboard"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/registry"
	"github.com/sluicehq/sluice/host/txnop"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// Options override what the pipeline file says.
type Options struct {
	// DataDir overrides data_dir.
	DataDir string
	// NATSURL overrides nats.url.
	NATSURL string
	// HTTPAddr overrides http.addr; "off" disables the HTTP server.
	HTTPAddr string
	// Logger receives the host's log; nil: slog.Default().
	Logger *slog.Logger
	// Version is the host's version, which the dashboard shows.
	Version string
	// HostID overrides cluster.host: this host's id among the hosts of a
	// pipeline spread over several.
	HostID string
	// Pool makes the host join its pipeline's cluster as a pool host:
	// live, but given no key groups until it is taken into service
	// (docs/cluster.md). Start refuses it for a pipeline without a
	// cluster section.
	Pool bool
	// Compiler compiles the operators' modules into the compilation
	// cache before their engines load them (runtime.Compiler); nil: the
	// engines compile them in this process. The sluice binary compiles in
	// a child process at the lowest CPU priority, so that a module swapped
	// in while the pipeline runs does not take its CPU.
	Compiler wasm.Compiler
}

// Host is a pipeline ready to run, with everything it opened.
type Host struct {
	p       *pipeline.Pipeline
	log     *slog.Logger
	job     *exec.Job
	metrics *exec.Metrics

	embedded *natsconn.Embedded
	nc       *nats.Conn
	store    *state.Store
	engines  []wasm.Engine
	sources  []connectors.Source
	sinks    []connectors.Sink
	http     *api.Server
	natsURL  string
	// deadLetters is where dead letters go (DeadLetters).
	deadLetters string
	// addrFile is the file the HTTP API's address was written to, removed
	// by Close.
	addrFile string
	// cluster is the host's part in a pipeline spread over hosts (nil:
	// the host runs the whole pipeline); dataDir is its data directory.
	cluster *clusterHost
	dataDir string
	// txnOps are transactional operators built before the job: exec.New
	// takes them over; until then Close closes them.
	txnOps []*txnop.Operator

	// The plugin lifecycle (control.go): the registry, each operator's
	// deployment, ctlMu serialising swaps, prepares and rollbacks,
	// dataMu guarding the deployments' fields (short holds only: the
	// executor's OnRollback takes it). closing, under ctlMu, refuses
	// prepares once Close has closed the prepared modules.
	reg      *registry.Registry
	deployed map[string]*deployed
	ctlMu    sync.Mutex
	dataMu   sync.Mutex
	closing  bool
	token    string

	// ctrl is the control plane (manage.go), nil when the pipeline has
	// none; slowConsumers counts the NATS client's slow-consumer errors.
	ctrl          *control.Controller
	slowConsumers atomic.Uint64
}

// Start prepares p to run: on any error, everything opened so far is closed
// again and the error names what failed.
func Start(ctx context.Context, p *pipeline.Pipeline, opts Options) (_ *Host, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	h := &Host{p: p, log: log.With("pipeline", p.Name), metrics: exec.NewMetrics()}
	defer func() {
		if err != nil {
			h.Close(context.WithoutCancel(ctx))
		}
	}()
	dataDir := p.DataDir
	if opts.DataDir != "" {
		dataDir = opts.DataDir
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	h.reg, err = registry.Open(filepath.Join(dataDir, "plugins"))
	if err != nil {
		return nil, err
	}
	h.deployed = map[string]*deployed{}

	// A host of a pipeline spread over hosts runs the modules the
	// cluster's versions record names (a swap made on any host), not the
	// file's, and the worker counts its workers record gives (a scale):
	// it reads the records before it loads the plugins.
	var recorded *cluster.Assignment
	if opts.Pool && p.Cluster == nil {
		return nil, fmt.Errorf("%s: --pool makes a host a pool host of a pipeline spread over hosts, and this pipeline has no cluster: section (docs/cluster.md)", p.File)
	}
	if p.Cluster != nil {
		if p.NATS.URL == "" && opts.NATSURL == "" {
			return nil, p.ErrorAt("a pipeline spread over hosts needs the NATS cluster they share: set nats.url (or give --nats-url)", "cluster")
		}
		if err := h.connectNATS(ctx, dataDir, opts.NATSURL); err != nil {
			return nil, err
		}
		if recorded, err = h.openCluster(ctx, opts.HostID, opts.Pool); err != nil {
			return nil, fmt.Errorf("%s: cluster: %w", p.File, err)
		}
	}

	// Plugins first: a bad module is refused before anything else starts.
	ops, err := h.loadOperators(ctx, dataDir, opts.Compiler, recorded)
	if err != nil {
		return nil, err
	}

	h.store, err = state.Open(filepath.Join(dataDir, "state"), state.Options{
		KeyGroups: p.State.KeyGroups, Sync: p.State.Sync, MemTableSize: int(p.State.MemTableSize), Logger: h.log,
	})
	if err != nil {
		return nil, err
	}
	if n, err := initTables(ctx, p, h.store); err != nil {
		return nil, fmt.Errorf("%s: %w", p.File, err)
	} else if n > 0 {
		h.log.Info("transactional tables initialised", "entries", n)
	}

	h.dataDir = dataDir
	if p.NeedsNATS() && h.nc == nil {
		if err := h.connectNATS(ctx, dataDir, opts.NATSURL); err != nil {
			return nil, err
		}
	}
	var inputs []exec.Input
	var groups []int
	if p.Cluster != nil {
		src, owned, err := h.startCluster(ctx)
		if src != nil {
			h.sources = append(h.sources, src)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: cluster: %w", p.File, err)
		}
		inputs = append(inputs, exec.Input{Name: p.Sources[0].Name, Source: src, Watermark: watermark(&p.Sources[0])})
		groups = owned
	}
	for i := range p.Sources {
		if p.Cluster != nil {
			break // read through the partition stream
		}
		src, err := h.source(ctx, &p.Sources[i])
		if err != nil {
			return nil, fmt.Errorf("%s: source %q: %w", p.File, p.Sources[i].Name, err)
		}
		h.sources = append(h.sources, src)
		inputs = append(inputs, exec.Input{Name: p.Sources[i].Name, Source: src, Watermark: watermark(&p.Sources[i])})
	}
	var outputs []exec.Output
	for i := range p.Sinks {
		snk, err := h.sink(ctx, &p.Sinks[i])
		if err != nil {
			return nil, fmt.Errorf("%s: sink %q: %w", p.File, p.Sinks[i].Name, err)
		}
		h.sinks = append(h.sinks, snk)
		outputs = append(outputs, exec.Output{Name: p.Sinks[i].Name, Sink: snk, Inputs: p.Sinks[i].Inputs})
	}
	dead, err := h.deadLetterSink(dataDir)
	if err != nil {
		return nil, fmt.Errorf("%s: dead_letter: %w", p.File, err)
	}
	h.sinks = append(h.sinks, dead)
	var late connectors.Sink
	if p.Windowed() {
		if late, err = h.lateSink(dataDir); err != nil {
			return nil, fmt.Errorf("%s: late: %w", p.File, err)
		}
		h.sinks = append(h.sinks, late)
	}

	h.job, err = exec.New(ctx, exec.Config{
		Name: p.Name, Sources: inputs, Operators: ops, Sinks: outputs, DeadLetter: dead, Late: late,
		Store: h.store, BatchSize: p.Batch.Size, Linger: time.Duration(p.Batch.Linger), CommitInterval: time.Duration(p.State.CommitInterval),
		Logger: h.log, Metrics: h.metrics, OnRollback: h.autoRollback, Groups: groups,
	})
	h.txnOps = nil // the job owns them now, or closed them when it failed
	if err != nil {
		return nil, err
	}
	if h.ctrl, err = h.newController(); err != nil {
		return nil, err
	}

	addr := p.HTTP.Addr
	if opts.HTTPAddr != "" {
		addr = opts.HTTPAddr
	}
	if addr != "off" {
		if h.token, err = apiToken(dataDir, p.HTTP.Token); err != nil {
			return nil, err
		}
		// Swaps' modules arrive here; what a crash left is dropped.
		uploads := filepath.Join(dataDir, "uploads")
		if err := os.RemoveAll(uploads); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		if err := os.MkdirAll(uploads, 0o700); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		ln, err := h.listen(addr, opts.HTTPAddr == "")
		if err != nil {
			return nil, err
		}
		clusterRoutes, err := h.clusterAPI()
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("cluster: %w", err)
		}
		c := p.HTTP
		var (
			plane     func() schema.Control
			planeTurn func(context.Context, string) (*schema.Decision, error)
		)
		if h.ctrl != nil {
			plane, planeTurn = h.controlDocument, h.controlRound
		}
		routes := api.NewHandler(api.Options{
			Registry:     h.metrics.Registry,
			Status:       func() schema.Status { return h.job.Status() },
			Updated:      func() <-chan struct{} { return h.job.Updated() },
			Decisions:    func(op string, n int) (schema.Decisions, error) { return h.job.Decisions(op, n) },
			TPG:          h.job.TPG,
			Control:      pluginControl{h},
			ControlPlane: plane,
			ControlRound: planeTurn,
			State:        h.store,
			Cluster:      clusterRoutes,
			Token:        h.token,
			AuthReads:    c.Auth == pipeline.AuthAll,
			MaxBodyBytes: int64(c.MaxBodyBytes),
			UploadDir:    uploads,
		})
		site, err := dashboard.Mount(routes, dashboard.Options{Version: opts.Version})
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("dashboard: %w", err)
		}
		h.http = api.Serve(ln, site, api.Limits{
			MaxConnections: c.MaxConnections,
			ReadTimeout:    time.Duration(c.ReadTimeout),
			WriteTimeout:   time.Duration(c.WriteTimeout),
			IdleTimeout:    time.Duration(c.IdleTimeout),
		}, h.log)
		h.log.Info("http api listening", "addr", "http://"+h.http.Addr(), "dashboard", h.DashboardURL())
		// Where the CLI finds the API (sluice plugin swap -c), even on a
		// port chosen here.
		path := filepath.Join(dataDir, AddrFile)
		if err := os.WriteFile(path, []byte(h.http.Addr()+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		h.addrFile = path
	}
	return h, nil
}

// listen opens the HTTP API's listener on addr. When addr is the default
// one, configured nowhere else (mayMove), and is taken, it listens on a
// free port of the same interface instead and says so.
func (h *Host) listen(addr string, mayMove bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	if mayMove && addr == pipeline.DefaultHTTPAddr && errors.Is(err, syscall.EADDRINUSE) {
		host, _, _ := net.SplitHostPort(addr)
		if ln, ferr := net.Listen("tcp", net.JoinHostPort(host, "0")); ferr == nil {
			h.log.Warn("the default http api address is taken (by another pipeline?): listening on a free port instead; set http.addr to choose one",
				"taken", addr, "addr", ln.Addr().String())
			return ln, nil
		}
	}
	return nil, fmt.Errorf("%s: http api: listen on %s: %w (set http.addr in the pipeline or --http to another address, or off)", h.p.File, addr, err)
}

// loadOperators loads each operator's plugin: the module recorded's
// versions record names for it when it names one (a cluster's swap), else
// the one resume picks; and gives it the workers recorded's workers
// record gives this host, else the file's. recorded is nil for a host
// that runs the whole pipeline.
func (h *Host) loadOperators(ctx context.Context, dataDir string, compiler wasm.Compiler, recorded *cluster.Assignment) ([]exec.Operator, error) {
	var versions *cluster.Versions
	var workers *cluster.Workers
	if recorded != nil {
		versions, workers = recorded.Versions, recorded.Workers
	}
	var ops []exec.Operator
	cacheDir := h.p.CompileCache
	if cacheDir == "" {
		var err error
		if cacheDir, err = wasm.UserCacheDir(); err != nil {
			cacheDir = filepath.Join(dataDir, "cache")
			h.log.Info("plugins are compiled into the data directory", "cache", cacheDir, "because", err)
		}
	}
	for i := range h.p.Operators {
		o := &h.p.Operators[i]
		if o.Plugin == "" {
			// A native operator: a built-in window function.
			op, err := h.nativeOperator(i, o)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
			continue
		}
		code, err := plugin.ReadModule(o.Plugin, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: operator %q: plugin: %w", h.p.File, o.Name, err)
		}
		cfg := EngineConfig(o, cacheDir)
		if compiler != nil {
			cfg = cfg.WithCompiler(compiler)
		}
		if g := o.Grants; g != nil {
			if g.Nondeterministic() && o.Kind == pipeline.KindTransactional {
				h.log.Warn("a transactional operator is granted a clock, entropy or a writable directory: an operation re-executed after an abort may give another result, and the serial equivalence holds only for what does not depend on them",
					"operator", o.Name)
			}
		}
		eng, err := wasm.New(ctx, o.Engine, cfg)
		if err != nil {
			return nil, fmt.Errorf("operator %q: %w", o.Name, err)
		}
		h.engines = append(h.engines, eng)
		kind, err := plugin.ParseKind(o.Kind)
		if err != nil {
			return nil, fmt.Errorf("%s: operator %q: %w", h.p.File, o.Name, err)
		}
		// Every record the plugin emits is checked against the operator's
		// max_record_bytes, as its inputs are.
		// The guest's log lines go to the host's log, in its format and
		// at its level, with the operator's name.
		popts := []plugin.Option{plugin.WithLimits(plugin.Limits{MaxRecordBytes: int(o.Limits.MaxRecordBytes)}),
			plugin.WithLogger(h.log.With("operator", o.Name))}
		if kind == plugin.KindTransactional {
			popts = append(popts, plugin.WithTables(o.TableNames()))
		}
		// Adding a module new to the registry checks it, which compiles
		// it; loading it compiles it again, from the cache by then.
		report := startCompileReport(h.log.With("operator", o.Name, "plugin", o.Plugin), cacheDir, compileProgressEvery)
		fileEntry, err := h.reg.Add(ctx, eng, o.Plugin, code)
		if err != nil {
			report.finish(err)
			return nil, fmt.Errorf("%s: operator %q: %w", h.p.File, o.Name, err)
		}
		entry, resumed, history, err := h.resume(o.Name, fileEntry)
		if err != nil {
			h.log.Warn("reading or recording the operator's deployments failed", "operator", o.Name, "err", err)
		}
		name := filepath.Base(o.Plugin)
		if resumed != nil {
			code, name = resumed, entry.Name
		}
		if ov, ok := versions.Operator(o.Name); ok && ov.SHA256 != entry.SHA256 {
			ce, ccode, err := h.recordedModule(ctx, eng, o.Name, ov)
			if err != nil {
				report.finish(err)
				return nil, err
			}
			history = append(history, entry)
			entry, code, name, resumed = ce, ccode, ce.Name, ccode
		}
		pl, err := plugin.Load(ctx, eng, name, code, kind, popts...)
		report.finish(err)
		if err != nil {
			if resumed != nil {
				return nil, fmt.Errorf("operator %q: the module it ran last (%s, sha256 %s, deployed by a swap since the pipeline file's): %w",
					o.Name, entry.Label(), entry.SHA256, err)
			}
			return nil, fmt.Errorf("%s: operator %q: %w", h.p.File, o.Name, err)
		}
		h.deployed[o.Name] = &deployed{op: o, eng: eng, kind: kind, opts: popts, current: entry, history: history}
		if kind == plugin.KindTransactional {
			op, err := h.transactional(ctx, o, pl)
			if err != nil {
				return nil, err
			}
			op.Version = entry.Label()
			op.RollbackBatches = *o.RollbackBatches
			op.QuarantineAfter = o.QuarantineAfter
			ops = append(ops, op)
			continue
		}
		par := o.Parallelism
		if par == 0 {
			par = runtime.GOMAXPROCS(0)
		}
		if n, ok := h.recordedWorkers(workers, o); ok {
			par = n
		}
		if kind == plugin.KindJoin {
			// A join whose plugin builds its results.
			op, err := h.joinOperator(i, o)
			if err != nil {
				return nil, err
			}
			op.Plugin, op.Config, op.Parallelism, op.Version = pl, o.ConfigJSON, par, entry.Label()
			ops = append(ops, op)
			continue
		}
		win, err := h.window(i, o, nil)
		if err != nil {
			return nil, err
		}
		ops = append(ops, exec.Operator{
			Name: o.Name, Inputs: o.Inputs, Kind: kind, Plugin: pl, Config: o.ConfigJSON, Parallelism: par,
			Tables: o.State, StopOnError: o.OnError == pipeline.PolicyStop,
			MaxRecordBytes: int(o.Limits.MaxRecordBytes),
			Version:        entry.Label(), RollbackBatches: *o.RollbackBatches,
			Retries: o.Retries, QuarantineAfter: o.QuarantineAfter, Window: win,
		})
	}
	return ops, nil
}

func (h *Host) connectNATS(ctx context.Context, dataDir, urlOverride string) error {
	url := h.p.NATS.URL
	if urlOverride != "" {
		url = urlOverride
	}
	if url == "" {
		e, err := natsconn.StartEmbedded(ctx, natsconn.Options{
			Dir: filepath.Join(dataDir, "nats"), Port: h.p.NATS.Port, Logger: h.log,
		})
		if errors.Is(err, natsconn.ErrPortInUse) {
			return fmt.Errorf("%s: embedded NATS server: %w (another pipeline's embedded server? set nats.port in the pipeline to a free port, or -1 for any free one, or nats.url to use a running server)", h.p.File, err)
		}
		if err != nil {
			return fmt.Errorf("embedded NATS server: %w", err)
		}
		h.embedded = e
		url = e.ClientURL()
		h.log.Info("embedded NATS server started", "url", url)
	}
	nc, err := natsconn.Connect(ctx, url, "sluice-"+h.p.Name, natsconn.WithLogger(h.log), natsconn.WithAsyncErrors(func(err error) {
		if errors.Is(err, nats.ErrSlowConsumer) {
			h.slowConsumers.Add(1)
		}
	}))
	var ce *natsconn.ConnectError
	switch {
	case errors.As(err, &ce) && ce.Unreachable() && h.embedded == nil && h.p.Cluster != nil:
		return fmt.Errorf("%w; the hosts of a pipeline spread over hosts share a NATS cluster: start it, or correct nats.url (or --nats-url)", err)
	case errors.As(err, &ce) && ce.Unreachable() && h.embedded == nil:
		return fmt.Errorf("%w; or leave nats.url and --nats-url unset, and the pipeline runs an embedded server", err)
	case err != nil:
		return err
	}
	h.nc, h.natsURL = nc, url
	return nil
}

func (h *Host) source(ctx context.Context, s *pipeline.Source) (connectors.Source, error) {
	switch s.Type {
	case "file", "stdin":
		cfg := file.SourceConfig{Path: s.Path, Format: file.Format(s.Format), KeyField: s.KeyField, TimeField: s.TimeField,
			TimeUnit: file.TimeUnit(s.TimeUnit), MaxLine: int(s.MaxLineBytes), Name: s.Name}
		if s.Type == "stdin" {
			cfg.Reader = os.Stdin
		}
		return file.NewSource(cfg)
	case "generator":
		if s.Mode == string(generator.Txn) {
			k, err := pipeline.Workload(s.App, s.Knobs)
			if err != nil {
				return nil, fmt.Errorf("source %q: %w", s.Name, err)
			}
			w, err := workload.New(s.App, k)
			if err != nil {
				return nil, fmt.Errorf("source %q: %w", s.Name, err)
			}
			return generator.New(generator.Config{Mode: generator.Txn, Workload: w, Count: s.Count, Rate: s.Rate, Name: s.Name})
		}
		return generator.New(generator.Config{
			Mode: generator.Mode(s.Mode), Count: s.Count, Rate: s.Rate, Size: s.Size, Keys: s.Keys, Seed: s.Seed, Name: s.Name,
		})
	case "nats":
		return natsconn.NewCoreSource(h.nc, natsconn.CoreSourceConfig{Subject: s.Subject, Queue: s.Queue, Name: s.Name})
	case "jetstream":
		cfg := natsconn.JetStreamSourceConfig{Stream: s.Stream, Durable: s.Consumer, Name: s.Name, Logger: h.log}
		if s.Create {
			cfg.CreateStream = &natsconn.StreamSpec{Subjects: s.Subjects}
		}
		if s.Subject != "" {
			cfg.FilterSubject = s.Subject
		}
		return natsconn.NewJetStreamSource(h.nc, cfg)
	}
	return nil, fmt.Errorf("unknown source type %q", s.Type)
}

func (h *Host) sink(ctx context.Context, s *pipeline.Sink) (connectors.Sink, error) {
	switch s.Type {
	case "file":
		return file.NewSink(file.SinkConfig{Path: s.Path, Format: file.Format(s.Format), Name: s.Name})
	case "stdout":
		return file.NewWriterSink(os.Stdout, file.WriterSinkConfig{Format: file.Format(s.Format), Name: s.Name})
	case "nats":
		h.log.Warn("a core NATS sink is at least once: after a crash, the outputs of the batch that was not committed are published again (a jetstream sink is exactly once)",
			"sink", s.Name, "subject", s.Subject)
		return natsconn.NewCoreSink(h.nc, natsconn.CoreSinkConfig{Subject: s.Subject, Name: s.Name})
	case "jetstream":
		cfg := natsconn.JetStreamSinkConfig{Subject: s.Subject, Stream: s.Stream, Name: s.Name, Logger: h.log}
		for _, src := range h.p.Sources {
			if src.Type == "nats" || src.Type == "stdin" {
				cfg.NotReplayed = append(cfg.NotReplayed, h.p.Name+"/"+src.Name)
			}
		}
		if s.Create {
			cfg.CreateStream = &natsconn.StreamSpec{Subjects: []string{s.Subject}}
		}
		return natsconn.NewJetStreamSink(ctx, h.nc, cfg)
	case pipeline.StageSinkType:
		// The next stage's partition stream, created here if that stage
		// has not started yet, as its hosts create it. The records keep
		// their event time there (Mapping.Time).
		c := h.p.Cluster
		return natsconn.NewJetStreamSink(ctx, h.nc, natsconn.JetStreamSinkConfig{Subject: s.Subject, Stream: s.Stream,
			KeyGroups: h.p.State.KeyGroups, KeyGroup: state.KeyGroup, Name: s.Name, Logger: h.log, Mapping: natsconn.Mapping{Time: true},
			CreateStream: &natsconn.StreamSpec{Subjects: []string{s.Subject + ".*"}, Replicas: c.Replicas, Duplicates: time.Duration(c.Duplicates)}})
	}
	return nil, fmt.Errorf("unknown sink type %q", s.Type)
}

// deadLetterSink makes the sink of the dead letters: the configured
// subject or file, by default DefaultDeadLetterFile in the data directory.
func (h *Host) deadLetterSink(dataDir string) (connectors.Sink, error) {
	if s := h.p.DeadLetter.Subject; s != "" {
		h.deadLetters = "NATS subject " + s
		return natsconn.NewCoreSink(h.nc, natsconn.CoreSinkConfig{Subject: s, Name: "dead_letter"})
	}
	path := h.p.DeadLetter.Path
	if path == "" {
		path = filepath.Join(dataDir, pipeline.DefaultDeadLetterFile)
	}
	h.deadLetters = path
	s, err := file.NewSink(file.SinkConfig{Path: path, Name: "dead_letter"})
	if err != nil {
		return nil, err
	}
	return deadLetterFile{Sink: s, path: path, log: h.log}, nil
}

// deadLetterFile is the file sink of the dead letters. Unlike an output,
// the file is the user's to empty or remove once read, so a restart that
// finds it shorter than its committed length appends to what is there
// instead of refusing to start.
type deadLetterFile struct {
	*file.Sink
	path string
	log  *slog.Logger
}

// Rewind cuts the file back to offset, or leaves a file shorter than
// offset as it is.
func (d deadLetterFile) Rewind(ctx context.Context, offset uint64) error {
	if size := d.Offset(); offset > size {
		d.log.Info("the dead-letter file is shorter than its committed length (emptied or removed since the last run): appending to it",
			"file", d.path, "bytes", size, "committed", offset)
		return nil
	}
	return d.Sink.Rewind(ctx, offset)
}

// DeadLetters says where the dead letters go: the path of their file, or
// "NATS subject " and the subject.
func (h *Host) DeadLetters() string { return h.deadLetters }

// NATSURL is the URL of the NATS server in use ("" when the pipeline needs none).
func (h *Host) NATSURL() string { return h.natsURL }

// NATS is the host's NATS connection, nil when the pipeline needs none.
func (h *Host) NATS() *nats.Conn { return h.nc }

// HTTPAddr is the address of the HTTP API, "" when it is off.
func (h *Host) HTTPAddr() string {
	if h.http == nil {
		return ""
	}
	return h.http.Addr()
}

// DashboardURL is the address of the dashboard, "" when the HTTP API is
// off.
func (h *Host) DashboardURL() string {
	if h.http == nil {
		return ""
	}
	return "http://" + h.http.Addr() + "/"
}

// Status reports the job's progress.
func (h *Host) Status() exec.Status { return h.job.Status() }

// Commits returns the number of commits the job has made: one a batch,
// or fewer under state.commit_interval.
func (h *Host) Commits() uint64 { return h.job.Measure().Commits }

// Metrics returns the job's metrics.
func (h *Host) Metrics() *exec.Metrics { return h.metrics }

// Run runs the job until its sources end or ctx is cancelled (then it
// drains and commits), and closes everything. If the state store fails
// (a full or read-only disk: state.Store.Err), the job stops as if
// cancelled and Run returns the store's failure.
func (h *Host) Run(ctx context.Context) error {
	var err error
	ctrlCtx, stopCtrl := context.WithCancel(ctx)
	ctrlDone := make(chan struct{})
	if h.ctrl != nil {
		h.log.Info("control plane on", "policies", h.p.Control.Policies, "period", h.p.Control.Period)
		go func() {
			defer close(ctrlDone)
			if err := h.ctrl.Run(ctrlCtx); err != nil {
				h.log.Error("the control plane stopped", "err", err)
			}
		}()
	} else {
		close(ctrlDone)
	}
	if h.cluster != nil {
		err = h.runCluster(ctx, h.dataDir)
	} else {
		err = runUntilFailed(ctx, h.store, h.log, h.job.Run)
	}
	stopCtrl()
	<-ctrlDone
	if cerr := h.Close(context.WithoutCancel(ctx)); err == nil {
		err = cerr
	}
	return err
}

// failing is what runUntilFailed watches: a state.Store.
type failing interface {
	Failed() <-chan struct{}
	Err() error
}

// runUntilFailed runs run, cancelling its context early if store fails,
// and returns run's error, joined with the store's failure unless the
// error already is that failure.
func runUntilFailed(ctx context.Context, store failing, log *slog.Logger, run func(context.Context) error) error {
	runCtx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-store.Failed():
			log.Error("stopping: the state store failed", "err", store.Err())
			cancel()
		case <-runCtx.Done():
		}
	}()
	err := run(runCtx)
	cancel()
	<-watched
	if serr := store.Err(); serr != nil && !errors.Is(err, state.ErrFailed) {
		err = errors.Join(serr, err)
	}
	return err
}

// Close releases everything Start opened, in reverse order.
func (h *Host) Close(ctx context.Context) error {
	var errs []error
	if h.job != nil {
		errs = append(errs, h.job.Close(ctx))
	}
	for _, op := range h.txnOps {
		errs = append(errs, op.Close(ctx))
	}
	h.txnOps = nil
	if h.addrFile != "" {
		if err := os.Remove(h.addrFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		h.addrFile = ""
	}
	if h.http != nil {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		errs = append(errs, h.http.Close(sctx))
		cancel()
		h.http = nil
	}
	errs = append(errs, h.closePrepared(ctx))
	h.stopIngest()
	if h.cluster != nil {
		// A host that stops without handing over (a failure) leaves, so
		// that the others take its key groups at once.
		if err := h.cluster.c.Leave(ctx); err != nil && !errors.Is(err, cluster.ErrNotJoined) {
			errs = append(errs, err)
		}
		h.cluster = nil
	}
	for _, s := range h.sinks {
		errs = append(errs, s.Close())
	}
	h.sinks = nil
	for _, s := range h.sources {
		errs = append(errs, s.Close())
	}
	h.sources = nil
	if h.nc != nil {
		h.nc.Close()
		h.nc = nil
	}
	if h.embedded != nil {
		errs = append(errs, h.embedded.Shutdown(ctx))
		h.embedded = nil
	}
	if h.store != nil {
		errs = append(errs, h.store.Close())
		h.store = nil
	}
	for _, e := range h.engines {
		errs = append(errs, e.Close(ctx))
	}
	h.engines = nil
	return errors.Join(errs...)
}

// grants converts a pipeline's grants into the engine's.
func grants(g *pipeline.Grants) wasm.Grants {
	out := wasm.Grants{WallClock: g.Clock, Entropy: g.Entropy, Env: g.Env}
	for _, d := range g.Dirs {
		out.Dirs = append(out.Dirs, wasm.Dir{Host: d.Host, Guest: d.Guest, Writable: d.Writable})
	}
	return out
}

// EngineConfig is the configuration of the engine an operator's plugin runs
// on: the compilation cache in cacheDir, the host functions, and the
// operator's limits and grants.
func EngineConfig(o *pipeline.Operator, cacheDir string) wasm.Config {
	cfg := wasm.NewConfig().
		WithCacheDir(cacheDir).
		WithHostModules(plugin.HostModule())
	if o.Limits.MemoryPages > 0 {
		cfg = cfg.WithMemoryLimitPages(o.Limits.MemoryPages)
	}
	if o.Limits.CallTimeout != nil {
		cfg = cfg.WithCallTimeout(time.Duration(*o.Limits.CallTimeout))
	}
	if o.Limits.TableEntries > 0 {
		cfg = cfg.WithTableLimit(o.Limits.TableEntries)
	}
	if o.Grants != nil {
		cfg = cfg.WithGrants(grants(o.Grants))
	}
	return cfg
}
