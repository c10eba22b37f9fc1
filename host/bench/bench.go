package bench

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/host/plugin"
	wasm "github.com/sluicehq/sluice/runtime"
)

// Suite names one of the benchmarks.
type Suite string

// The suites; see the package documentation.
const (
	SuiteWasm  Suite = "wasm"
	SuiteNATS  Suite = "nats"
	SuiteKeyed Suite = "keyed"
)

// AllSuites lists every suite in the order Run runs them.
func AllSuites() []Suite { return []Suite{SuiteWasm, SuiteNATS, SuiteKeyed} }

// ErrUnknownSuite is wrapped by ParseSuite's error.
var ErrUnknownSuite = errors.New("unknown benchmark suite")

// ParseSuite returns the suite named s.
func ParseSuite(s string) (Suite, error) {
	for _, su := range AllSuites() {
		if string(su) == s {
			return su, nil
		}
	}
	return "", fmt.Errorf("bench: %w %q (want wasm, nats or keyed)", ErrUnknownSuite, s)
}

// Plugins holds the compiled modules the suites run.
type Plugins struct {
	// Upper is plugins/upper compiled to WebAssembly; the wasm and nats
	// suites need it.
	Upper []byte
	// UpperNative is the upper plugin's function in native Go
	// (upperlib.Upper of plugins/upper): it appends src to dst
	// upper-cased. The wasm suite measures it against Upper; it needs it.
	UpperNative func(dst, src []byte) []byte
	// WordCount is plugins/wordcount compiled to WebAssembly; the keyed
	// suite needs it.
	WordCount []byte
}

// WasmConfig sizes the wasm suite.
type WasmConfig struct {
	// BatchSizes are the numbers of records per Process call.
	BatchSizes []int
	// RecordSize is the size of each record's value in bytes (records have
	// no key and no headers).
	RecordSize int
	// Rounds is the number of measurements of each variant; the median is
	// reported.
	Rounds int
	// RoundTime is how long one measurement runs batches.
	RoundTime time.Duration
}

// NATSConfig sizes the nats suite.
type NATSConfig struct {
	// Sizes are the message sizes in bytes.
	Sizes []int
	// Messages is the number of messages per round, per size.
	Messages int
	// Window is the most messages in flight: the publisher waits while
	// published - received > Window.
	Window int
	// Rounds is the number of raw and of pipeline rounds per size,
	// interleaved; the median is reported.
	Rounds int
	// Parallelism is the map operator's number of workers; 0: GOMAXPROCS.
	Parallelism int
	// Stall fails a round when no message arrives for this long; 0: 10 s.
	Stall time.Duration
	// Dashboard runs each round's pipeline twice with the job's event
	// stream (GET /api/v1/events) served on 127.0.0.1: once with a reader
	// that decodes every event as the dashboard's page does, once without,
	// in an order that alternates from round to round; NATSSize.Page holds
	// both rates and their ratio.
	Dashboard bool
}

// KeyedConfig sizes the keyed suite.
type KeyedConfig struct {
	// Records is the number of generated records.
	Records uint64
	// Keys is the number of distinct keys.
	Keys uint64
	// Parallelism is the keyed operator's number of workers; 0: GOMAXPROCS.
	Parallelism int
	// Rounds is the number of runs, each on a fresh store; the median is
	// reported.
	Rounds int
}

// Options say what Run runs. Start from DefaultOptions or QuickOptions.
type Options struct {
	// Suites to run, in the order of AllSuites whatever the order here;
	// empty: all.
	Suites []Suite
	Wasm   WasmConfig
	NATS   NATSConfig
	Keyed  KeyedConfig
	// Quick is recorded in the report: the options are the small ones.
	Quick bool
	// NoCallTimeout runs the nats and keyed suites' plugins on an engine
	// with the call timeout off, to show what the deadline costs a whole
	// pipeline. The wasm suite always measures both engines.
	NoCallTimeout bool
	// Engine names the WebAssembly engine the plugins run on (see
	// runtime.New): "" or wazero, or wasmtime in a build with the
	// wasmtime tag.
	Engine string
	// Dir is where state stores, the embedded server's store and the
	// compilation cache go; empty: a new temporary directory, removed at
	// the end.
	Dir string
	// Progress receives one line per step as it starts; nil: none.
	Progress io.Writer
	// Logger receives the log of the host components; nil: discarded.
	Logger *slog.Logger
}

