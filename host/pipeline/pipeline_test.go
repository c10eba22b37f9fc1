package pipeline

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/adapt"
)

const good = `
name: wc
sources:
  - name: lines
    type: file
    path: in.txt
    format: lines
operators:
  - name: split
    plugin: plugins/wordsplit.wasm
    kind: flatmap
    parallelism: 2
    config:
      lower: true
      n: [1, 2]
  - name: count
    plugin: /abs/wordcount.wasm
    kind: keyed
    limits:
      call_timeout: 250ms
      max_record_bytes: 64KiB
sinks:
  - name: out
    type: file
    path: out.jsonl
dead_letter:
  path: dead.jsonl
batch:
  size: 256
  linger: 2ms
`

func TestParseGood(t *testing.T) {
	p, err := Parse("wc.yaml", "/pipes", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "wc" || len(p.Sources) != 1 || len(p.Operators) != 2 || len(p.Sinks) != 1 {
		t.Fatalf("parsed %+v", p)
	}
	if got := p.Sources[0].Path; got != filepath.Join("/pipes", "in.txt") {
		t.Errorf("source path %q, want it resolved against the file's directory", got)
	}
	if got := p.Operators[0].Plugin; got != "/pipes/plugins/wordsplit.wasm" {
		t.Errorf("plugin path %q", got)
	}
	if got := p.Operators[1].Plugin; got != "/abs/wordcount.wasm" {
		t.Errorf("absolute plugin path changed to %q", got)
	}
	if got := string(p.Operators[0].ConfigJSON); got != `{"lower":true,"n":[1,2]}` {
		t.Errorf("config JSON %s", got)
	}
	if got := p.Operators[1].State; len(got) != 1 || got[0] != "count" {
		t.Errorf("keyed operator default table %v, want [count]", got)
	}
	if got := time.Duration(*p.Operators[1].Limits.CallTimeout); got != 250*time.Millisecond {
		t.Errorf("call timeout %v", got)
	}
	if got := p.Operators[1].Limits.MaxRecordBytes; got != 64<<10 {
		t.Errorf("max record bytes %d", got)
	}
	if p.Operators[0].Limits.CallTimeout != nil {
		t.Errorf("unset call timeout should stay nil so the runtime default applies")
	}
	if p.Batch.Size != 256 || time.Duration(p.Batch.Linger) != 2*time.Millisecond {
		t.Errorf("batch %+v", p.Batch)
	}
	if p.OnError != PolicyDeadLetter || p.Operators[0].OnError != PolicyDeadLetter {
		t.Errorf("default policy %q %q", p.OnError, p.Operators[0].OnError)
	}
	if p.State.KeyGroups != DefaultKeyGroups || p.State.MemTableSize != DefaultMemTableSize || p.DataDir != "/pipes/.sluice/wc" || p.CompileCache != "" {
		t.Errorf("defaults: key groups %d, memtable size %d, data dir %q, compile cache %q (want empty: the runner picks it)", p.State.KeyGroups, p.State.MemTableSize, p.DataDir, p.CompileCache)
	}
	if p.State.CommitInterval != 0 {
		t.Errorf("default commit interval %v, want 0 (every batch)", time.Duration(p.State.CommitInterval))
	}
	if p.NeedsNATS() {
		t.Errorf("a file-only pipeline with a file dead-letter needs no NATS")
	}
	q, err := Parse("wc.yaml", "/pipes", []byte(good+"state:\n  commit_interval: 250ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(q.State.CommitInterval); got != 250*time.Millisecond {
		t.Errorf("state.commit_interval parsed as %v, want 250ms", got)
	}
}

// TestParseErrors checks that each bad input is refused with an error
// naming the line and the key at fault.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"empty", ``, []string{"p.yaml: the file is empty"}},
		{"not a mapping", `- a`, []string{"p.yaml:1:", "must be a mapping"}},
		{"syntax", "name: x\nsources: [\n", []string{"p.yaml:"}},
		{"unknown key", strings.Replace(good, "    kind: keyed", "    kidn: keyed", 1), []string{"p.yaml:18:", `unknown key "kidn" in an operator`}},
		{"unknown kind", strings.Replace(good, "kind: keyed", "kind: keyd", 1), []string{"p.yaml:18:", "operators[1].kind", `unknown operator kind "keyd"`}},
		{"bad duration", strings.Replace(good, "250ms", "quick", 1), []string{"p.yaml:20:", `"quick" is not a duration`}},
		{"bad size", strings.Replace(good, "64KiB", "lots", 1), []string{"p.yaml:21:", `"lots" is not a size`}},
		{"wrong type", strings.Replace(good, "parallelism: 2", "parallelism: two", 1), []string{"p.yaml:12:", "two"}},
		{"missing plugin", strings.Replace(good, "    plugin: /abs/wordcount.wasm\n", "", 1), []string{"p.yaml:16:", "operators[1]", "needs a plugin"}},
		{"duplicate name", strings.Replace(good, "name: count", "name: split", 1), []string{"p.yaml:16:", "operators[1].name", `"split" is already used by operator operators[0]`}},
		{"no sinks", good[:strings.Index(good, "sinks:")], []string{"p.yaml", "at least one sink"}},
		{"source type", strings.Replace(good, "type: file\n    path: in.txt", "type: kafka\n    path: in.txt", 1), []string{"p.yaml:5:", "sources[0].type", `unknown source type "kafka"`}},
		{"state on map", strings.Replace(good, "kind: flatmap", "kind: flatmap\n    state: [t]", 1), []string{"p.yaml:12:", "operators[0].state", "has no state"}},
		{"policy", good + "on_error: explode\n", []string{"p.yaml:31:", "on_error", `unknown error policy "explode"`}},
		{"memtable size", good + "state:\n  memtable_size: 64KiB\n", []string{"p.yaml:32:", "state.memtable_size", "memtable size 65536: want 256KiB to 1GiB"}},
		{"commit interval", good + "state:\n  commit_interval: -1s\n", []string{"p.yaml:32:", "state.commit_interval", `"-1s" is not a duration`}},
		{"deadline off", strings.Replace(good, "250ms", "0s", 1), []string{"p.yaml:20:", "operators[1].limits.call_timeout", "0s turns the call deadline off", "deadline_off_may_hang_host: true"}},
		{"hang without the deadline off", strings.Replace(good, "call_timeout: 250ms", "call_timeout: 250ms\n      deadline_off_may_hang_host: true", 1),
			[]string{"p.yaml:21:", "operators[1].limits.deadline_off_may_hang_host", "only with call_timeout: 0s"}},
		{"jetstream create", strings.Replace(good, "type: file\n    path: in.txt\n    format: lines", "type: jetstream\n    stream: S\n    create: true", 1), []string{"p.yaml:", "sources[0]", "subjects"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", "/pipes", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not a *pipeline.Error", err)
			}
		})
	}
}

