package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/adapt"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// KindTransactional is the operator kind whose events are transactions over
// shared tables, scheduled by package txn.
const KindTransactional = "transactional"

// Defaults of transactional operators.
const (
	// DefaultPunctuationEvents is the most events in one transactional
	// batch when the punctuation does not say: MorphStream's evaluation
	// punctuation.
	DefaultPunctuationEvents = 10240
	// DefaultStrategy is the scheduling strategy when none is given: the
	// adaptive strategy, which chooses exploration, unit and abort
	// handling per batch from what the previous batches measured (package
	// txn/adapt). Its first batch runs ns-op-eager, the static strategy
	// that held up best under load (BENCHMARKS.md).
	DefaultStrategy = txn.AdaptiveName
	// MaxReadWindow is the largest read_window: the versions of that many
	// events are kept in memory.
	MaxReadWindow = 1 << 24
)

// Table is one shared state table of a transactional operator. Its index in
// Operator.Tables is the table handle the guest uses.
type Table struct {
	// Name of the table in the state store.
	Name string `yaml:"name"`
	// Init gives the table's contents at the pipeline's first start; nil:
	// the table starts empty.
	Init *TableInit `yaml:"init"`
}

// TableInit says where a table's initial contents come from: exactly one of
// File and Generator is set.
type TableInit struct {
	// File is a JSON Lines file, one entry per line:
	// {"key": "...", "value": "..."}, with key_base64 and value_base64
	// (standard base64) in place of key and value for binary bytes, as the
	// file connector and `sluice state dump` write them. A line may name
	// its table ("table": "accounts"), and lines of other tables are
	// skipped, so a state dump initialises tables as they were.
	File string `yaml:"file"`
	// Generator takes the initial contents of a table of a generated
	// transactional workload.
	Generator *TableGenerator `yaml:"generator"`
}

// TableGenerator is a workload generator's initial table: app names the
// workload (as the generator source's txn mode does), table picks which of
// its tables (default: the table of the same name), and every other key is
// one of the workload's knobs.
type TableGenerator struct {
	App   string
	Table string
	Knobs []Knob
	// Line is where the generator mapping starts, for errors about it.
	Line int
}

// Knob is one workload knob, as written: the workload checks the name and
// parses the value.
type Knob struct {
	Name, Value string
	// Line is the knob's line, for errors about it.
	Line int
}

// Knobs are a workload's knobs in the order written.
type Knobs []Knob

// UnmarshalYAML reads a mapping of knob names to scalar values.
func (k *Knobs) UnmarshalYAML(n *yaml.Node) error {
	knobs, err := scalarPairs(n, "knobs")
	if err != nil {
		return err
	}
	*k = knobs
	return nil
}

// UnmarshalYAML reads {app: NAME, table: NAME, <knob>: value...}.
func (g *TableGenerator) UnmarshalYAML(n *yaml.Node) error {
	pairs, err := scalarPairs(n, "generator")
	if err != nil {
		return err
	}
	*g = TableGenerator{Line: n.Line}
	for _, p := range pairs {
		switch p.Name {
		case "app":
			g.App = p.Value
		case "table":
			g.Table = p.Value
		default:
			g.Knobs = append(g.Knobs, p)
		}
	}
	return nil
}

// scalarPairs reads a mapping whose values are all scalars.
func scalarPairs(n *yaml.Node, what string) ([]Knob, error) {
	if n.Kind != yaml.MappingNode {
		return nil, &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s must be a mapping of names to values", n.Line, what)}}
	}
	var out []Knob
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return nil, &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s.%s must be a single value, not a list or mapping", k.Line, what, k.Value)}}
		}
		if seen[k.Value] {
			return nil, &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s.%s is given twice", k.Line, what, k.Value)}}
		}
		seen[k.Value] = true
		out = append(out, Knob{Name: k.Value, Value: v.Value, Line: k.Line})
	}
	return out, nil
}

