package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors/file"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// Pipeline is a validated pipeline file.
type Pipeline struct {
	Name       string      `yaml:"name"`
	NATS       NATS        `yaml:"nats"`
	DataDir    string      `yaml:"data_dir"`
	State      State       `yaml:"state"`
	Batch      Batch       `yaml:"batch"`
	Sources    []Source    `yaml:"sources"`
	Operators  []Operator  `yaml:"operators"`
	Sinks      []Sink      `yaml:"sinks"`
	DeadLetter DeadLetter  `yaml:"dead_letter"`
	Late       Late        `yaml:"late"`
	HTTP       HTTP        `yaml:"http"`
	OnError    ErrorPolicy `yaml:"on_error"`
	// Cluster, when set, spreads the pipeline over several hosts.
	Cluster *Cluster `yaml:"cluster"`
	// Control runs the control plane (docs/control.md) when the file has
	// a control: section; its defaults are filled in either way.
	Control Control `yaml:"control"`
	// Stage is set on the stages of a pipeline cut into stages (see
	// Stages); nil otherwise.
	Stage *Stage `yaml:"-"`
	File  string `yaml:"-"` // the file it was read from, for messages
	Dir   string `yaml:"-"` // the directory relative paths are resolved against
	root  *yaml.Node

	// CompileCache is the directory of the plugins' compiled code; empty:
	// the user's cache directory, which every pipeline shares (see
	// runtime.UserCacheDir), or <data_dir>/cache where there is none.
	CompileCache string `yaml:"compile_cache"`
}

// NATS says which NATS server to use.
type NATS struct {
	// URL of a NATS server or cluster; empty starts an embedded server with
	// JetStream, stored under the data directory.
	URL string `yaml:"url"`
	// Port of the embedded server's client listener on 127.0.0.1. Default
	// 4222; -1 picks a free port.
	Port int `yaml:"port"`
}

// State configures keyed state.
type State struct {
	// KeyGroups is the number of key groups keyed state is partitioned
	// into; fixed for the life of the data directory. Default 128.
	KeyGroups int `yaml:"key_groups"`
	// Sync makes every commit wait for the disk (fsync). Default false: a
	// machine crash may lose the last commits, a process crash loses nothing.
	Sync bool `yaml:"sync"`
	// MemTableSize is the state store's write buffer (Pebble's memtable),
	// 256KiB to 1GiB. Default 8MiB. The write-ahead log takes up to about
	// four times this on disk, six at worst; a larger buffer absorbs more
	// updates of the same keys before they reach disk.
	MemTableSize Size `yaml:"memtable_size"`
	// CommitInterval lets batches leave their state uncommitted while the
	// sources keep batches full: state, source positions and sink offsets
	// are then committed at most this long apart (and at every batch that
	// is not full, when input pauses, at a stop and before a change of key
	// groups), so a key updated by many batches is written once. Outputs
	// are still written with every batch; a crash replays up to this much
	// input, and what it changes stays in memory until its commit.
	// Default 0: every batch is committed.
	CommitInterval Duration `yaml:"commit_interval"`
}

// Batch sets how input is cut into batches: a batch is processed by every
// operator, written to the sinks and committed together.
type Batch struct {
	// Size is the most records in one batch. Default 1024.
	Size int `yaml:"size"`
	// Linger is how long a batch waits for more records once it has one.
	// Default 5ms.
	Linger Duration `yaml:"linger"`
}

// Source is one input of the pipeline. A key tagged with types applies to
// those source types only; a source of another type that sets it is
// refused.
type Source struct {
	Name string `yaml:"name"`
	// Type is file, stdin, generator, nats or jetstream.
	Type string `yaml:"type"`

	// Path is the file a file source reads.
	Path string `yaml:"path" types:"file"`
	// Format of the lines of a file or stdin source: jsonl (the default:
	// Sluice's record envelope), json (plain JSON, the line is the value)
	// or lines (the line is the value).
	Format string `yaml:"format" types:"file,stdin"`
	// KeyField locates the member of a line of format json that gives the
	// record's key: a JSON pointer (/user/id) or a dotted path (user.id).
	KeyField string `yaml:"key_field" types:"file,stdin"`
	// TimeField locates the member of a line of format json that gives the
	// record's event time: an RFC 3339 string or a number of TimeUnit.
	TimeField string `yaml:"time_field" types:"file,stdin"`
	// TimeUnit is the unit of a numeric TimeField: ns, us, ms or s.
	// Default ms.
	TimeUnit string `yaml:"time_unit" types:"file,stdin"`
	// MaxLineBytes is the longest line read, without its line ending; a
	// longer one is dead-lettered. Default: the larger of 1 MiB and the
	// first operator's max_record_bytes.
	MaxLineBytes Size `yaml:"max_line_bytes" types:"file,stdin"`

	// nats and jetstream
	Subject  string   `yaml:"subject" types:"nats,jetstream"`
	Queue    string   `yaml:"queue" types:"nats"`
	Stream   string   `yaml:"stream" types:"jetstream"`
	Consumer string   `yaml:"consumer" types:"jetstream"`
	Create   bool     `yaml:"create" types:"jetstream"`
	Subjects []string `yaml:"subjects" types:"jetstream"`

	// generator
	Mode  string  `yaml:"mode" types:"generator"` // words, sequence, bytes or txn
	Count uint64  `yaml:"count" types:"generator"`
	Rate  float64 `yaml:"rate" types:"generator"`
	Size  int     `yaml:"size" types:"generator"`
	Keys  uint64  `yaml:"keys" types:"generator"`
	Seed  uint64  `yaml:"seed" types:"generator"`
	// App is the transactional workload of mode txn (sl, gs, ...).
	App string `yaml:"app" types:"generator"`
	// Knobs are the workload's knobs in mode txn (key space, skew, seed...).
	Knobs Knobs `yaml:"knobs" types:"generator"`

	// Watermark says how far the source's event time has come, for the
	// windows of event time. Nil: the times only grow, and the source is
	// never left out as idle.
	Watermark *Watermark `yaml:"watermark"`
}