// DefaultOptions returns the full configuration `sluice bench` runs: a
// minute or so on two cores.
func DefaultOptions() Options {
	return Options{
		Wasm:  WasmConfig{BatchSizes: []int{64, 256, 1024}, RecordSize: 64, Rounds: 5, RoundTime: 300 * time.Millisecond},
		NATS:  NATSConfig{Sizes: []int{64, 1024}, Messages: 1_000_000, Window: 16384, Rounds: 3},
		Keyed: KeyedConfig{Records: 1_000_000, Keys: 100_000, Rounds: 3},
	}
}

// QuickOptions returns a configuration of the same shape with small sizes,
// for tests and a first look: seconds, not minutes.
func QuickOptions() Options {
	return Options{
		Quick: true,
		Wasm:  WasmConfig{BatchSizes: []int{64, 256, 1024}, RecordSize: 64, Rounds: 1, RoundTime: 20 * time.Millisecond},
		NATS:  NATSConfig{Sizes: []int{64, 1024}, Messages: 20_000, Window: 4096, Rounds: 1},
		Keyed: KeyedConfig{Records: 20_000, Keys: 1_000, Rounds: 1},
	}
}

// Report is the outcome of Run. Its JSON form is what `sluice bench --json`
// writes.
type Report struct {
	Machine Machine   `json:"machine"`
	Date    time.Time `json:"date"`
	Quick   bool      `json:"quick"`
	// Engine is the WebAssembly engine the plugins ran on.
	Engine string       `json:"engine"`
	Wasm   *WasmResult  `json:"wasm,omitempty"`
	NATS   *NATSResult  `json:"nats,omitempty"`
	Keyed  *KeyedResult `json:"keyed,omitempty"`
	// Targets are the project's targets checked against the figures of
	// the suites that ran.
	Targets []Target `json:"targets"`
	// LoadAfter is the load average when the run ended (see Machine.Load).
	LoadAfter string `json:"load_after,omitempty"`
}