// Punctuation cuts a transactional operator's input into batches: a batch
// holds at most Events events and is cut Interval after its first one.
type Punctuation struct {
	// Events is the most events in a batch. Default 10240.
	Events int `yaml:"events"`
	// Interval bounds the time a batch waits for more events once it has
	// one; 0 (the default): no time bound, a batch waits for Events events
	// (or for the sources to end, or for a stop request).
	Interval Duration `yaml:"interval"`
}

// String formats p as it is written in a pipeline file.
func (p Punctuation) String() string {
	if p.Interval == 0 {
		return fmt.Sprintf("{events: %d}", p.Events)
	}
	return fmt.Sprintf("{events: %d, interval: %s}", p.Events, time.Duration(p.Interval))
}

// node returns the node at path below the root, or nil; an alias is
// followed to its anchored node.
func (p *Pipeline) node(path ...any) *yaml.Node {
	n := p.root
	for _, e := range path {
		if n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil {
			return nil
		}
		var next *yaml.Node
		switch v := e.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == v {
						next = n.Content[i+1]
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && v < len(n.Content) {
				next = n.Content[v]
			}
		}
		n = next
	}
	return n
}

// has reports whether the key at path is written in the file.
func (p *Pipeline) has(path ...any) bool { return p.node(path...) != nil }

// validateTransactional checks and completes the keys of a transactional
// operator, and refuses theirs on other kinds.
func (p *Pipeline) validateTransactional(i int, o *Operator) []error {
	var errs []error
	at := func(msg string, key ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"operators", i}, key...)...))
	}
	if o.Kind != KindTransactional {
		for _, k := range []string{"tables", "punctuation", "strategy", "adaptive", "workers", "read_window"} {
			if p.has("operators", i, k) {
				at(fmt.Sprintf("%s is a key of transactional operators, not of a %s operator", k, o.Kind), k)
			}
		}
		return errs
	}
	if p.has("operators", i, "parallelism") {
		at("a transactional operator has no parallelism: its scheduler's workers run the transactions (use workers)", "parallelism")
	}
	if p.has("operators", i, "state") {
		at("a transactional operator declares its shared tables under tables (name and initial contents), not state", "state")
	}
	if len(o.Tables) == 0 {
		at("a transactional operator needs at least one table (tables: [{name: accounts}])", "tables")
	}
	seen := map[string]bool{}
	for j := range o.Tables {
		t := &o.Tables[j]
		switch {
		case t.Name == "":
			at("a table needs a name", "tables", j)
		case !nameRE.MatchString(t.Name):
			at(fmt.Sprintf("%q is not a valid table name: use letters, digits, - and _", t.Name), "tables", j, "name")
		case seen[t.Name]:
			at(fmt.Sprintf("table %q is listed twice", t.Name), "tables", j, "name")
		}
		seen[t.Name] = true
		if t.Init == nil {
			if p.has("operators", i, "tables", j, "init") {
				at("init needs file or generator (or leave it out for an empty table)", "tables", j, "init")
			}
			continue
		}
		switch in := t.Init; {
		case in.File != "" && in.Generator != nil:
			at("init takes file or generator, not both", "tables", j, "init")
		case in.File != "":
			in.File = p.resolve(in.File)
		case in.Generator != nil:
			g := in.Generator
			path := []any{"operators", i, "tables", j, "init", "generator"}
			if g.App == "" {
				at(fmt.Sprintf("a generator init needs app: the workload whose initial table it is (one of %s)", strings.Join(workload.Apps(), ", ")), path[2:]...)
				break
			}
			if g.Table == "" {
				g.Table = t.Name
			}
			errs = append(errs, p.checkWorkload(g.App, g.Knobs, path, path)...)
			if names, err := workloadTables(g.App); err == nil && !slices.Contains(names, g.Table) {
				at(fmt.Sprintf("workload %s has no table %q (its tables: %s); name one with table:", g.App, g.Table, strings.Join(names, ", ")), path[2:]...)
			}
		default:
			at("init needs file or generator (or leave it out for an empty table)", "tables", j, "init")
		}
	}
	if o.Punctuation.Events == 0 && !p.has("operators", i, "punctuation", "events") {
		o.Punctuation.Events = DefaultPunctuationEvents
	} else if o.Punctuation.Events < 1 {
		at(fmt.Sprintf("events %d: want at least 1 event per batch", o.Punctuation.Events), "punctuation", "events")
	}
	if o.Strategy == "" {
		o.Strategy = DefaultStrategy
	} else if _, err := txn.ParseStrategy(o.Strategy); err != nil {
		at(fmt.Sprintf("unknown strategy %q (want %s or one of %s)", o.Strategy, txn.AdaptiveName, strings.Join(txn.StrategyNames(), ", ")), "strategy")
	}
	if o.Adaptive != nil {
		if o.Strategy != txn.AdaptiveName {
			at(fmt.Sprintf("adaptive tunes the adaptive strategy, but strategy is %s", o.Strategy), "adaptive")
		} else {
			errs = append(errs, p.validateAdaptive(i, o.Adaptive)...)
		}
	}
	if o.Workers < 0 {
		at(fmt.Sprintf("workers %d: want 1 or more, or leave it out for one per CPU", o.Workers), "workers")
	}
	if o.ReadWindow < 0 || o.ReadWindow > MaxReadWindow {
		at(fmt.Sprintf("read_window %d: want 0 (no windowed reads) to %d events", o.ReadWindow, MaxReadWindow), "read_window")
	}
	return errs
}