// Operator is one operator of the pipeline's graph, run by a Wasm plugin.
type Operator struct {
	Name string `yaml:"name"`
	// Inputs name the sources and operators the operator reads; a record
	// tells the plugin the position, in this list, of the input it came
	// from. None: the operator before it in the file, or every source for
	// the first (a chain).
	Inputs []string `yaml:"inputs"`
	// Plugin is the path of the .wasm module.
	Plugin string `yaml:"plugin"`
	// Kind is map, filter, flatmap, keyed, transactional, aggregate,
	// window or join.
	Kind string `yaml:"kind"`
	// Engine is the WebAssembly engine the plugin runs on: wazero (the
	// default) or wasmtime, which only a build with the wasmtime tag
	// holds. Validate sets "" to wazero.
	Engine string `yaml:"engine"`
	// Parallelism is the number of workers, each with its own instance.
	// Default: the number of CPUs the process may use. Not for
	// transactional operators (Workers).
	Parallelism int `yaml:"parallelism"`
	// State lists the state tables of a keyed operator; the first is its
	// default table. Default: one table named after the operator.
	State []string `yaml:"state"`
	// Config is passed to the plugin as JSON when each instance starts.
	Config any `yaml:"config"`
	// Limits bound what one instance may use.
	Limits Limits `yaml:"limits"`
	// Grants open the operator's sandbox: a wall clock, entropy,
	// environment variables, host directories. Nil: nothing is granted.
	Grants *Grants `yaml:"grants"`
	// OnError overrides the pipeline's error policy for this operator. For
	// a transactional operator it also says what a failed batch does: stop,
	// or dead-letter every event of the batch (its state untouched).
	OnError ErrorPolicy `yaml:"on_error"`
	// Retries is how many times a record the plugin failed on (a trap, a
	// timeout, an error status: not a record it rejects) is run again,
	// alone, before the error policy applies. Default 0. Not for
	// transactional operators.
	Retries int `yaml:"retries"`
	// QuarantineAfter quarantines the operator after that many
	// consecutive batches in which its plugin failed: the host stops
	// calling it, leaves the batch uncommitted (its input unacknowledged)
	// and waits for a swap. Default 0: never.
	QuarantineAfter int `yaml:"quarantine_after"`
	// RollbackBatches is the trial of a plugin swapped in at run time: a
	// failure in its first RollbackBatches batches rolls back to the
	// previous plugin, which processes the batch again. Nil: 3; 0: no
	// automatic rollback.
	RollbackBatches *int `yaml:"rollback_batches"`

	// Tables are a transactional operator's shared state tables; table
	// handle i is Tables[i].
	Tables []Table `yaml:"tables"`
	// Punctuation cuts a transactional operator's input into batches.
	Punctuation Punctuation `yaml:"punctuation"`
	// Strategy is a transactional operator's scheduling strategy, a name
	// txn.ParseStrategy accepts. Default DefaultStrategy.
	Strategy string `yaml:"strategy"`
	// Adaptive tunes the adaptive strategy's decision model; only with
	// strategy adaptive. Nil: the defaults.
	Adaptive *Adaptive `yaml:"adaptive"`
	// Workers is a transactional operator's number of scheduler workers,
	// each with its own plugin instance. Default (0): one per CPU the
	// process may use.
	Workers int `yaml:"workers"`
	// ReadWindow is the largest window, in events, of a transactional
	// operator's windowed reads: the operator keeps, in memory, the
	// versions written by its last ReadWindow events. Default 0: its
	// guest may declare no windowed read.
	ReadWindow int `yaml:"read_window"`

	// Window groups the records of an aggregate, window or join operator
	// by time.
	Window *Window `yaml:"window"`
	// Function is the built-in aggregate of an aggregate operator without
	// a plugin: count, sum, min, max or mean.
	Function string `yaml:"function"`
	// Field locates the number a built-in sum, min, max or mean reads in
	// each record's value (JSON): a JSON pointer (/price) or a dotted path
	// (order.price). Empty: the value is the number, as text.
	Field string `yaml:"field"`
	// Join configures an operator of kind join.
	Join *Join `yaml:"join"`

	// ConfigJSON is Config encoded as JSON (nil when there is none).
	ConfigJSON []byte `yaml:"-"`
}