// Machine describes where a report was measured.
type Machine struct {
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
	CPUModel   string `json:"cpu_model,omitempty"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	// Load is the 1, 5 and 15 minute load averages when the run started,
	// from /proc/loadavg; empty where unreadable.
	Load string `json:"load_before,omitempty"`
}

// Target is one of the project's performance targets, checked.
type Target struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
	// Void, when set, says why the run could not check the target (the
	// condition it is about was not made); Met means nothing then.
	Void string `json:"void,omitempty"`
}

// CurrentMachine describes the machine this process runs on.
func CurrentMachine() Machine {
	return Machine{
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU:     runtime.NumCPU(),
		CPUModel:   cpuModel("/proc/cpuinfo"),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Load:       loadAverage("/proc/loadavg"),
	}
}

// cpuModel returns the first "model name" of a /proc/cpuinfo file, or "".
func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(name) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// loadAverage returns the three load averages of a /proc/loadavg file, or "".
func loadAverage(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// env is what the suites of one Run share.
type env struct {
	dir      string
	log      *slog.Logger
	progress io.Writer
	// engineName names the engine (runtime.New) the plugins run on.
	engineName string
	engines    map[bool]wasm.Engine // by "call timeout on"
	// noTimeout makes the pipeline suites use the engine without timeout.
	noTimeout bool
}

// step announces a step on the progress writer.
func (e *env) step(format string, args ...any) {
	if e.progress != nil {
		fmt.Fprintf(e.progress, "bench: "+format+"\n", args...)
	}
}

// engine returns the shared engine (engineName) with the default call timeout
// (timeout true) or with none. Both compile through one cache directory, so
// a module compiles once per Run.
func (e *env) engine(ctx context.Context, timeout bool) (wasm.Engine, error) {
	if eng, ok := e.engines[timeout]; ok {
		return eng, nil
	}
	cfg := wasm.NewConfig().
		WithCacheDir(filepath.Join(e.dir, "wasm-cache")).
		WithHostModules(plugin.HostModule())
	if !timeout {
		cfg = cfg.WithCallTimeout(0)
	}
	eng, err := wasm.New(ctx, e.engineName, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: %s engine: %w", e.engineName, err)
	}
	e.engines[timeout] = eng
	return eng, nil
}

// load compiles and checks a plugin on the engine with or without the call
// timeout.
func (e *env) load(ctx context.Context, name string, code []byte, kind plugin.Kind, timeout bool) (*plugin.Plugin, error) {
	if len(code) == 0 {
		return nil, fmt.Errorf("bench: the %s plugin was not given (Plugins field empty)", name)
	}
	eng, err := e.engine(ctx, timeout)
	if err != nil {
		return nil, err
	}
	p, err := plugin.Load(ctx, eng, name+".wasm", code, kind, plugin.WithLogger(e.log))
	if err != nil {
		return nil, fmt.Errorf("bench: loading the %s plugin: %w", name, err)
	}
	return p, nil
}

func (e *env) close(ctx context.Context) error {
	var errs []error
	for _, eng := range e.engines {
		errs = append(errs, eng.Close(ctx))
	}
	return errors.Join(errs...)
}

// Run runs the suites opts selects and returns their figures with the
// targets checked. It fails when a suite cannot run or when any round's
// output is wrong (a lost message, a wrong count): a figure is reported
// only for a correct run.
func Run(ctx context.Context, plugins Plugins, opts Options) (rep *Report, err error) {
	suites := opts.Suites
	if len(suites) == 0 {
		suites = AllSuites()
	}
	for _, s := range suites {
		if _, err := ParseSuite(string(s)); err != nil {
			return nil, err
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := opts.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sluice-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if err := wasm.CheckEngine(opts.Engine); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	engine := cmp.Or(opts.Engine, wasm.EngineWazero)
	e := &env{dir: dir, log: log, progress: opts.Progress, engineName: engine, engines: map[bool]wasm.Engine{}, noTimeout: opts.NoCallTimeout}
	defer func() {
		if cerr := e.close(context.WithoutCancel(ctx)); err == nil && cerr != nil {
			err = fmt.Errorf("bench: closing the engines: %w", cerr)
		}
	}()

	rep = &Report{Machine: CurrentMachine(), Date: time.Now().UTC().Truncate(time.Second), Quick: opts.Quick, Engine: engine}
	e.step("machine: %d cores (GOMAXPROCS %d), %s, %s, load %s",
		rep.Machine.NumCPU, rep.Machine.GOMAXPROCS, orUnknown(rep.Machine.CPUModel, "CPU model unknown"), rep.Machine.GoVersion, orUnknown(rep.Machine.Load, "unknown"))
	if slices.Contains(suites, SuiteWasm) {
		if rep.Wasm, err = runWasm(ctx, e, plugins.Upper, plugins.UpperNative, opts.Wasm); err != nil {
			return nil, err
		}
	}
	if slices.Contains(suites, SuiteNATS) {
		if rep.NATS, err = runNATS(ctx, e, plugins.Upper, opts.NATS); err != nil {
			return nil, err
		}
	}
	if slices.Contains(suites, SuiteKeyed) {
		if rep.Keyed, err = runKeyed(ctx, e, plugins.WordCount, opts.Keyed); err != nil {
			return nil, err
		}
	}
	rep.LoadAfter = loadAverage("/proc/loadavg")
	rep.Targets = rep.checkTargets()
	return rep, nil
}

// median returns the median of xs (the mean of the two middle values for
// an even count), or 0 for none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// parallelism returns p, or GOMAXPROCS when p is 0 or less.
func parallelism(p int) int {
	if p > 0 {
		return p
	}
	return runtime.GOMAXPROCS(0)
}