// Dead letters go, by default, to a file the runner places in the data
// directory, so that a pipeline of files needs no NATS; a subject, and
// only a subject, needs it.
func TestParseDeadLetterDefault(t *testing.T) {
	for _, tc := range []struct {
		name, dead string
		want       DeadLetter
		nats       bool
	}{
		{"default", "", DeadLetter{}, false},
		{"path", "dead_letter: {path: dead.jsonl}\n", DeadLetter{Path: "/pipes/dead.jsonl"}, false},
		{"subject", "dead_letter: {subject: wc.dead}\n", DeadLetter{Subject: "wc.dead"}, true},
		{"fail run", "dead_letter: {fail_run: true}\n", DeadLetter{FailRun: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := strings.Replace(good, "dead_letter:\n  path: dead.jsonl\n", tc.dead, 1)
			p, err := Parse("p.yaml", "/pipes", []byte(y))
			if err != nil {
				t.Fatal(err)
			}
			if p.DeadLetter != tc.want {
				t.Errorf("dead_letter = %+v, want %+v", p.DeadLetter, tc.want)
			}
			if p.NeedsNATS() != tc.nats {
				t.Errorf("NeedsNATS() = %v, want %v", p.NeedsNATS(), tc.nats)
			}
		})
	}
}

// The deadline goes off only when the pipeline says it accepts that a
// call that never returns hangs the host.
func TestParseDeadlineOff(t *testing.T) {
	y := strings.Replace(good, "call_timeout: 250ms", "call_timeout: 0s\n      deadline_off_may_hang_host: true", 1)
	p, err := Parse("p.yaml", "/pipes", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if l := p.Operators[1].Limits; l.CallTimeout == nil || *l.CallTimeout != 0 || !l.DeadlineOffMayHangHost {
		t.Errorf("limits = %+v, want the deadline off and accepted", l)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "64KiB": 64 << 10, "1MiB": 1 << 20, "2 GB": 2e9, "7B": 7} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5MiB", "lots", "1 TiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) gave no error", in)
		}
	}
}