// Limits bound a plugin instance.
type Limits struct {
	// MemoryPages caps an instance's memory in 64 KiB pages. Default 1024 (64 MiB).
	MemoryPages uint32 `yaml:"memory_pages"`
	// CallTimeout bounds one guest call. Default 5s. "0s" disables the
	// deadline, and is refused unless DeadlineOffMayHangHost accepts what
	// that risks.
	CallTimeout *Duration `yaml:"call_timeout"`
	// DeadlineOffMayHangHost accepts, for a plugin trusted never to loop,
	// that with the deadline off a guest call that does not return stops
	// the whole host: compiled guest code cannot be preempted, so the
	// garbage collector, the HTTP API and the signal handling wait for it.
	// Only with call_timeout: 0s.
	DeadlineOffMayHangHost bool `yaml:"deadline_off_may_hang_host"`
	// MaxRecordBytes bounds the bytes of each record the operator accepts
	// or emits: its key, value and headers. Default 1 MiB, at most 16 MiB.
	MaxRecordBytes Size `yaml:"max_record_bytes"`
	// TableEntries caps the entries of each of an instance's tables
	// (table.grow fails past it). Default 1,048,576.
	TableEntries uint32 `yaml:"table_entries"`
}

// Sink is one output of the pipeline. A key tagged with types applies to
// those sink types only.
type Sink struct {
	Name string `yaml:"name"`
	// Inputs name the operators (or sources) whose records the sink
	// writes. None: the last operator in the file, or every source when
	// there is none.
	Inputs []string `yaml:"inputs"`
	// Type is file, stdout, nats or jetstream.
	Type string `yaml:"type"`
	Path string `yaml:"path" types:"file"`
	// Format of the lines of a file or stdout sink: jsonl (the default:
	// Sluice's record envelope), json (each value, which must be JSON) or
	// lines (each value).
	Format  string `yaml:"format" types:"file,stdout"`
	Subject string `yaml:"subject" types:"nats,jetstream"`
	Stream  string `yaml:"stream" types:"jetstream"`
	Create  bool   `yaml:"create" types:"jetstream"`
}

// DeadLetter says where records that an operator failed on go. With
// neither Subject nor Path set, they go to the JSON Lines file
// DefaultDeadLetterFile in the data directory (the runner's, which
// --data-dir may change).
type DeadLetter struct {
	// Subject publishes dead letters to this NATS subject instead.
	Subject string `yaml:"subject"`
	// Path writes dead letters to this JSON Lines file.
	Path string `yaml:"path"`
	// FailRun makes a run that dead-lettered records end in failure
	// (sluice run exits with a status of its own), once it has processed
	// and committed everything.
	FailRun bool `yaml:"fail_run"`
}

// DefaultDeadLetterFile is the file, in the data directory, that dead
// letters go to when dead_letter names no subject and no path.
const DefaultDeadLetterFile = "dead-letters.jsonl"

// HTTP configures the host's HTTP server (health, metrics, API).
type HTTP struct {
	// Addr to listen on. Default 127.0.0.1:8080; "off" disables the server.
	Addr string `yaml:"addr"`
	// Token is the bearer token the API's mutating (POST) routes require,
	// and with Auth AuthAll its reads too.
	// Default: the SLUICE_TOKEN environment variable, or one generated at
	// start; either way it is written to <data_dir>/api-token (mode 0600).
	Token string `yaml:"token"`
	// Auth says which routes require the token: AuthWrites (the POST
	// routes; the default) or AuthAll (every route but /healthz).
	Auth string `yaml:"auth"`
	// MaxBodyBytes bounds a request's body (a swapped-in module), which is
	// streamed to a file under the data directory. Default 64 MiB.
	MaxBodyBytes Size `yaml:"max_body_bytes"`
	// MaxConnections caps the connections open at once; past it, new ones
	// wait to be accepted. Default 64.
	MaxConnections int `yaml:"max_connections"`
	// ReadTimeout bounds the time a whole request, body included, may take
	// to arrive. Default 1m.
	ReadTimeout Duration `yaml:"read_timeout"`
	// WriteTimeout bounds the time an answer may take to leave once it is
	// ready. Default 1m.
	WriteTimeout Duration `yaml:"write_timeout"`
	// IdleTimeout closes a keep-alive connection idle this long. Default 1m.
	IdleTimeout Duration `yaml:"idle_timeout"`
}

// Values of http.auth.
const (
	// AuthWrites requires the token on the routes that change the job.
	AuthWrites = "writes"
	// AuthAll requires it on every route but /healthz.
	AuthAll = "all"
)

