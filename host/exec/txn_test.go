package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn"
)

// bank is a native transactional Logic over two tables, accounts (0) and
// stats (1), with balances as decimal strings. Events (record values):
//
//	dep A N      credit N to A; count the deposit in stats/deposits
//	xfer A B N   move N from A to B if A holds at least N, else abort
//	reject A     credit 1 to A; Post rejects the event (its effect stays)
//	fail         the operation's function fails: the batch fails
//	copy A B     set B to A's value (B's new value is A's bytes)
//
// Post emits, per event, "ok <balance of the first key before>" or
// "aborted", keyed by the event's record key.
type bank struct{}

const (
	tAccounts = 0
	tStats    = 1
)

const (
	fnCredit = iota
	fnCreditIfFunded
	fnDebitIfFunded
	fnFail
	fnCopy
)

var bankTables = []string{"accounts", "stats"}

func (bank) Plan(_ context.Context, events []abi.Record, p *txnop.Plan) error {
	for i := range events {
		f := strings.Fields(string(events[i].Value))
		if len(f) == 0 {
			return fmt.Errorf("event %d is empty", i)
		}
		var ops []txn.Op
		switch f[0] {
		case "dep":
			ops = p.Ops(2)
			ops[0] = txn.Op{Write: p.Key(tAccounts, []byte(f[1])), Fn: fnCredit, Arg: p.Bytes([]byte(f[2]))}
			ops[1] = txn.Op{Write: p.Key(tStats, []byte("deposits")), Fn: fnCredit, Arg: p.Bytes([]byte("1"))}
		case "xfer":
			src := p.Key(tAccounts, []byte(f[1]))
			reads := p.Keys(1)
			reads[0] = src
			ops = p.Ops(2)
			ops[0] = txn.Op{Write: p.Key(tAccounts, []byte(f[2])), Reads: reads, Fn: fnCreditIfFunded, Arg: p.Bytes([]byte(f[3]))}
			ops[1] = txn.Op{Write: src, Fn: fnDebitIfFunded, Arg: p.Bytes([]byte(f[3]))}
		case "reject":
			ops = p.Ops(1)
			ops[0] = txn.Op{Write: p.Key(tAccounts, []byte(f[1])), Fn: fnCredit, Arg: p.Bytes([]byte("1"))}
		case "fail":
			ops = p.Ops(1)
			ops[0] = txn.Op{Write: p.Key(tAccounts, []byte("fail")), Fn: fnFail}
		case "copy":
			reads := p.Keys(1)
			reads[0] = p.Key(tAccounts, []byte(f[1]))
			ops = p.Ops(1)
			ops[0] = txn.Op{Write: p.Key(tAccounts, []byte(f[2])), Reads: reads, Fn: fnCopy}
		default:
			return fmt.Errorf("event %d: unknown verb %q", i, f[0])
		}
		p.Txns = append(p.Txns, txn.Txn{Ops: ops})
	}
	return nil
}

func balance(b []byte) int {
	n, _ := strconv.Atoi(string(b))
	return n
}

func (bank) Apply(_ context.Context, _, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
	amt := balance(o.Arg)
	own, _ := a.Own()
	switch o.Fn {
	case fnCredit:
		return txn.Effect{Value: strconv.AppendInt(nil, int64(balance(own)+amt), 10)}, nil
	case fnCreditIfFunded, fnDebitIfFunded:
		src := balance(own)
		if len(o.Reads) > 0 {
			v, _ := a.Read(0)
			src = balance(v)
		}
		if src < amt {
			return txn.Effect{Abort: true}, nil
		}
		if o.Fn == fnDebitIfFunded {
			amt = -amt
		}
		return txn.Effect{Value: strconv.AppendInt(nil, int64(balance(own)+amt), 10)}, nil
	case fnFail:
		return txn.Effect{}, errors.New("failing on purpose")
	case fnCopy:
		v, ok := a.Read(0)
		if !ok {
			return txn.Effect{Delete: true}, nil
		}
		return txn.Effect{Value: v}, nil // aliases the value read, maybe committed state
	}
	return txn.Effect{}, fmt.Errorf("unknown function %d", o.Fn)
}