const goodTxn = `
name: ledger
sources:
  - name: events
    type: generator
    mode: txn
    app: sl
    count: 100000
    knobs:
      keys: 115200
      skew: 0.25
operators:
  - name: ledger
    plugin: ledger.wasm
    kind: transactional
    tables:
      - name: accounts
        init:
          generator: {app: sl, keys: 115200, skew: 0.25}
      - name: books
        init:
          generator:
            app: sl
            table: book_entries
            keys: 115200
      - name: audit
        init: {file: audit.jsonl}
      - name: scratch
    punctuation:
      events: 4096
      interval: 50ms
    strategy: ns-chain-lazy
    workers: 2
sinks:
  - name: out
    type: file
    path: out.jsonl
`

func TestParseTransactional(t *testing.T) {
	p, err := Parse("l.yaml", "/pipes", []byte(goodTxn))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Sources[0]
	if s.Mode != "txn" || s.App != "sl" || len(s.Knobs) != 2 || s.Knobs[0] != (Knob{Name: "keys", Value: "115200", Line: 10}) ||
		s.Knobs[1] != (Knob{Name: "skew", Value: "0.25", Line: 11}) {
		t.Errorf("source %+v", s)
	}
	o := p.Operators[0]
	if o.Kind != KindTransactional || o.Strategy != "ns-chain-lazy" || o.Workers != 2 {
		t.Errorf("operator %+v", o)
	}
	if o.Punctuation != (Punctuation{Events: 4096, Interval: Duration(50 * time.Millisecond)}) {
		t.Errorf("punctuation %+v", o.Punctuation)
	}
	if got := o.TableNames(); strings.Join(got, ",") != "accounts,books,audit,scratch" {
		t.Errorf("tables %v", got)
	}
	g := o.Tables[0].Init.Generator
	if g.App != "sl" || g.Table != "accounts" || len(g.Knobs) != 2 || g.Knobs[1].Name != "skew" || g.Line != 19 {
		t.Errorf("generator init %+v: want app sl, the table named after its own, two knobs, line 19", g)
	}
	if g := o.Tables[1].Init.Generator; g.Table != "book_entries" || len(g.Knobs) != 1 || g.Knobs[0].Line != 25 {
		t.Errorf("generator init with table %+v", g)
	}
	if got := o.Tables[2].Init.File; got != "/pipes/audit.jsonl" {
		t.Errorf("init file %q, want it resolved", got)
	}
	if o.Tables[3].Init != nil {
		t.Errorf("table without init: %+v", o.Tables[3].Init)
	}
	if len(o.State) != 0 || o.Parallelism != 0 {
		t.Errorf("a transactional operator got state %v and parallelism %d", o.State, o.Parallelism)
	}
}