// validate fills in h's defaults and checks its values.
func (h *HTTP) validate(p *Pipeline) []error {
	var errs []error
	if h.Addr == "" {
		h.Addr = DefaultHTTPAddr
	}
	switch h.Auth {
	case "":
		h.Auth = AuthWrites
	case AuthWrites, AuthAll:
	default:
		errs = append(errs, p.errAt(fmt.Sprintf("unknown auth %q: want %s (the token guards the POST routes) or %s (every route but /healthz)", h.Auth, AuthWrites, AuthAll), "http", "auth"))
	}
	if h.MaxBodyBytes == 0 {
		h.MaxBodyBytes = DefaultHTTPMaxBodyBytes
	}
	switch {
	case h.MaxConnections == 0:
		h.MaxConnections = DefaultHTTPMaxConnections
	case h.MaxConnections < 0:
		errs = append(errs, p.errAt(fmt.Sprintf("max_connections %d: want at least 1", h.MaxConnections), "http", "max_connections"))
	}
	for _, d := range []struct {
		v   *Duration
		def time.Duration
	}{{&h.ReadTimeout, DefaultHTTPReadTimeout}, {&h.WriteTimeout, DefaultHTTPWriteTimeout}, {&h.IdleTimeout, DefaultHTTPIdleTimeout}} {
		if *d.v == 0 {
			*d.v = Duration(d.def)
		}
	}
	return errs
}

// DefaultRollbackBatches is the trial of a swapped-in plugin when an
// operator does not set rollback_batches.
const DefaultRollbackBatches = 3

// ErrorPolicy is what happens when an operator fails on a record.
type ErrorPolicy string

// Error policies.
const (
	// DeadLetter sends the record to the dead-letter destination with the
	// error in its headers, and keeps going. The default.
	PolicyDeadLetter ErrorPolicy = "dead-letter"
	// Stop stops the pipeline without committing the batch, so the record
	// is read again on the next run.
	PolicyStop ErrorPolicy = "stop"
)

// Operator kinds.
const (
	KindMap     = "map"
	KindFilter  = "filter"
	KindFlatMap = "flatmap"
	KindKeyed   = "keyed"
)

// Defaults.
const (
	DefaultBatchSize      = 1024
	DefaultLinger         = 5 * time.Millisecond
	DefaultKeyGroups      = 128
	DefaultMaxRecordBytes = 1 << 20
	DefaultMemTableSize   = 8 << 20
	DefaultHTTPAddr       = "127.0.0.1:8080"

	DefaultHTTPMaxBodyBytes   = 64 << 20
	DefaultHTTPMaxConnections = 64
	DefaultHTTPReadTimeout    = time.Minute
	DefaultHTTPWriteTimeout   = time.Minute
	DefaultHTTPIdleTimeout    = time.Minute
)

// Duration is a time.Duration written as "250ms", "5s", "1m".
type Duration time.Duration

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration (write it like 250ms, 5s or 1m)", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// Size is a byte count written as a number or with a unit: 512, 64KiB, 1MiB.
type Size int64

// UnmarshalYAML parses a size.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*s = Size(v)
	return nil
}

var sizeRE = regexp.MustCompile(`^\s*([0-9]+)\s*(B|KiB|MiB|GiB|KB|MB|GB)?\s*$`)

// ParseSize parses a byte count such as 512, 64KiB or 1MiB.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size (write it like 512, 64KiB or 1MiB)", s)
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %w", s, err)
	}
	mult := map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1e3, "MB": 1e6, "GB": 1e9}[m[2]]
	return v * mult, nil
}

// Error is a problem with a pipeline file, located by line and key path.
type Error struct {
	File string
	Line int    // 0 when unknown
	Path string // the key path, like operators[1].kind
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads and validates the pipeline file at path.
func Load(path string) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return Parse(path, filepath.Dir(abs), data)
}

// Parse reads and validates a pipeline from data. file names it in errors;
// dir is the directory relative paths are resolved against.
func Parse(file, dir string, data []byte) (*Pipeline, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(file, data, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &Error{File: file, Msg: "the file is empty"}
	}
	if root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Content[0].Line, Msg: "a pipeline file must be a mapping of keys (name, sources, operators, sinks...)"}
	}
	c := &checker{file: file}
	c.walk(root.Content[0], reflect.TypeFor[Pipeline](), nil)
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	p := &Pipeline{File: file, Dir: dir, root: root.Content[0]}
	if err := dec.Decode(p); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(file, err)
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns the YAML library's errors into *Error values with lines.
func yamlError(file string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		var errs []error
		for _, s := range te.Errors {
			errs = append(errs, lineError(file, s))
		}
		return errors.Join(errs...)
	}
	return lineError(file, err.Error())
}

func lineError(file, s string) *Error {
	s = strings.TrimPrefix(s, "yaml: ")
	if m := yamlLineRE.FindStringSubmatch(s); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: m[2]}
	}
	return &Error{File: file, Msg: s}
}

// maxSyntaxScan is the most lines syntaxError reads the file again for.
const maxSyntaxScan = 5000

// syntaxError reports a YAML syntax error at the line where the file stops
// parsing, with the key path of the mapping it is in. The YAML library
// names the line where the block holding the problem starts (a key
// indented wrong on line 9 of an operator that starts at line 7 is
// reported at line 6), so the line is found as the first whose prefix of
// the file fails the same way.
func syntaxError(file string, data []byte, err error) error {
	e := lineError(file, err.Error())
	if lines := bytes.SplitAfter(data, []byte("\n")); len(lines) <= maxSyntaxScan {
		end := 0
		for i, l := range lines {
			end += len(l)
			var n yaml.Node
			perr := yaml.Unmarshal(data[:end], &n)
			if perr == nil || lineError(file, perr.Error()).Msg != e.Msg {
				continue
			}
			e.Line = i + 1
			var before yaml.Node
			if yaml.Unmarshal(data[:end-len(l)], &before) == nil {
				e.Path = pathString(lastMapping(&before, nil))
			}
			break
		}
	}
	for problem, hint := range map[string]string{
		"did not find expected key":                              "is this line indented like the keys it belongs with?",
		"did not find expected '-' indicator":                    "is this line indented like the keys it belongs with?",
		"mapping values are not allowed in this context":         `is this line indented too far, or does a value on it hold ": " and need quotes?`,
		"block sequence entries are not allowed in this context": "is this - indented below its key?",
	} {
		if e.Msg == problem {
			e.Msg += " (" + hint + ")"
		}
	}
	return e
}