func (bank) Post(_ context.Context, events []abi.Record, _ *txnop.Plan, res *txn.Result, out *plugin.Output) error {
	for i := range events {
		if strings.HasPrefix(string(events[i].Value), "reject") {
			out.Rejects = append(out.Rejects, plugin.Reject{Index: i, Err: errors.New("rejected by post")})
			continue
		}
		v := "aborted"
		if res.Committed[i] {
			v = "ok " + strconv.Itoa(balance(res.Observed(i, 0).Own.Bytes))
		}
		out.Records = append(out.Records, abi.Record{Origin: uint32(i), Key: events[i].Key, Value: []byte(v), Time: events[i].Time})
	}
	return nil
}

func (bank) Close(context.Context) error { return nil }

// bankModel is the serial meaning of a sequence of bank events, batch by
// batch: a batch holding a failing event is dead-lettered whole.
type bankModel struct {
	accounts map[string]int
	deposits int
	out      []string // "position:value", in order
	dead     []int    // positions
	commits  int
	aborts   int
}

func newBankModel() *bankModel { return &bankModel{accounts: map[string]int{}} }

// run applies events (positions from first) in batches of size events.
func (m *bankModel) run(values []string, first, events int) {
	for lo := 0; lo < len(values); lo += events {
		batch := values[lo:min(lo+events, len(values))]
		if slices.ContainsFunc(batch, func(v string) bool { return v == "fail" }) {
			for i := range batch {
				m.dead = append(m.dead, first+lo+i)
			}
			continue
		}
		for i, v := range batch {
			pos := first + lo + i
			f := strings.Fields(v)
			before, ok := m.accounts[f[1]], true
			switch f[0] {
			case "dep":
				n, _ := strconv.Atoi(f[2])
				m.accounts[f[1]] += n
				m.deposits++
			case "xfer":
				n, _ := strconv.Atoi(f[3])
				before = m.accounts[f[2]] // the first operation's own key is the destination
				if m.accounts[f[1]] < n {
					ok = false
					break
				}
				m.accounts[f[1]] -= n
				m.accounts[f[2]] += n
			case "reject":
				m.accounts[f[1]]++
				m.dead = append(m.dead, pos)
				m.commits++
				continue
			}
			if ok {
				m.commits++
				m.out = append(m.out, fmt.Sprintf("%d:ok %d", pos, before))
			} else {
				m.aborts++
				m.out = append(m.out, fmt.Sprintf("%d:aborted", pos))
			}
		}
	}
}

func (m *bankModel) state() map[string]string {
	s := map[string]string{}
	for k, v := range m.accounts {
		s["accounts/"+k] = strconv.Itoa(v)
	}
	if m.deposits > 0 {
		s["stats/deposits"] = strconv.Itoa(m.deposits)
	}
	return s
}