func TestParseTransactionalDefaults(t *testing.T) {
	y := `
sources: [{name: in, type: file, path: in.jsonl}]
operators:
  - {name: t, plugin: t.wasm, kind: transactional, tables: [{name: accounts}]}
sinks: [{name: out, type: file, path: out.jsonl}]
`
	p, err := Parse("d.yaml", "/pipes", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	o := p.Operators[0]
	if o.Punctuation != (Punctuation{Events: DefaultPunctuationEvents}) || o.Strategy != DefaultStrategy || o.Workers != 0 {
		t.Errorf("defaults: punctuation %+v, strategy %q, workers %d", o.Punctuation, o.Strategy, o.Workers)
	}
	if got := o.Punctuation.String(); got != "{events: 10240}" {
		t.Errorf("punctuation written as %q", got)
	}
	if o.Strategy != "adaptive" || o.Adaptive != nil || o.Adaptive.Config().Patience != adapt.DefaultPatience {
		t.Errorf("default strategy %q, adaptive %+v: want adaptive with the model's defaults", o.Strategy, o.Adaptive)
	}
}

func TestParseAdaptive(t *testing.T) {
	y := `
sources: [{name: in, type: file, path: in.jsonl}]
operators:
  - name: t
    plugin: t.wasm
    kind: transactional
    tables: [{name: accounts}]
    strategy: adaptive
    adaptive:
      dfs_skew: 0.3
      chain_cyclic: 0
      eager_op_cost: 5us
      initial: bfs-op-lazy
      patience: 4
      band: 0.1
      margin: 0.1
      significance: 3
      spread: 0.05
sinks: [{name: out, type: file, path: out.jsonl}]
`
	p, err := Parse("a.yaml", "/pipes", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Operators[0].Adaptive.Config()
	want := adapt.DefaultConfig()
	want.DFSSkew, want.ChainCyclic, want.EagerOpCost = 0.3, 0, 5*time.Microsecond
	initial, _ := txn.ParseStrategy("bfs-op-lazy")
	want.Initial = &initial
	want.Patience, want.Margin, want.Band = 4, 0.1, 0.1
	want.Significance, want.Spread = 3, 0.05
	if c.Initial == nil || *c.Initial != initial {
		t.Errorf("initial %v, want bfs-op-lazy", c.Initial)
	}
	c.Initial, want.Initial = nil, nil
	if c != want {
		t.Errorf("config\n got %+v\nwant %+v (the defaults with the keys written)", c, want)
	}
}

// TestParseTransactionalErrors checks every key of transactional operators
// and the txn generator mode for its errors, with lines.
func TestParseTransactionalErrors(t *testing.T) {
	r := func(old, new string) string {
		if !strings.Contains(goodTxn, old) {
			t.Fatalf("the good pipeline has no %q", old)
		}
		return strings.Replace(goodTxn, old, new, 1)
	}
	keyed := "  - name: count\n    plugin: c.wasm\n    kind: keyed\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"parallelism", r("    workers: 2\n", "    workers: 2\n    parallelism: 2\n"), []string{"l.yaml:34:", "operators[0].parallelism", "has no parallelism", "use workers"}},
		{"state", r("    workers: 2\n", "    workers: 2\n    state: [a]\n"), []string{"l.yaml:34:", "operators[0].state", "under tables"}},
		{"no tables", r("    tables:\n      - name: accounts\n", "    tablez:\n      - name: accounts\n"), []string{"l.yaml:16:", `unknown key "tablez"`}},
		{"missing tables", strings.Replace(goodTxn, goodTxn[strings.Index(goodTxn, "    tables:"):strings.Index(goodTxn, "    punctuation:")], "", 1), []string{"l.yaml:13:", "operators[0].tables", "at least one table"}},
		{"table name", r("- name: books", "- name: bad/name"), []string{"l.yaml:20:", "operators[0].tables[1].name", `"bad/name" is not a valid table name`}},
		{"table twice", r("- name: books", "- name: accounts"), []string{"l.yaml:20:", "operators[0].tables[1].name", `table "accounts" is listed twice`}},
		{"table unnamed", r("      - name: scratch\n", "      - init: {file: x}\n"), []string{"l.yaml:28:", "operators[0].tables[3]", "a table needs a name"}},
		{"unknown table key", r("      - name: scratch\n", "      - name: scratch\n        size: 3\n"), []string{"l.yaml:29:", `unknown key "size" in a table`}},
		{"init empty", r("init: {file: audit.jsonl}", "init: {}"), []string{"l.yaml:27:", "operators[0].tables[2].init", "needs file or generator"}},
		{"init both", r("init: {file: audit.jsonl}", "init: {file: a.jsonl, generator: {app: sl}}"), []string{"l.yaml:27:", "operators[0].tables[2].init", "file or generator, not both"}},
		{"init unknown key", r("init: {file: audit.jsonl}", "init: {path: audit.jsonl}"), []string{"l.yaml:27:", `unknown key "path" in init`}},
		{"generator no app", r("generator: {app: sl, keys: 115200, skew: 0.25}", "generator: {keys: 1}"), []string{"l.yaml:19:", "operators[0].tables[0].init.generator", "needs app"}},
		{"generator not a mapping", r("generator: {app: sl, keys: 115200, skew: 0.25}", "generator: sl"), []string{"l.yaml:19:", "generator must be a mapping"}},
		{"generator list knob", r("generator: {app: sl, keys: 115200, skew: 0.25}", "generator: {app: sl, keys: [1, 2]}"), []string{"l.yaml:19:", "generator.keys must be a single value"}},
		{"generator knob twice", r("generator: {app: sl, keys: 115200, skew: 0.25}", "generator: {app: sl, keys: 1, keys: 2}"), []string{"l.yaml:19:"}},
		{"events", r("events: 4096", "events: 0"), []string{"l.yaml:30:", "operators[0].punctuation.events", "events 0: want at least 1"}},
		{"negative events", r("events: 4096", "events: -5"), []string{"l.yaml:30:", "events -5"}},
		{"interval", r("interval: 50ms", "interval: soon"), []string{"l.yaml:31:", `"soon" is not a duration`}},
		{"punctuation key", r("interval: 50ms", "every: 50ms"), []string{"l.yaml:31:", `unknown key "every" in punctuation`}},
		{"strategy", r("strategy: ns-chain-lazy", "strategy: fastest"), []string{"l.yaml:32:", "operators[0].strategy", `unknown strategy "fastest"`, "ns-chain-lazy", "serial", "tstream", "sstore"}},
		{"workers", r("workers: 2", "workers: -1"), []string{"l.yaml:33:", "operators[0].workers", "workers -1"}},
		{"read_window", r("    workers: 2\n", "    workers: 2\n    read_window: -1\n"), []string{"l.yaml:34:", "operators[0].read_window", "read_window -1: want 0 (no windowed reads) to 16777216 events"}},
		{"read_window too large", r("    workers: 2\n", "    workers: 2\n    read_window: 16777217\n"), []string{"l.yaml:34:", "operators[0].read_window", "read_window 16777217"}},
		{"read_window on keyed", r("sinks:\n", keyed+"    read_window: 8\nsinks:\n"), []string{"l.yaml:37:", "operators[1].read_window", "read_window is a key of transactional operators"}},
		{"adaptive beside a static strategy", r("    workers: 2\n", "    workers: 2\n    adaptive: {patience: 3}\n"), []string{"l.yaml:34:", "operators[0].adaptive", "strategy is ns-chain-lazy"}},
		{"adaptive threshold", r("strategy: ns-chain-lazy\n    workers: 2\n", "strategy: adaptive\n    workers: 2\n    adaptive:\n      dfs_skew: -0.5\n"), []string{"l.yaml:35:", "operators[0].adaptive.dfs_skew", "dfs_skew -0.5: want a number at least 0"}},
		{"adaptive band", r("strategy: ns-chain-lazy\n    workers: 2\n", "strategy: adaptive\n    workers: 2\n    adaptive: {band: 1.5}\n"), []string{"l.yaml:34:", "operators[0].adaptive.band", "band 1.5: want a fraction in [0, 1)"}},
		{"adaptive significance", r("strategy: ns-chain-lazy\n    workers: 2\n", "strategy: adaptive\n    workers: 2\n    adaptive: {significance: 0}\n"), []string{"l.yaml:34:", "operators[0].adaptive.significance", "significance 0: want a number above 0"}},
		{"adaptive spread", r("strategy: ns-chain-lazy\n    workers: 2\n", "strategy: adaptive\n    workers: 2\n    adaptive: {spread: -0.1}\n"), []string{"l.yaml:34:", "operators[0].adaptive.spread", "spread -0.1: want a number above 0"}},
		{"adaptive initial", r("strategy: ns-chain-lazy\n    workers: 2\n", "strategy: adaptive\n    workers: 2\n    adaptive: {initial: serial}\n"), []string{"l.yaml:34:", "operators[0].adaptive.initial", `initial "serial": want a TPG strategy`}},
		{"adaptive unknown key", r("strategy: ns-chain-lazy\n    workers: 2\n", "strategy: adaptive\n    workers: 2\n    adaptive: {skew: 1}\n"), []string{"l.yaml:34:", `unknown key "skew"`}},
		{"adaptive on keyed", r("sinks:\n", keyed+"    adaptive: {patience: 3}\nsinks:\n"), []string{"l.yaml:37:", "operators[1].adaptive", "adaptive is a key of transactional operators"}},
		{"batch beside", goodTxn + "batch: {size: 10}\n", []string{"l.yaml:38:", "batch", "batched by its punctuation", "operators[0].punctuation"}},
		{"txn keys on keyed", r("sinks:\n", keyed+"    strategy: serial\n    workers: 2\nsinks:\n"), []string{"l.yaml:37:", "operators[1].strategy", "strategy is a key of transactional operators", "l.yaml:38:", "operators[1].workers"}},
		{"tables on map", r("sinks:\n", "  - name: m\n    plugin: m.wasm\n    kind: map\n    tables: [{name: x}]\n    punctuation: {events: 1}\nsinks:\n"), []string{"l.yaml:37:", "operators[1].tables", "l.yaml:38:", "operators[1].punctuation"}},
		{"punctuations differ", r("sinks:\n", "  - name: t2\n    plugin: t.wasm\n    kind: transactional\n    tables: [{name: other}]\n    punctuation: {events: 4096}\nsinks:\n"),
			[]string{"l.yaml:38:", "operators[1].punctuation", "{events: 4096} differs from {events: 4096, interval: 50ms} of operator \"ledger\""}},
		{"table shared with keyed", r("sinks:\n", keyed+"    state: [books]\nsinks:\n"), []string{"l.yaml:37:", "operators[1].state[0]", `table "books" is also used by operator "ledger"`}},
		{"table shared with earlier keyed", r("operators:\n", "operators:\n"+keyed+"    state: [audit]\n"), []string{"operators[1].tables[2].name", `table "audit" is also used by operator "count"`}},
		{"two transactional share", r("sinks:\n", "  - name: t2\n    plugin: t.wasm\n    kind: transactional\n    tables: [{name: scratch}]\n    punctuation: {events: 4096, interval: 50ms}\nsinks:\n"),
			[]string{"l.yaml:37:", "operators[1].tables[0].name", `table "scratch" is also used by operator "ledger"`}},
		{"txn mode app", r("    app: sl\n    count", "    count"), []string{"l.yaml:4:", "sources[0].app", "mode txn needs app"}},
		{"txn mode keys", r("    count: 100000\n", "    count: 100000\n    keys: 10\n"), []string{"l.yaml:9:", "sources[0].keys", "knobs: {keys: ...}"}},
		{"txn mode seed", r("    count: 100000\n", "    count: 100000\n    seed: 10\n"), []string{"l.yaml:9:", "sources[0].seed", "knobs: {seed: ...}"}},
		{"knobs on words", r("mode: txn", "mode: words"), []string{"l.yaml:7:", "sources[0].app", "a key of generator mode txn", "l.yaml:9:", "sources[0].knobs"}},
		{"knobs not a mapping", r("    knobs:\n      keys: 115200\n      skew: 0.25\n", "    knobs: [keys]\n"), []string{"l.yaml:9:", "knobs must be a mapping"}},
		{"source app", r("    app: sl\n", "    app: bank\n"), []string{"l.yaml:7:", "sources[0].app", `unknown workload "bank" (want one of sl, gs, ngs, tp, ob)`}},
		{"source knob value", r("skew: 0.25\n", "skew: steep\n"), []string{"l.yaml:11:", "sources[0].knobs.skew", `"steep": not a finite number`}},
		{"source unknown knob", r("skew: 0.25\n", "skw: 0.25\n"), []string{"l.yaml:11:", "sources[0].knobs.skw", `unknown knob "skw" (workload sl reads keys, skew`}},
		{"source knob not read", r("skew: 0.25\n", "txn-length: 3\n"), []string{"l.yaml:11:", "sources[0].knobs.txn-length", "workload sl does not read knob txn-length"}},
		{"init app", r("generator: {app: sl, keys: 115200, skew: 0.25}", "generator: {app: gss}"), []string{"l.yaml:19:", "operators[0].tables[0].init.generator.app", `unknown workload "gss"`}},
		{"init knob", r("            keys: 115200\n", "            keys: 1\n"), []string{"l.yaml:25:", "operators[0].tables[1].init.generator.keys", `"1": `}},
		{"init no such table", r("table: book_entries", "table: books"), []string{"l.yaml:22:", "operators[0].tables[1].init.generator", `workload sl has no table "books" (its tables: accounts, book_entries)`}},
		{"init default table missing", r("- name: accounts", "- name: money"), []string{"l.yaml:19:", `workload sl has no table "money"`}},
		{"unknown mode", r("mode: txn", "mode: txns"), []string{"l.yaml:6:", `unknown generator mode "txns" (want words, sequence, bytes or txn)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("l.yaml", "/pipes", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not a *pipeline.Error", err)
			}
		})
	}
}

func TestParseGrants(t *testing.T) {
	y := `
sources: [{name: in, type: file, path: in.jsonl}]
operators:
  - name: m
    plugin: m.wasm
    kind: map
    grants:
      clock: true
      env: {REGION: eu-west-1}
      dirs:
        - {host: refdata, guest: /data}
        - {host: /tmp/out, guest: /out, writable: true}
sinks: [{name: out, type: file, path: out.jsonl}]
`
	p, err := Parse("g.yaml", "/pipes", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	g := p.Operators[0].Grants
	if g == nil || !g.Clock || g.Entropy || g.Env["REGION"] != "eu-west-1" || len(g.Dirs) != 2 {
		t.Fatalf("grants %+v", g)
	}
	if g.Dirs[0] != (GrantDir{Host: "/pipes/refdata", Guest: "/data"}) || !g.Dirs[1].Writable {
		t.Errorf("dirs %+v: want the host path resolved against the pipeline's directory", g.Dirs)
	}
	if !g.Nondeterministic() || (&Grants{Env: map[string]string{"A": "b"}}).Nondeterministic() || (*Grants)(nil).Nondeterministic() {
		t.Error("Nondeterministic: a clock is, environment variables alone and no grants are not")
	}
	for _, tc := range []struct{ grants, want string }{
		{"{dirs: [{guest: /data}]}", "operators[0].grants.dirs[0]: a granted directory needs host"},
		{"{dirs: [{host: d, guest: data}]}", `operators[0].grants.dirs[0].guest: guest "data": want an absolute path`},
		{"{dirs: [{host: d, guest: /d}, {host: e, guest: /d/}]}", `operators[0].grants.dirs[1].guest: guest "/d/" is granted twice`},
		{"{env: {'A=B': x}}", `environment variable name "A=B"`},
		{"{clock: sometimes}", "g.yaml:6:"},
		{"{network: true}", `unknown key "network"`},
	} {
		y := "sources: [{name: in, type: file, path: in.jsonl}]\noperators:\n  - name: m\n    plugin: m.wasm\n    kind: map\n    grants:\n      x: 1\nsinks: [{name: out, type: file, path: out.jsonl}]\n"
		y = strings.Replace(y, "\n      x: 1", " "+tc.grants, 1)
		if _, err := Parse("g.yaml", "/pipes", []byte(y)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("grants %s: %v, want an error with %q", tc.grants, err, tc.want)
		}
	}
}