// lastMapping returns the path of the mapping that holds the last key of
// n, in the order of the file.
func lastMapping(n *yaml.Node, path []any) []any {
	var last []any
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			last = lastMapping(c, path)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if l := lastMapping(c, append(slices.Clip(path), i)); l != nil {
				last = l
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			last = path
			if last == nil {
				last = []any{}
			}
			if l := lastMapping(n.Content[i+1], append(slices.Clip(path), n.Content[i].Value)); l != nil {
				last = l
			}
		}
	}
	return last
}

// errAt builds an *Error located at the node for path (keys and indexes
// below the root), or at the nearest ancestor that exists.
func (p *Pipeline) errAt(msg string, path ...any) error { return p.ErrorAt(msg, path...) }

// ErrorAt returns an *Error with msg, located at the key path (keys and
// indexes below the root: "operators", 1, "plugin"), or at the line of its
// nearest ancestor written in the file: for what is checked outside this
// package, such as a plugin against its operator's kind.
func (p *Pipeline) ErrorAt(msg string, path ...any) *Error {
	return &Error{File: p.File, Line: p.lineOf(path...), Path: pathString(path), Msg: msg}
}

func pathString(path []any) string {
	var b strings.Builder
	for _, e := range path {
		switch v := e.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v)
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		}
	}
	return b.String()
}