func committedState(t tb, store *state.Store) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, table := range bankTables {
		if err := store.Scan(table, func(k, v []byte) error {
			got[table+"/"+string(k)] = string(v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

func bankOperator(t tb, name, strategy string, workers, events int, stop bool) Operator {
	t.Helper()
	st, err := txn.ParseStrategy(strategy)
	if err != nil {
		t.Fatal(err)
	}
	op, err := txnop.New(txnop.Config{Name: name, Tables: bankTables, Strategy: st, Workers: workers, Logic: bank{},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return Operator{Name: name, Kind: plugin.KindTransactional, StopOnError: stop, Txn: &Txn{Operator: op, Events: events}}
}

func bankRecords(values []string) []abi.Record {
	recs := make([]abi.Record, len(values))
	for i, v := range values {
		recs[i] = abi.Record{Key: []byte("e" + strconv.Itoa(i)), Value: []byte(v), Time: int64(i)}
	}
	return recs
}

// counterValue returns the value of the counter name with the given label
// pairs, as the metrics endpoint would show it.
func counterValue(t tb, m *Metrics, name string, labels ...string) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, mt := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range mt.GetLabel() {
					found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
				}
				if !found {
					continue metrics
				}
			}
			return mt.GetCounter().GetValue()
		}
	}
	t.Fatal("no counter " + name + " with labels " + strings.Join(labels, " "))
	return 0
}

func outputs(s *memSink) []string {
	var got []string
	for _, o := range s.records() {
		pos := strings.Split(o.ID, "/")[2]
		got = append(got, pos+":"+string(o.Record.Value))
	}
	return got
}

func deadPositions(s *memSink) []int {
	var got []int
	for _, o := range s.records() {
		p, _ := strconv.Atoi(header(o.Record, HeaderPosition))
		got = append(got, p)
	}
	return got
}

var bankVerbs = []string{"dep", "dep", "xfer", "xfer", "xfer", "reject"}

// genBank draws bank events over a few accounts, so that transfers meet
// dependencies and aborts; failing events only when fail is set.
func genBank(t *rapid.T, fail bool) []string {
	accounts := []string{"a", "b", "c", "d"}
	n := rapid.IntRange(0, 150).Draw(t, "n")
	values := make([]string, n)
	for i := range values {
		acct := func(l string) string { return rapid.SampledFrom(accounts).Draw(t, l) }
		amt := strconv.Itoa(rapid.IntRange(1, 30).Draw(t, "amount"))
		switch verb := rapid.SampledFrom(bankVerbs).Draw(t, "verb"); verb {
		case "dep":
			values[i] = "dep " + acct("acct") + " " + amt
		case "xfer":
			values[i] = "xfer " + acct("src") + " " + acct("dst") + " " + amt
		case "reject":
			values[i] = "reject " + acct("acct")
		}
		if fail && rapid.IntRange(0, 40).Draw(t, "fail") == 0 {
			values[i] = "fail"
		}
	}
	return values
}

// TestTransactionalMatchesSerialModel runs random bank workloads through a
// job with every strategy, worker count and punctuation, and checks the
// outputs, dead letters, committed state, positions and metrics against
// the serial meaning of the events.
func TestTransactionalMatchesSerialModel(t *testing.T) {
	names := txn.StrategyNames()
	rapid.Check(t, func(rt *rapid.T) {
		values := genBank(rt, true)
		strategy := rapid.SampledFrom(names).Draw(rt, "strategy")
		workers := rapid.IntRange(1, 3).Draw(rt, "workers")
		events := rapid.IntRange(1, 40).Draw(rt, "events")
		chunk := rapid.IntRange(1, 50).Draw(rt, "chunk")
		dir, err := os.MkdirTemp("", "sluice-exec-txn-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		store := openStore(rt, dir)
		defer store.Close()
		r := newRun(rt, store, &sliceSource{recs: bankRecords(values), chunk: chunk}, 1000,
			bankOperator(rt, "bank", strategy, workers, events, false))
		if err := r.job.Run(context.Background()); err != nil {
			rt.Fatal(err)
		}
		m := newBankModel()
		m.run(values, 1, events)
		if got := outputs(r.sink); !slices.Equal(got, m.out) {
			rt.Fatalf("outputs\n%v\nwant\n%v", got, m.out)
		}
		if got := deadPositions(r.dead); !slices.Equal(got, m.dead) {
			rt.Fatalf("dead letters at %v, want %v", got, m.dead)
		}
		if got, want := committedState(rt, store), m.state(); !maps.Equal(got, want) {
			rt.Fatalf("committed state %v, want %v", got, want)
		}
		if got := store.Positions()["in"]; got != uint64(len(values)) {
			rt.Fatalf("committed position %d, want %d", got, len(values))
		}
		st := r.job.Status().Operators[0]
		if st.Txn == nil || st.Txn.Committed != uint64(m.commits) || st.Txn.Aborted != uint64(m.aborts) {
			rt.Fatalf("status %+v, want %d committed and %d aborted", st.Txn, m.commits, m.aborts)
		}
		if got := counterValue(rt, r.job.m, "sluice_txn_transactions_total", "operator", "bank", "outcome", "aborted"); got != float64(m.aborts) {
			rt.Fatalf("aborted transactions metric %v, want %d", got, m.aborts)
		}
	})
}

// TestTransactionalEqualsSerialStrategy runs one workload under every
// strategy and compares outputs and state with the serial strategy's.
func TestTransactionalEqualsSerialStrategy(t *testing.T) {
	var values []string
	for i := range 600 {
		a, b := "k"+strconv.Itoa(i%7), "k"+strconv.Itoa((i*3+1)%7)
		switch i % 4 {
		case 0:
			values = append(values, fmt.Sprintf("dep %s %d", a, i%13+1))
		default:
			values = append(values, fmt.Sprintf("xfer %s %s %d", a, b, i%17+1))
		}
	}
	runWith := func(strategy string) ([]string, map[string]string) {
		store := openStore(t, t.TempDir())
		defer store.Close()
		r := newRun(t, store, &sliceSource{recs: bankRecords(values), chunk: 64}, 0, bankOperator(t, "bank", strategy, 2, 128, false))
		if err := r.job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return outputs(r.sink), committedState(t, store)
	}
	wantOut, wantState := runWith("serial")
	aborted := 0
	for _, o := range wantOut {
		if strings.HasSuffix(o, "aborted") {
			aborted++
		}
	}
	if aborted == 0 || aborted == len(wantOut) {
		t.Fatalf("%d of %d aborted: the workload should mix commits and aborts", aborted, len(wantOut))
	}
	for _, name := range txn.StrategyNames() {
		gotOut, gotState := runWith(name)
		if !slices.Equal(gotOut, wantOut) {
			t.Errorf("%s: outputs differ from the serial strategy's", name)
		}
		if !maps.Equal(gotState, wantState) {
			t.Errorf("%s: state %v, serial's %v", name, gotState, wantState)
		}
	}
}

// TestTransactionalResumeDoesNotApplyTwice stops after part of the input,
// then runs the whole input on the same store: the second run resumes
// after the committed position and the state is that of one run.
func TestTransactionalResumeDoesNotApplyTwice(t *testing.T) {
	var values []string
	for i := range 300 {
		if i%3 == 0 {
			values = append(values, fmt.Sprintf("xfer a%d a%d 5", i%5, (i+2)%5))
		} else {
			values = append(values, fmt.Sprintf("dep a%d %d", i%5, i%11+1))
		}
	}
	dir := t.TempDir()
	store := openStore(t, dir)
	first := newRun(t, store, &sliceSource{recs: bankRecords(values[:170])}, 0, bankOperator(t, "bank", "ns-op-lazy", 2, 32, false))
	if err := first.job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	store.Close()

	store = openStore(t, dir)
	defer store.Close()
	second := newRun(t, store, &sliceSource{recs: bankRecords(values)}, 0, bankOperator(t, "bank", "ns-op-lazy", 2, 32, false))
	if err := second.job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := newBankModel()
	m.run(values, 1, 32)
	if got, want := committedState(t, store), m.state(); !maps.Equal(got, want) {
		t.Errorf("state after resume %v, want %v", got, want)
	}
	out := outputs(second.sink)
	if want := m.out[170:]; !slices.Equal(out, want) {
		t.Errorf("second run wrote %d outputs from %q, want %d from %q", len(out), out[0], len(want), want[0])
	}
}

// TestTransactionalStopPolicy: a failing batch stops the job without
// committing it; the batches before it are committed.
func TestTransactionalStopPolicy(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	values := []string{"dep a 5", "dep b 5", "dep a 1", "fail", "dep c 1"}
	r := newRun(t, store, &sliceSource{recs: bankRecords(values)}, 0, bankOperator(t, "bank", "ns-op-eager", 2, 2, true))
	err := r.job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `operator "bank": a batch of 2 events failed and its error policy is stop`) ||
		!strings.Contains(err.Error(), "failing on purpose") {
		t.Fatalf("Run = %v, want the stop error with the function's error", err)
	}
	var oe *txn.OpError
	if !errors.As(err, &oe) || oe.Txn != 1 {
		t.Errorf("error %v does not wrap the *txn.OpError of event 1 of the batch", err)
	}
	if got := store.Positions()["in"]; got != 2 {
		t.Errorf("committed position %d, want 2", got)
	}
	if got := committedState(t, store); !maps.Equal(got, map[string]string{"accounts/a": "5", "accounts/b": "5", "stats/deposits": "2"}) {
		t.Errorf("committed state %v", got)
	}
	if n := len(r.dead.records()); n != 0 {
		t.Errorf("%d dead letters under the stop policy", n)
	}
}

// TestTransactionalDeadLetterHeaders: the events of a failed batch are
// dead-lettered with the error and the operator's name; events Post
// rejects too, their state effects kept.
func TestTransactionalDeadLetterHeaders(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	values := []string{"dep a 5", "fail", "reject a", "dep a 1"}
	r := newRun(t, store, &sliceSource{recs: bankRecords(values)}, 0, bankOperator(t, "bank", "dfs-op-eager", 2, 2, false))
	if err := r.job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	dead := r.dead.records()
	if len(dead) != 3 {
		t.Fatalf("%d dead letters, want 3", len(dead))
	}
	for i, want := range []string{"failing on purpose", "failing on purpose", "rejected by post"} {
		d := dead[i].Record
		if got := header(d, HeaderError); !strings.Contains(got, want) {
			t.Errorf("dead letter %d error %q, want %q", i, got, want)
		}
		if header(d, HeaderOperator) != "bank" || header(d, HeaderSource) != "in" {
			t.Errorf("dead letter %d headers %v", i, d.Headers)
		}
		if string(d.Value) != values[i] {
			t.Errorf("dead letter %d value %q, want the event %q", i, d.Value, values[i])
		}
	}
	if got := committedState(t, store)["accounts/a"]; got != "2" {
		t.Errorf("balance of a %q, want 2: the failed batch leaves nothing, the rejected event its credit", got)
	}
	if st := r.job.Status().Operators[0].Txn; st.FailedBatch != 1 {
		t.Errorf("failed batches %d, want 1", st.FailedBatch)
	}
}

// TestTransactionalChangeAliasingCommittedValue: a change whose value is
// another key's committed bytes is applied as it was, even when that key
// is overwritten in the same batch and comes first in the change set.
func TestTransactionalChangeAliasingCommittedValue(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	values := []string{
		"dep a 100", "dep z 1", "dep z 1", // batch 1: a = 100
		// Batch 2: a enters the change set first (the transfer, which
		// aborts, reads it); b is set to a's committed bytes; a changes.
		"xfer a x 1000", "copy a b", "dep a 5",
	}
	r := newRun(t, store, &sliceSource{recs: bankRecords(values)}, 0, bankOperator(t, "bank", "ns-op-eager", 2, 3, false))
	if err := r.job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := committedState(t, store)
	if got["accounts/b"] != "100" || got["accounts/a"] != "105" {
		t.Errorf("a = %q, b = %q; want 105 and 100", got["accounts/a"], got["accounts/b"])
	}
}

// TestTransactionalRunsOfAtMostEvents gives the stage more records than
// its punctuation (as an expanding operator before it would): it runs
// them in order in runs of at most Events, each seeing the last's state.
func TestTransactionalRunsOfAtMostEvents(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	op := bankOperator(t, "bank", "ns-chain-lazy", 2, 3, false)
	m := NewMetrics()
	st, err := newStage(context.Background(), &op, store, m, m.operator("bank"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close(context.Background())
	values := []string{"dep a 5", "xfer a b 3", "xfer b c 2", "dep c 1", "xfer a b 2", "fail", "xfer c a 3", "dep b 1", "reject b"}
	recs := bankRecords(values)
	idx := make([]int32, len(recs))
	for i := range idx {
		idx[i] = int32(100 + i)
	}
	out, rejects, err := st.run(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	// Runs: [0,3) [3,6) fails whole, [6,9).
	var gotRej []int
	for _, r := range rejects {
		gotRej = append(gotRej, r.Index)
	}
	if !slices.Equal(gotRej, []int{3, 4, 5, 8}) {
		t.Errorf("rejects %v, want [3 4 5 8]", gotRej)
	}
	var got []string
	for _, r := range out {
		got = append(got, fmt.Sprintf("%d:%s", idx[r.Origin], r.Value))
	}
	// c holds 2 after run 1, so the transfer of 3 from c aborts.
	want := []string{"100:ok 0", "101:ok 0", "102:ok 0", "106:aborted", "107:ok 1"}
	if !slices.Equal(got, want) {
		t.Errorf("outputs %v, want %v", got, want)
	}
	if err := st.apply(); err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(map[string]uint64{"in": 9}); err != nil {
		t.Fatal(err)
	}
	st.committed()
	wantState := map[string]string{"accounts/a": "2", "accounts/b": "3", "accounts/c": "2", "stats/deposits": "2"}
	if got := committedState(t, store); !maps.Equal(got, wantState) {
		t.Errorf("state %v, want %v", got, wantState)
	}
}

// TestTransactionalInterval: with an interval, a batch shorter than the
// punctuation's count is committed without waiting for more events or
// for the sources to end.
func TestTransactionalInterval(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	op := bankOperator(t, "bank", "ns-op-eager", 1, 1000, false)
	op.Txn.Interval = 2 * time.Millisecond
	src := &sliceSource{recs: bankRecords([]string{"dep a 1", "dep a 2", "dep b 3"}), block: true}
	r := newRun(t, store, src, 0, op)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.job.Run(ctx) }()
	for r.job.Status().Batches == 0 { // waits as long as the test may run
		time.Sleep(time.Millisecond)
	}
	if got := store.Positions()["in"]; got != 3 {
		t.Errorf("committed position %d before the stop, want 3", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestTransactionalConfigErrors(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	mk := func(events int) Operator {
		return bankOperator(t, "bank"+strconv.Itoa(events), "serial", 1, events, false)
	}
	for _, tc := range []struct {
		name string
		ops  func() []Operator
		want string
	}{
		{"punctuations differ", func() []Operator { return []Operator{mk(10), mk(20)} }, "different punctuations"},
		{"shared table", func() []Operator {
			a, b := mk(10), mk(10)
			b.Name = "other"
			return []Operator{a, b}
		}, `both use table "accounts"`},
		{"no events", func() []Operator { return []Operator{mk(0)} }, "punctuation of 0 events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(context.Background(), Config{
				Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{}}}, Operators: tc.ops(),
				Sinks: []Output{{Name: "out", Sink: &memSink{}}}, DeadLetter: &memSink{}, Store: store,
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// BenchmarkTransactionalBatch measures a transactional batch through the
// stage, with a ledger-like native workload (115,200 accounts, 25%
// deposits, 10,240 events per batch) and the serial and dfs-op-eager
// strategies on 2 workers: process (plan, schedule over the view of the
// tables, post), apply (the change set written into the tables), the
// capture of the changes for the commit (state.Store.Prepare, on the
// executor's goroutine in a job) and the Pebble commit (PendingCommit.Commit,
// on the committer's), reported apart.
func BenchmarkTransactionalBatch(b *testing.B) {
	const keys, events = 115200, 10240
	store, err := state.Open(b.TempDir(), state.Options{KeyGroups: 128, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	accounts := store.Table("accounts")
	sess := store.NewSession()
	for i := range keys {
		if err := sess.Put(accounts, []byte("acct"+strconv.Itoa(i)), []byte("1000")); err != nil {
			b.Fatal(err)
		}
	}
	if err := store.Commit(nil); err != nil {
		b.Fatal(err)
	}
	values := make([]string, events)
	for i := range values {
		a, c := (i*7919)%keys, (i*104729+13)%keys
		if i%4 == 0 {
			values[i] = fmt.Sprintf("dep acct%d 10", a)
		} else {
			values[i] = fmt.Sprintf("xfer acct%d acct%d 10", a, c)
		}
	}
	recs := bankRecords(values)
	idx := make([]int32, len(recs))
	for i := range idx {
		idx[i] = int32(i)
	}
	for _, strategy := range []string{"serial", "dfs-op-eager"} {
		b.Run(strategy, func(b *testing.B) {
			op := bankOperator(b, "bank", strategy, 2, events, false)
			m := NewMetrics()
			st, err := newStage(context.Background(), &op, store, m, m.operator("bank"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer st.close(context.Background())
			var run, apply, prepare, commit time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, _, err := st.run(context.Background(), recs); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := st.apply(); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				p, err := store.Prepare()
				if err != nil {
					b.Fatal(err)
				}
				st.committed()
				t3 := time.Now()
				if err := p.Commit(context.Background(), map[string]uint64{"in": 1}); err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				run, apply, prepare, commit = run+t1.Sub(t0), apply+t2.Sub(t1), prepare+t3.Sub(t2), commit+t4.Sub(t3)
			}
			b.ReportMetric(float64(events*b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(run.Seconds()*1e3/float64(b.N), "process-ms")
			b.ReportMetric(apply.Seconds()*1e3/float64(b.N), "apply-ms")
			b.ReportMetric(prepare.Seconds()*1e3/float64(b.N), "prepare-ms")
			b.ReportMetric(commit.Seconds()*1e3/float64(b.N), "commit-ms")
		})
	}
}

// TestTransactionalAdaptive: under the adaptive strategy the job gives the
// same state as a static strategy, and reports every batch's strategy and
// decision in the status, the metrics and Decisions.
func TestTransactionalAdaptive(t *testing.T) {
	var values []string
	for i := range 60 {
		values = append(values, fmt.Sprintf("dep a%d %d", i%7, i), fmt.Sprintf("xfer a%d a%d 1", i%7, (i+3)%7))
	}
	states := map[string]map[string]string{}
	for _, strategy := range []string{"serial", "adaptive"} {
		store := openStore(t, t.TempDir())
		r := newRun(t, store, &sliceSource{recs: bankRecords(values)}, 0, bankOperator(t, "bank", strategy, 2, 8, true))
		if err := r.job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		states[strategy] = committedState(t, store)
		st := r.job.Status().Operators[0].Txn
		if st.Running == "" || st.Last == nil || st.Last.Ops == 0 || st.Last.Batch != st.Batches {
			t.Errorf("%s: running %q, last batch %+v (of %d)", strategy, st.Running, st.Last, st.Batches)
		}
		if got := counterValue(t, r.job.m, "sluice_txn_strategy_batches_total", "operator", "bank", "strategy", st.Running); got == 0 {
			t.Errorf("%s: no batch counted under strategy %s", strategy, st.Running)
		}
		recs, err := r.job.Decisions("bank", 0)
		if strategy == "serial" {
			if !errors.Is(err, ErrNotAdaptive) {
				t.Errorf("Decisions under serial: %v, want ErrNotAdaptive", err)
			}
		} else {
			if err != nil || uint64(len(recs)) != st.Batches {
				t.Fatalf("Decisions: %d records (%v), want one per batch (%d)", len(recs), err, st.Batches)
			}
			for i, rec := range recs {
				if rec.Batch != uint64(i+1) || rec.Decision.Rule == "" || len(rec.Decision.Reasons()) != 3 || rec.Events == 0 {
					t.Errorf("record %d: %+v", i, rec)
				}
			}
			if last, err := r.job.Decisions("bank", 2); err != nil || len(last) != 2 || last[1].Batch != st.Batches {
				t.Errorf("Decisions(2): %+v, %v", last, err)
			}
		}
		if _, err := r.job.Decisions("nope", 0); !errors.Is(err, ErrUnknownOperator) {
			t.Errorf("Decisions of an unknown operator: %v", err)
		}
		store.Close()
	}
	if !maps.Equal(states["adaptive"], states["serial"]) {
		t.Errorf("adaptive state %v, serial %v", states["adaptive"], states["serial"])
	}
}

// TestTransactionalTPGSample: asking for a transactional operator's TPG
// samples its next batch: its operations and dependencies as the
// scheduler ran them; an unknown operator is an error.
func TestTransactionalTPGSample(t *testing.T) {
	var values []string
	for i := range 200 {
		values = append(values, fmt.Sprintf("xfer k%d k%d %d", i%5, (i+1)%5, i%7+1))
	}
	store := openStore(t, t.TempDir())
	defer store.Close()
	r := newRun(t, store, &sliceSource{recs: bankRecords(values), chunk: 64}, 0, bankOperator(t, "bank", "dfs-chain-lazy", 2, 64, false))
	if _, _, err := r.job.TPG("nope"); !errors.Is(err, ErrUnknownOperator) {
		t.Fatalf("TPG of an unknown operator: %v, want ErrUnknownOperator", err)
	}
	if _, ok, err := r.job.TPG("bank"); ok || err != nil {
		t.Fatalf("TPG before a batch: ok %v, %v; want none yet", ok, err)
	}
	if err := r.job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	g, ok, err := r.job.TPG("bank")
	if !ok || err != nil {
		t.Fatalf("TPG after the batches: ok %v, %v", ok, err)
	}
	if g.Strategy != "dfs-chain-lazy" || g.Txns != 64 || len(g.Ops) == 0 || len(g.Ops) != g.TotalOps || g.Units == 0 || g.Units > len(g.Ops) {
		t.Fatalf("TPG: strategy %s, %d txns, %d of %d ops, %d units", g.Strategy, g.Txns, len(g.Ops), g.TotalOps, g.Units)
	}
	kinds := map[string]int{}
	for _, e := range g.Edges {
		kinds[e.Kind]++
	}
	if kinds["temporal"] == 0 || kinds["logical"] == 0 {
		t.Errorf("TPG's edges by kind %v, want temporal and logical ones", kinds)
	}
}