// validateTransactionalPipeline checks what involves several operators:
// every transactional operator has the same punctuation (it cuts the
// pipeline's batches), the pipeline's batch key is not set beside it, and
// a transactional operator's tables belong to it alone.
func (p *Pipeline) validateTransactionalPipeline() []error {
	var errs []error
	first := -1
	for i := range p.Operators {
		o := &p.Operators[i]
		if o.Kind != KindTransactional {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if f := p.Operators[first]; o.Punctuation != f.Punctuation {
			errs = append(errs, p.errAt(fmt.Sprintf("punctuation %s differs from %s of operator %q: a pipeline's batches are cut by the punctuation, so its transactional operators must share one",
				o.Punctuation, f.Punctuation, f.Name), "operators", i, "punctuation"))
		}
	}
	if first < 0 {
		return errs
	}
	if p.has("batch") {
		errs = append(errs, p.errAt(fmt.Sprintf("a pipeline with a transactional operator is batched by its punctuation (operator %q): remove batch and set operators[%d].punctuation",
			p.Operators[first].Name, first), "batch"))
	}
	// A transactional operator's tables are its own: refuse a table named
	// by it and by any other operator, where it is named the second time.
	uses := map[string][]int{} // table -> operators naming it
	for i := range p.Operators {
		o := &p.Operators[i]
		var named []string
		var paths [][]any
		if o.Kind == KindTransactional {
			for j, t := range o.Tables {
				named, paths = append(named, t.Name), append(paths, []any{"operators", i, "tables", j, "name"})
			}
		} else {
			for j, t := range o.State {
				named, paths = append(named, t), append(paths, []any{"operators", i, "state", j})
			}
		}
		for k, t := range named {
			for _, u := range uses[t] {
				prev := &p.Operators[u]
				if u != i && (prev.Kind == KindTransactional || o.Kind == KindTransactional) {
					errs = append(errs, p.errAt(fmt.Sprintf("table %q is also used by operator %q: a transactional operator's tables are its own", t, prev.Name), paths[k]...))
					break
				}
			}
			uses[t] = append(uses[t], i)
		}
	}
	return errs
}

// checkWorkload checks a workload's app and knobs as the workload package
// will take them, each error at the line of the app or knob at fault;
// appPath leads to the mapping that holds app, knobPath to the one that
// holds the knobs.
func (p *Pipeline) checkWorkload(app string, knobs []Knob, appPath, knobPath []any) []error {
	names, err := workload.AppKnobs(app)
	if err != nil {
		return []error{p.errAt(fmt.Sprintf("unknown workload %q (want one of %s)", app, strings.Join(workload.Apps(), ", ")), append(appPath, "app")...)}
	}
	k, _ := workload.Defaults(app)
	var errs []error
	for _, kn := range knobs {
		at := &Error{File: p.File, Line: kn.Line, Path: pathString(knobPath) + "." + kn.Name}
		if !slices.Contains(names, kn.Name) {
			if slices.Contains(workload.KnobNames(), kn.Name) {
				at.Msg = fmt.Sprintf("workload %s does not read knob %s (its knobs: %s)", app, kn.Name, strings.Join(names, ", "))
			} else {
				at.Msg = fmt.Sprintf("unknown knob %q (workload %s reads %s)", kn.Name, app, strings.Join(names, ", "))
			}
			errs = append(errs, at)
			continue
		}
		if err := k.Set(kn.Name, kn.Value); err != nil {
			var ke *workload.KnobError
			if errors.As(err, &ke) {
				at.Msg = fmt.Sprintf("%q: %s", kn.Value, ke.Reason)
			} else {
				at.Msg = err.Error()
			}
			errs = append(errs, at)
		}
	}
	return errs
}

// Workload returns the knobs of a workload: the application's defaults
// (workload.Defaults) with the knobs written set. A validated pipeline's
// apps and knobs give no error.
func Workload(app string, knobs []Knob) (workload.Knobs, error) {
	k, err := workload.Defaults(app)
	if err != nil {
		return k, err
	}
	for _, kn := range knobs {
		if err := k.Set(kn.Name, kn.Value); err != nil {
			return k, err
		}
	}
	return k, nil
}

// workloadTables returns the table names of an application's workload
// without building its key distribution.
func workloadTables(app string) ([]string, error) {
	k, err := workload.Defaults(app)
	if err != nil {
		return nil, err
	}
	k.Keys = workload.MinKeys
	w, err := workload.New(app, k)
	if err != nil {
		return nil, err
	}
	return w.Tables(), nil
}

// TableNames returns the names of a transactional operator's tables, by
// handle.
func (o *Operator) TableNames() []string {
	names := make([]string, len(o.Tables))
	for i, t := range o.Tables {
		names[i] = t.Name
	}
	return names
}

// Adaptive tunes a transactional operator's adaptive strategy (package
// txn/adapt, docs/transactions.md): the thresholds of its rules and how it
// learns. Every key is optional and defaults to adapt.DefaultConfig's.
type Adaptive struct {
	StructuredDeps  *float64  `yaml:"structured_deps"`
	StructuredSkew  *float64  `yaml:"structured_skew"`
	DFSSkew         *float64  `yaml:"dfs_skew"`
	ChainTemporal   *float64  `yaml:"chain_temporal"`
	ChainParametric *float64  `yaml:"chain_parametric"`
	ChainCyclic     *float64  `yaml:"chain_cyclic"`
	EagerOpCost     *Duration `yaml:"eager_op_cost"`
	EagerAborts     *float64  `yaml:"eager_aborts"`
	SerialSkew      *float64  `yaml:"serial_skew"`
	SerialAborts    *float64  `yaml:"serial_aborts"`
	// Initial is the strategy of the first batch.
	Initial  string   `yaml:"initial"`
	Band     *float64 `yaml:"band"`
	Patience int      `yaml:"patience"`
	Margin   *float64 `yaml:"margin"`
	// Significance: standard errors by which a measured strategy must
	// beat another (above 0).
	Significance *float64 `yaml:"significance"`
	// Spread: the relative standard deviation of a batch's rate assumed
	// before it is measured (above 0).
	Spread    *float64 `yaml:"spread"`
	Tolerance *float64 `yaml:"tolerance"`
	Memory    int      `yaml:"memory"`
	History   int      `yaml:"history"`
	// ProbeEvery: batches on one strategy before measuring a neighbour;
	// negative: never.
	ProbeEvery int `yaml:"probe_every"`
}

// Config returns the decision model's configuration: the defaults with
// the keys written here. Call it on a validated pipeline.
func (a *Adaptive) Config() adapt.Config {
	c := adapt.DefaultConfig()
	if a == nil {
		return c
	}
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	t := &c.Thresholds
	set(&t.StructuredDeps, a.StructuredDeps)
	set(&t.StructuredSkew, a.StructuredSkew)
	set(&t.DFSSkew, a.DFSSkew)
	set(&t.ChainTemporal, a.ChainTemporal)
	set(&t.ChainParametric, a.ChainParametric)
	set(&t.ChainCyclic, a.ChainCyclic)
	set(&t.EagerAborts, a.EagerAborts)
	set(&t.SerialSkew, a.SerialSkew)
	set(&t.SerialAborts, a.SerialAborts)
	if a.EagerOpCost != nil {
		t.EagerOpCost = time.Duration(*a.EagerOpCost)
	}
	if a.Initial != "" {
		if st, err := txn.ParseStrategy(a.Initial); err == nil {
			c.Initial = &st
		}
	}
	if a.Band != nil {
		c.Band = *a.Band
	}
	if a.Patience > 0 {
		c.Patience = a.Patience
	}
	set(&c.Margin, a.Margin)
	set(&c.Significance, a.Significance)
	set(&c.Spread, a.Spread)
	set(&c.Tolerance, a.Tolerance)
	if a.Memory > 0 {
		c.Memory = a.Memory
	}
	if a.History > 0 {
		c.History = a.History
	}
	if a.ProbeEvery != 0 {
		c.ProbeEvery = a.ProbeEvery
	}
	return c
}

// validateAdaptive checks the adaptive keys of operator i.
func (p *Pipeline) validateAdaptive(i int, a *Adaptive) []error {
	var errs []error
	at := func(msg string, key string) {
		errs = append(errs, p.errAt(msg, "operators", i, "adaptive", key))
	}
	for key, v := range map[string]*float64{
		"structured_deps": a.StructuredDeps, "structured_skew": a.StructuredSkew, "dfs_skew": a.DFSSkew,
		"chain_temporal": a.ChainTemporal, "chain_parametric": a.ChainParametric, "chain_cyclic": a.ChainCyclic,
		"eager_aborts": a.EagerAborts, "serial_skew": a.SerialSkew, "serial_aborts": a.SerialAborts,
		"margin": a.Margin, "tolerance": a.Tolerance,
	} {
		if v != nil && !(*v >= 0) {
			at(fmt.Sprintf("%s %v: want a number at least 0", key, *v), key)
		}
	}
	for key, v := range map[string]*float64{"significance": a.Significance, "spread": a.Spread} {
		if v != nil && !(*v > 0 && !math.IsInf(*v, 0)) {
			at(fmt.Sprintf("%s %v: want a number above 0", key, *v), key)
		}
	}
	if a.Band != nil && !(*a.Band >= 0 && *a.Band < 1) {
		at(fmt.Sprintf("band %v: want a fraction in [0, 1)", *a.Band), "band")
	}
	if a.EagerOpCost != nil && *a.EagerOpCost < 0 {
		at(fmt.Sprintf("eager_op_cost %v: want a duration at least 0", time.Duration(*a.EagerOpCost)), "eager_op_cost")
	}
	if a.Initial != "" {
		if st, err := txn.ParseStrategy(a.Initial); err != nil || st.Kind != txn.TPG {
			at(fmt.Sprintf("initial %q: want a TPG strategy such as ns-op-eager (exploration bfs|dfs|ns, unit op|chain, abort eager|lazy)", a.Initial), "initial")
		}
	}
	for key, v := range map[string]int{"patience": a.Patience, "memory": a.Memory, "history": a.History} {
		if v < 0 {
			at(fmt.Sprintf("%s %d: want at least 1, or leave it out for the default", key, v), key)
		}
	}
	slices.SortFunc(errs, func(x, y error) int { return strings.Compare(x.Error(), y.Error()) })
	return errs
}