func (p *Pipeline) lineOf(path ...any) int {
	n := p.root
	if n == nil {
		return 0
	}
	line := n.Line
	for _, e := range path {
		var next *yaml.Node
		switch v := e.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == v {
						line = n.Content[i].Line
						next = n.Content[i+1]
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && v < len(n.Content) {
				next = n.Content[v]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

func (p *Pipeline) validate() error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }

	if p.Name == "" {
		p.Name = strings.TrimSuffix(filepath.Base(p.File), filepath.Ext(p.File))
	}
	if !nameRE.MatchString(p.Name) {
		add(p.errAt(fmt.Sprintf("%q is not a valid name: use letters, digits, - and _", p.Name), "name"))
	}
	if p.DataDir == "" {
		p.DataDir = filepath.Join(p.Dir, ".sluice", p.Name)
	} else {
		p.DataDir = p.resolve(p.DataDir)
	}
	p.CompileCache = p.resolve(p.CompileCache)
	if p.State.KeyGroups == 0 {
		p.State.KeyGroups = DefaultKeyGroups
	} else if p.State.KeyGroups < 1 || p.State.KeyGroups > 1<<16 {
		add(p.errAt(fmt.Sprintf("%d key groups: want 1 to 65536", p.State.KeyGroups), "state", "key_groups"))
	}
	if p.State.MemTableSize == 0 {
		p.State.MemTableSize = DefaultMemTableSize
	} else if p.State.MemTableSize < 256<<10 || p.State.MemTableSize > 1<<30 {
		add(p.errAt(fmt.Sprintf("memtable size %d: want 256KiB to 1GiB", p.State.MemTableSize), "state", "memtable_size"))
	}
	if p.Batch.Size == 0 {
		p.Batch.Size = DefaultBatchSize
	} else if p.Batch.Size < 1 {
		add(p.errAt(fmt.Sprintf("batch size %d: want at least 1", p.Batch.Size), "batch", "size"))
	}
	if p.Batch.Linger == 0 {
		p.Batch.Linger = Duration(DefaultLinger)
	}
	if p.NATS.Port == 0 {
		p.NATS.Port = 4222
	} else if p.NATS.Port < -1 || p.NATS.Port > 65535 {
		add(p.errAt(fmt.Sprintf("port %d: want 1 to 65535, or -1 for a free port", p.NATS.Port), "nats", "port"))
	}
	for _, err := range p.HTTP.validate(p) {
		add(err)
	}
	for _, err := range p.validateCluster() {
		add(err)
	}
	for _, err := range p.validateControl() {
		add(err)
	}
	if p.OnError == "" {
		p.OnError = PolicyDeadLetter
	} else if err := p.checkPolicy(p.OnError, "on_error"); err != nil {
		add(err)
	}
	if p.DeadLetter.Path != "" {
		p.DeadLetter.Path = p.resolve(p.DeadLetter.Path)
		if p.DeadLetter.Subject != "" {
			add(p.errAt("set subject or path, not both", "dead_letter"))
		}
	}
	if p.Late.Path != "" {
		p.Late.Path = p.resolve(p.Late.Path)
		if p.Late.Subject != "" {
			add(p.errAt("set subject or path, not both", "late"))
		}
	}

	names := map[string]string{}
	unique := func(name, what string, path ...any) {
		if name == "" {
			add(p.errAt(what+" needs a name", path...))
			return
		}
		if !nameRE.MatchString(name) {
			add(p.errAt(fmt.Sprintf("%q is not a valid name: use letters, digits, - and _", name), append(path, "name")...))
			return
		}
		if prev, ok := names[name]; ok {
			add(p.errAt(fmt.Sprintf("the name %q is already used by %s", name, prev), append(path, "name")...))
			return
		}
		names[name] = what + " " + pathString(path)
	}

	if len(p.Sources) == 0 {
		add(p.errAt("a pipeline needs at least one source", "sources"))
	}
	for i := range p.Sources {
		s := &p.Sources[i]
		unique(s.Name, "source", "sources", i)
		for _, err := range p.validateSource(i, s) {
			add(err)
		}
	}
	for i := range p.Operators {
		o := &p.Operators[i]
		unique(o.Name, "operator", "operators", i)
		for _, err := range p.validateOperator(i, o) {
			add(err)
		}
	}
	for _, err := range p.validateTransactionalPipeline() {
		add(err)
	}
	for i := range p.Sources {
		if s := &p.Sources[i]; (s.Type == "file" || s.Type == "stdin") && s.MaxLineBytes == 0 {
			s.MaxLineBytes = DefaultMaxLineBytes
			if len(p.Operators) > 0 && p.Operators[0].Limits.MaxRecordBytes > s.MaxLineBytes {
				s.MaxLineBytes = p.Operators[0].Limits.MaxRecordBytes
			}
		}
	}
	// Standard input and output are one stream each.
	var stdin, stdout []int
	for i := range p.Sources {
		if p.Sources[i].Type == "stdin" {
			stdin = append(stdin, i)
		}
	}
	for i := range p.Sinks {
		if p.Sinks[i].Type == "stdout" {
			stdout = append(stdout, i)
		}
	}
	for _, i := range stdin[min(1, len(stdin)):] {
		add(p.errAt(fmt.Sprintf("source %q reads standard input already: a pipeline has one stdin source", p.Sources[stdin[0]].Name), "sources", i, "type"))
	}
	for _, i := range stdout[min(1, len(stdout)):] {
		add(p.errAt(fmt.Sprintf("sink %q writes standard output already: a pipeline has one stdout sink", p.Sinks[stdout[0]].Name), "sinks", i, "type"))
	}
	if len(p.Sinks) == 0 {
		add(p.errAt("a pipeline needs at least one sink", "sinks"))
	}
	for i := range p.Sinks {
		s := &p.Sinks[i]
		unique(s.Name, "sink", "sinks", i)
		for _, err := range p.validateSink(i, s) {
			add(err)
		}
	}
	for _, err := range p.validateGraph() {
		add(err)
	}
	return errors.Join(errs...)
}

func (p *Pipeline) checkPolicy(pol ErrorPolicy, path ...any) error {
	switch pol {
	case PolicyDeadLetter, PolicyStop:
		return nil
	}
	return p.errAt(fmt.Sprintf("unknown error policy %q (want dead-letter or stop)", pol), path...)
}

func (p *Pipeline) resolve(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(p.Dir, path)
}

func (p *Pipeline) validateSource(i int, s *Source) []error {
	var errs []error
	at := func(msg string, key ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"sources", i}, key...)...))
	}
	switch s.Type {
	case "file", "stdin":
		if s.Type == "file" {
			switch s.Path {
			case "":
				at("a file source needs a path", "path")
			case "-":
				at(`"-" is not read as standard input: write type: stdin (and no path)`, "path")
			}
			s.Path = p.resolve(s.Path)
		}
		errs = append(errs, p.validateLines(i, s)...)
	case "generator":
		switch s.Mode {
		case "":
			s.Mode = "words"
		case "words", "sequence", "bytes":
		case "txn":
			if s.App == "" {
				at(fmt.Sprintf("generator mode txn needs app: the transactional workload (one of %s)", strings.Join(workload.Apps(), ", ")), "app")
			} else {
				errs = append(errs, p.checkWorkload(s.App, s.Knobs, []any{"sources", i}, []any{"sources", i, "knobs"})...)
			}
			for _, k := range []string{"keys", "size", "seed"} {
				if p.has("sources", i, k) {
					at(fmt.Sprintf("in mode txn the workload's knobs set the events: write knobs: {%s: ...} instead", k), k)
				}
			}
		default:
			at(fmt.Sprintf("unknown generator mode %q (want words, sequence, bytes or txn)", s.Mode), "mode")
		}
		if s.Mode != "txn" {
			for _, k := range []string{"app", "knobs"} {
				if p.has("sources", i, k) {
					at(fmt.Sprintf("%s is a key of generator mode txn", k), k)
				}
			}
		}
		if s.Rate < 0 {
			at(fmt.Sprintf("rate %g: want 0 (unlimited) or more", s.Rate), "rate")
		}
	case "nats":
		if s.Subject == "" {
			at("a nats source needs a subject", "subject")
		}
	case "jetstream":
		if s.Stream == "" {
			at("a jetstream source needs a stream", "stream")
		}
		if s.Consumer == "" {
			s.Consumer = "sluice-" + p.Name + "-" + s.Name
		}
		if s.Create && len(s.Subjects) == 0 {
			at("create: true needs the stream's subjects", "subjects")
		}
	case "":
		at("a source needs a type (file, stdin, generator, nats or jetstream)", "type")
	default:
		at(fmt.Sprintf("unknown source type %q (want file, stdin, generator, nats or jetstream)", s.Type), "type")
	}
	return errs
}

// Formats of file, stdin and stdout lines.
const (
	FormatJSONL = "jsonl"
	FormatJSON  = "json"
	FormatLines = "lines"
)

// DefaultMaxLineBytes is the least default of a source's max_line_bytes.
const DefaultMaxLineBytes = file.DefaultMaxLine

// validateLines checks the keys of a source that reads lines (file,
// stdin): the format, the fields of format json, the line cap.
func (p *Pipeline) validateLines(i int, s *Source) []error {
	var errs []error
	at := func(msg string, key ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"sources", i}, key...)...))
	}
	switch s.Format {
	case "":
		s.Format = FormatJSONL
	case FormatJSONL, FormatJSON, FormatLines:
	default:
		at(fmt.Sprintf("unknown format %q (want jsonl: Sluice's record envelope; json: plain JSON, the line is the value; lines: the line is the value)", s.Format), "format")
	}
	for _, f := range []struct{ key, v string }{{"key_field", s.KeyField}, {"time_field", s.TimeField}} {
		if f.v == "" {
			if p.has("sources", i, f.key) {
				at("empty: want a JSON pointer such as /user/id or a dotted path such as user.id, or leave it out", f.key)
			}
			continue
		}
		if s.Format != FormatJSON {
			at(fmt.Sprintf("%s applies to format json (plain JSON lines), not %s", f.key, s.Format), f.key)
		} else if _, err := file.ParseField(f.v); err != nil {
			at(err.Error(), f.key)
		}
	}
	if s.TimeUnit != "" {
		if s.TimeField == "" {
			at("time_unit applies with time_field only", "time_unit")
		} else if _, err := file.CheckTimeUnit(file.TimeUnit(s.TimeUnit)); err != nil {
			at(err.Error(), "time_unit")
		}
	} else if s.TimeField != "" {
		s.TimeUnit = string(file.DefaultTimeUnit)
	}
	return errs
}

func (p *Pipeline) validateOperator(i int, o *Operator) []error {
	var errs []error
	at := func(msg string, key ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"operators", i}, key...)...))
	}
	switch o.Kind {
	case KindMap, KindFilter, KindFlatMap:
		if len(o.State) > 0 {
			at(fmt.Sprintf("a %s operator has no state; only keyed operators declare tables", o.Kind), "state")
		}
	case KindTransactional:
	case KindKeyed:
		if len(o.State) == 0 {
			o.State = []string{o.Name}
		}
		seen := map[string]bool{}
		for j, t := range o.State {
			if !nameRE.MatchString(t) {
				at(fmt.Sprintf("%q is not a valid table name: use letters, digits, - and _", t), "state", j)
			} else if seen[t] {
				at(fmt.Sprintf("table %q is listed twice", t), "state", j)
			}
			seen[t] = true
		}
	case KindAggregate, KindWindow, KindJoin:
	case "":
		at("an operator needs a kind (map, filter, flatmap, keyed, transactional, aggregate, window or join)", "kind")
	default:
		at(fmt.Sprintf("unknown operator kind %q (want map, filter, flatmap, keyed, transactional, aggregate, window or join)", o.Kind), "kind")
	}
	if o.Kind != "" {
		errs = append(errs, p.validateWindowed(i, o)...)
	}
	if o.Kind != "" {
		errs = append(errs, p.validateTransactional(i, o)...)
	}
	if o.Grants != nil {
		errs = append(errs, p.validateGrants(i, o.Grants)...)
	}
	if o.Plugin == "" {
		if !o.Windowed() {
			at("an operator needs a plugin (the path of a .wasm module)", "plugin")
		}
	} else {
		o.Plugin = p.resolve(o.Plugin)
	}
	errs = append(errs, p.validateEngine(i, o)...)
	if o.Parallelism < 0 {
		at(fmt.Sprintf("parallelism %d: want 1 or more, or leave it out for one worker per CPU", o.Parallelism), "parallelism")
	}
	switch off := o.Limits.CallTimeout != nil && *o.Limits.CallTimeout == 0; {
	case off && !o.Limits.DeadlineOffMayHangHost:
		at("0s turns the call deadline off: a guest call that never returns then stops the whole host "+
			"(compiled guest code cannot be preempted, so the garbage collector, the HTTP API and the signals wait for it, "+
			"and only SIGKILL ends it); give a timeout (the deadline costs tens of nanoseconds per record), "+
			"or set limits.deadline_off_may_hang_host: true for a plugin you trust never to loop", "limits", "call_timeout")
	case !off && o.Limits.DeadlineOffMayHangHost:
		at("deadline_off_may_hang_host applies only with call_timeout: 0s", "limits", "deadline_off_may_hang_host")
	}
	switch m := o.Limits.MaxRecordBytes; {
	case m == 0:
		o.Limits.MaxRecordBytes = DefaultMaxRecordBytes
	case m < 0:
		at("max_record_bytes must be positive", "limits", "max_record_bytes")
	case m > abi.MaxRecordSize:
		at(fmt.Sprintf("max_record_bytes %d: at most 16MiB (%d), the plugin ABI's bound on one record", m, abi.MaxRecordSize), "limits", "max_record_bytes")
	}
	if o.OnError == "" {
		o.OnError = p.OnError
	} else if err := p.checkPolicy(o.OnError, "operators", i, "on_error"); err != nil {
		errs = append(errs, err)
	}
	if o.Retries < 0 {
		at(fmt.Sprintf("retries %d: want 0 or more", o.Retries), "retries")
	} else if o.Retries > 0 && o.Kind == KindTransactional {
		at("retries are not for transactional operators: a failed batch is dead-lettered or stops the pipeline (on_error)", "retries")
	}
	if o.QuarantineAfter < 0 {
		at(fmt.Sprintf("quarantine_after %d: want 0 (never) or more", o.QuarantineAfter), "quarantine_after")
	}
	if o.RollbackBatches == nil {
		n := DefaultRollbackBatches
		o.RollbackBatches = &n
	} else if *o.RollbackBatches < 0 {
		at(fmt.Sprintf("rollback_batches %d: want 0 (no automatic rollback) or more", *o.RollbackBatches), "rollback_batches")
	}
	if o.Config != nil {
		b, err := json.Marshal(jsonable(o.Config))
		if err != nil {
			at(fmt.Sprintf("config cannot be passed to the plugin as JSON: %v", err), "config")
		}
		o.ConfigJSON = b
	}
	return errs
}

// validateEngine checks an operator's engine key, and sets it to the
// default, wazero, when it is left out.
func (p *Pipeline) validateEngine(i int, o *Operator) []error {
	err := wasm.CheckEngine(o.Engine)
	switch {
	case o.Engine == "":
		o.Engine = wasm.EngineWazero
	case errors.Is(err, wasm.ErrEngineNotBuilt):
		return []error{p.errAt(fmt.Sprintf("operator %q asks for engine %q, which this build of sluice does not hold (it was built without the %s build tag): "+
			"build sluice with %s, or leave engine out to run on %s", o.Name, o.Engine, wasm.EngineWasmtime, wasm.WasmtimeBuild, wasm.EngineWazero),
			"operators", i, "engine")}
	case err != nil:
		engines := wasm.Engines()
		msg := fmt.Sprintf("unknown engine %q", o.Engine)
		keys := make([]key, len(engines))
		for j, e := range engines {
			keys[j] = key{name: e}
		}
		if s := nearest(o.Engine, keys); s != "" {
			msg += fmt.Sprintf(": did you mean %q?", s)
		}
		return []error{p.errAt(msg+" (want "+strings.Join(engines, " or ")+")", "operators", i, "engine")}
	}
	return nil
}

// jsonable converts YAML's map[string]any/[]any trees (which may hold
// map[any]any for non-string keys) into values encoding/json accepts.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = jsonable(e)
		}
		return m
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = jsonable(e)
		}
		return s
	}
	return v
}

func (p *Pipeline) validateSink(i int, s *Sink) []error {
	var errs []error
	at := func(msg string, key ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"sinks", i}, key...)...))
	}
	switch s.Type {
	case "file", "stdout":
		if s.Type == "file" {
			switch s.Path {
			case "":
				at("a file sink needs a path", "path")
			case "-":
				at(`"-" is not standard output: write type: stdout (and no path)`, "path")
			}
			s.Path = p.resolve(s.Path)
		}
		switch s.Format {
		case "":
			s.Format = FormatJSONL
		case FormatJSONL, FormatJSON, FormatLines:
		default:
			at(fmt.Sprintf("unknown format %q (want jsonl: Sluice's record envelope; json: each value, which must be JSON; lines: each value)", s.Format), "format")
		}
	case "nats":
		if s.Subject == "" {
			at("a nats sink needs a subject", "subject")
		}
	case "jetstream":
		if s.Subject == "" {
			at("a jetstream sink needs a subject", "subject")
		}
		if s.Create && s.Stream == "" {
			at("create: true needs the stream's name", "stream")
		}
	case "":
		at("a sink needs a type (file, stdout, nats or jetstream)", "type")
	default:
		at(fmt.Sprintf("unknown sink type %q (want file, stdout, nats or jetstream)", s.Type), "type")
	}
	return errs
}

// NeedsNATS reports whether any source, sink or the dead-letter destination
// uses NATS: a pipeline that does not runs without a NATS server or
// connection.
func (p *Pipeline) NeedsNATS() bool {
	for _, s := range p.Sources {
		if s.Type == "nats" || s.Type == "jetstream" {
			return true
		}
	}
	for _, s := range p.Sinks {
		if s.Type == "nats" || s.Type == "jetstream" {
			return true
		}
	}
	return p.DeadLetter.Subject != "" || p.Late.Subject != "" || p.Cluster != nil
}
