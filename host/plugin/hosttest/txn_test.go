package hosttest_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/plugin/hosttest/internal/ledgerop"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/txn"
)

// ledger describes a ledgerop workload: its size and initial state.
type ledger struct {
	accounts, aliases int
	initial           int64
}

// store returns the initial state: every account and book entry holds
// l.initial, and alias i is bound to account i (the odd ones are unbound).
func (l ledger) store() txn.MapStore {
	s := txn.MapStore{}
	for i := range l.accounts {
		s[txn.Key{Table: uint32(ledgerop.Accounts), Key: string(ledgerop.AccountKey(i))}] = ledgerop.Encode(l.initial)
		s[txn.Key{Table: uint32(ledgerop.Books), Key: string(ledgerop.BookKey(i))}] = ledgerop.Encode(l.initial)
	}
	for i := 0; i < l.aliases; i += 2 {
		s[txn.Key{Table: uint32(ledgerop.Aliases), Key: string(ledgerop.AliasKey(i))}] = ledgerop.AccountKey(i % l.accounts)
	}
	return s
}

// trace is what a run produced, batch by batch, in comparable form.
type trace struct {
	Committed [][]bool
	Changes   [][]string
	Outputs   [][]string
	Rejects   [][]string
	Final     map[string]string
}

// runLedger runs batches through a transactional operator with the given
// strategy and workers, over logic (a native one when nil), carrying the
// committed state from batch to batch as the host does.
func runLedger(t testing.TB, strategy string, workers int, logic txnop.Logic, l ledger, batches [][]abi.Record) trace {
	t.Helper()
	return runLedgerParts(t, strategy, workers, 0, logic, l, batches)
}

// runLedgerParts is runLedger with txnop.Config.MinPart set to minPart (0:
// its default).
func runLedgerParts(t testing.TB, strategy string, workers, minPart int, logic txnop.Logic, l ledger, batches [][]abi.Record) trace {
	t.Helper()
	st, err := txn.ParseStrategy(strategy)
	if err != nil {
		t.Fatal(err)
	}
	tables := ledgerop.Tables()
	if logic == nil {
		logic = hosttest.TxnLogic(ledgerop.Op(), tables)
	}
	ctx := context.Background()
	op, err := txnop.New(txnop.Config{Name: "ledger", Tables: tables, Strategy: st, Workers: workers, MinPart: minPart, Logic: logic})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := op.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	store := l.store()
	var tr trace
	var out plugin.Output
	for b, events := range batches {
		out.Reset()
		res, err := op.Process(ctx, events, store, &out)
		if err != nil {
			t.Fatalf("%s, %d workers, batch %d: %v", strategy, workers, b, err)
		}
		tr.Committed = append(tr.Committed, slices.Clone(res.Committed))
		var changes []string
		for _, c := range res.Changes {
			if c.Delete {
				delete(store, c.Key)
				changes = append(changes, fmt.Sprintf("%v deleted", c.Key))
				continue
			}
			store[c.Key] = slices.Clone(c.Value)
			changes = append(changes, fmt.Sprintf("%v=%x", c.Key, c.Value))
		}
		tr.Changes = append(tr.Changes, changes)
		var outs, rejects []string
		for _, r := range out.Records {
			outs = append(outs, fmt.Sprintf("%d %s %s", r.Origin, r.Key, r.Value))
		}
		for _, r := range out.Rejects {
			// The reason, not the error, which names the plugin.
			var re *plugin.RecordError
			if !errors.As(r.Err, &re) || !errors.Is(r.Err, plugin.ErrRejected) {
				t.Fatalf("%s, batch %d: reject %d is %v, want a *plugin.RecordError wrapping plugin.ErrRejected", strategy, b, r.Index, r.Err)
			}
			rejects = append(rejects, fmt.Sprintf("%d %s", r.Index, re.Reason))
		}
		tr.Outputs, tr.Rejects = append(tr.Outputs, outs), append(tr.Rejects, rejects)
	}
	tr.Final = map[string]string{}
	for k, v := range store {
		tr.Final[k.String()] = fmt.Sprintf("%x", v)
	}
	return tr
}

// drawEvents draws a batch of ledger events numbered from first: deposits,
// transfers (some of which overdraw and abort), alias binds, payments
// through aliases (non-deterministic; unbound aliases abort) and events
// whose Post rejects them.
func drawEvents(rt *rapid.T, l ledger, first, n int, label string) []abi.Record {
	acct := rapid.IntRange(0, l.accounts-1)
	alias := rapid.IntRange(0, l.aliases-1)
	amount := rapid.Int64Range(1, 2*l.initial)
	evs := make([]abi.Record, n)
	for i := range evs {
		var r sluice.Record
		e := first + i
		switch k := rapid.IntRange(0, 9).Draw(rt, fmt.Sprintf("%s kind %d", label, i)); {
		case k < 3:
			r = ledgerop.Deposit(e, acct.Draw(rt, "account"), acct.Draw(rt, "book"), amount.Draw(rt, "amount"))
		case k < 6:
			a, b := acct.Draw(rt, "src"), acct.Draw(rt, "dst")
			r = ledgerop.Transfer(e, a, acct.Draw(rt, "src book"), b, acct.Draw(rt, "dst book"), amount.Draw(rt, "amount"))
		case k < 7:
			r = ledgerop.Bind(e, alias.Draw(rt, "alias"), acct.Draw(rt, "account"))
		case k < 9:
			r = ledgerop.Pay(e, alias.Draw(rt, "alias"), amount.Draw(rt, "amount"))
		default:
			r = ledgerop.Other(e, ledgerop.KindReject)
		}
		evs[i] = abi.Record{Origin: uint32(i), Key: r.Key, Value: r.Value, Time: r.Time}
	}
	return evs
}

// drawLedger draws a ledger and one to three batches of up to 40 events
// over it.
func drawLedger(rt *rapid.T) (ledger, [][]abi.Record) {
	l := ledger{accounts: rapid.IntRange(2, 10).Draw(rt, "accounts"), aliases: rapid.IntRange(1, 4).Draw(rt, "aliases"), initial: 50}
	var batches [][]abi.Record
	first := 0
	for b := range rapid.IntRange(1, 3).Draw(rt, "batches") {
		n := rapid.IntRange(0, 40).Draw(rt, fmt.Sprintf("events %d", b))
		batches = append(batches, drawEvents(rt, l, first, n, fmt.Sprint("batch ", b)))
		first += n
	}
	return l, batches
}

// TestTxnLogicMatchesSerial runs random ledger workloads through the native
// Logic with every strategy and a random number of workers, and requires
// the serial executor's outcomes, change sets, outputs, rejects and final
// state, batch after batch; and of the serial run, that a transfer commits
// exactly when both its source account and source book entry cover it and
// that no balance ends negative. Source accounts and book entries are drawn
// independently and amounts reach twice the initial balance, so the book
// entry's condition alone decides some transfers; the test fails if none
// did.
func TestTxnLogicMatchesSerial(t *testing.T) {
	bookAlone := 0
	rapid.Check(t, func(rt *rapid.T) {
		l, batches := drawLedger(rt)
		workers := rapid.IntRange(1, 4).Draw(rt, "workers")
		want := runLedger(t, "serial", 1, nil, l, batches)
		bookAlone += checkTransfers(rt, batches, want)
		for _, s := range txn.StrategyNames() {
			if got := runLedger(t, s, workers, nil, l, batches); !reflect.DeepEqual(got, want) {
				rt.Fatalf("%s with %d workers differs from serial:\n got %+v\nwant %+v", s, workers, got, want)
			}
		}
	})
	if bookAlone == 0 {
		t.Error("no transfer was aborted by its book entry's condition alone: the workloads test too little")
	}
}

// checkTransfers checks a run's transfers against the rule: one commits
// exactly when the source account (op 0's read) and the source book entry
// (op 0's own balance) both hold its amount; and that no account or book
// entry ends negative. It returns the number of transfers aborted by the
// book entry's condition alone.
func checkTransfers(rt *rapid.T, batches [][]abi.Record, tr trace) (bookAlone int) {
	for b, events := range batches {
		for _, line := range tr.Outputs[b] {
			var origin int
			var key, kind, outcome, own, read string
			if _, err := fmt.Sscanf(line, "%d %s %s %s op0 own=%s read=%s", &origin, &key, &kind, &outcome, &own, &read); err != nil || kind != "T" {
				continue
			}
			amount := ledgerop.Decode(events[origin].Value[17:])
			var book, account int64
			if _, err := fmt.Sscan(own, &book); err != nil {
				rt.Fatalf("output %q: source book entry %q: %v", line, own, err)
			}
			if _, err := fmt.Sscan(read, &account); err != nil {
				rt.Fatalf("output %q: source account %q: %v", line, read, err)
			}
			if (outcome == "committed") != (account >= amount && book >= amount) {
				rt.Fatalf("transfer of %d from an account holding %d and a book entry holding %d: %q", amount, account, book, line)
			}
			if outcome == "aborted" && account >= amount {
				bookAlone++
			}
		}
	}
	for k, v := range tr.Final {
		if !strings.HasPrefix(k, fmt.Sprint(ledgerop.Aliases)+"/") {
			if b := ledgerop.Decode(hexBytes(rt, v)); b < 0 {
				rt.Fatalf("%s holds %d", k, b)
			}
		}
	}
	return bookAlone
}

// hexBytes decodes a trace's hexadecimal value.
func hexBytes(rt *rapid.T, v string) []byte {
	var b []byte
	if v == "" {
		return nil
	}
	if _, err := fmt.Sscanf(v, "%x", &b); err != nil {
		rt.Fatalf("value %q: %v", v, err)
	}
	return b
}

// TestTxnLogicPartsMatchesSerial runs random ledger workloads with every
// strategy through TxnLogicParts, planned and posted in parts as small as
// one event on up to four workers, and requires what the serial run of
// TxnLogic gives: outcomes, change sets, outputs (with their batch
// origins), rejects (with their batch indices) and final state. Each part
// must have had an operator of its own.
func TestTxnLogicPartsMatchesSerial(t *testing.T) {
	made, logics := 0, 0
	newOp := func() sluice.Txn { made++; return ledgerop.Op() }
	rapid.Check(t, func(rt *rapid.T) {
		l, batches := drawLedger(rt)
		workers := rapid.IntRange(2, 4).Draw(rt, "workers")
		minPart := rapid.IntRange(1, 8).Draw(rt, "min part")
		want := runLedger(t, "serial", 1, nil, l, batches)
		s := rapid.SampledFrom(txn.StrategyNames()).Draw(rt, "strategy")
		logic := hosttest.TxnLogicParts(newOp, ledgerop.Tables())
		logics++
		if got := runLedgerParts(t, s, workers, minPart, logic, l, batches); !reflect.DeepEqual(got, want) {
			rt.Fatalf("%s with %d workers in parts of at least %d differs from serial:\n got %+v\nwant %+v", s, workers, minPart, got, want)
		}
	})
	if made <= logics {
		t.Errorf("%d operators made for %d logics: no batch was planned in parts", made, logics)
	}
}

// TestTxnLogicBookEntryCondition is the smallest case of the book entry's
// condition, with every strategy: every balance starts at 100; the first
// transfer empties book entry 2; the second, of 1 from account 4 (which
// holds 100) and book entry 2 (which holds nothing), aborts at its first
// operation, and book entry 2 stays at 0.
func TestTxnLogicBookEntryCondition(t *testing.T) {
	l, batch := bookEntryCase()
	for _, s := range txn.StrategyNames() {
		checkBookEntryCase(t, s, runLedger(t, s, 2, nil, l, batch))
	}
}

// bookEntryCase is the workload of TestTxnLogicBookEntryCondition.
func bookEntryCase() (ledger, [][]abi.Record) {
	var batch []abi.Record
	for i, r := range []sluice.Record{ledgerop.Transfer(0, 0, 2, 1, 3, 100), ledgerop.Transfer(1, 4, 2, 5, 3, 1)} {
		batch = append(batch, abi.Record{Origin: uint32(i), Key: r.Key, Value: r.Value, Time: r.Time})
	}
	return ledger{accounts: 6, aliases: 1, initial: 100}, [][]abi.Record{batch}
}

// checkBookEntryCase checks a run of bookEntryCase.
func checkBookEntryCase(t *testing.T, strategy string, tr trace) {
	t.Helper()
	want := []string{
		"0 ev0 T committed op0 own=100 read=100 op1 own=100 read=100 op2 own=100 read=100 op3 own=100",
		"1 ev1 T aborted op0 own=0 read=100 op1=skipped op2=skipped op3=skipped",
	}
	if !reflect.DeepEqual(tr.Outputs[0], want) {
		t.Errorf("%s: outputs:\n%s\nwant\n%s", strategy, strings.Join(tr.Outputs[0], "\n"), strings.Join(want, "\n"))
	}
	book2 := txn.Key{Table: uint32(ledgerop.Books), Key: string(ledgerop.BookKey(2))}
	if got := ledgerop.Decode(hexValue(t, tr.Final, book2)); got != 0 {
		t.Errorf("%s: book entry 2 holds %d, want 0", strategy, got)
	}
}

// TestTxnLogicConservesMoney: the sum of balances after a run equals the
// initial sum plus the committed deposits (and, for accounts, payments);
// transfers move money, aborted ones none.
func TestTxnLogicConservesMoney(t *testing.T) {
	l := ledger{accounts: 6, aliases: 4, initial: 30}
	var events []abi.Record
	var amounts []int64
	for i := range 300 {
		var r sluice.Record
		amt := int64(1 + (i*37)%70)
		switch i % 5 {
		case 0:
			r = ledgerop.Deposit(i, i%6, (i/6)%6, amt)
		case 1, 2:
			r = ledgerop.Transfer(i, (i*7)%6, (i*5)%6, (i*11+1)%6, (i*13+1)%6, amt)
		case 3:
			r = ledgerop.Pay(i, i%4, amt)
		case 4:
			r = ledgerop.Bind(i, (i/5)%4, i%6)
		}
		events = append(events, abi.Record{Key: r.Key, Value: r.Value, Time: r.Time})
		amounts = append(amounts, amt)
	}
	for _, s := range []string{"serial", "ns-op-eager", "bfs-chain-lazy", "tstream", "sstore"} {
		tr := runLedger(t, s, 3, nil, l, [][]abi.Record{events})
		wantAccounts, wantBooks := int64(l.accounts)*l.initial, int64(l.accounts)*l.initial
		aborted := 0
		for i, ok := range tr.Committed[0] {
			switch {
			case !ok:
				aborted++
			case i%5 == 0:
				wantAccounts += amounts[i]
				wantBooks += amounts[i]
			case i%5 == 3:
				wantAccounts += amounts[i]
			}
		}
		if aborted == 0 || aborted == len(events) {
			t.Fatalf("%s: %d of %d events aborted: the workload should abort some", s, aborted, len(events))
		}
		var accounts, books int64
		for i := range l.accounts {
			accounts += ledgerop.Decode(hexValue(t, tr.Final, txn.Key{Table: uint32(ledgerop.Accounts), Key: string(ledgerop.AccountKey(i))}))
			books += ledgerop.Decode(hexValue(t, tr.Final, txn.Key{Table: uint32(ledgerop.Books), Key: string(ledgerop.BookKey(i))}))
		}
		if accounts != wantAccounts || books != wantBooks {
			t.Errorf("%s: accounts hold %d, books %d; want %d and %d", s, accounts, books, wantAccounts, wantBooks)
		}
	}
}

func hexValue(t *testing.T, final map[string]string, k txn.Key) []byte {
	t.Helper()
	var b []byte
	if _, err := fmt.Sscanf(final[k.String()], "%x", &b); err != nil {
		t.Fatalf("%v: %v", k, err)
	}
	return b
}

// TestTxnLogicOutputs checks what Post sees and emits on outputsBatch and
// a bind whose plan finds its table by name (sluice.TableID).
func TestTxnLogicOutputs(t *testing.T) {
	l := ledger{accounts: 3, aliases: 2, initial: 10}
	evs := append(outputsBatch(), ledgerop.Lookup(7, 0, 1))
	var batch []abi.Record
	for i, r := range evs {
		batch = append(batch, abi.Record{Origin: uint32(i), Key: r.Key, Value: r.Value, Time: r.Time})
	}
	tr := runLedger(t, "ns-chain-eager", 2, nil, l, [][]abi.Record{batch})
	want := []string{
		"0 ev0 T committed op0 own=10 read=10 op1 own=10 read=10 op2 own=10 read=10 op3 own=10",
		"1 ev1 T aborted op0 own=10 read=6 op1=skipped op2=skipped op3=skipped",
		"2 ev2 P committed op0 own=- read=a0000 get=0/a0000:6",
		"3 ev3 P aborted op0 own=- read=-",
		"5 ev5 B committed op0 own=-",
		"6 ev6 P committed op0 own=- read=a0002 get=0/a0002:10",
		"7 ev7 L committed op0 own=a0000",
	}
	if !reflect.DeepEqual(tr.Outputs[0], want) {
		t.Errorf("outputs:\n%s\nwant\n%s", strings.Join(tr.Outputs[0], "\n"), strings.Join(want, "\n"))
	}
	if got := tr.Rejects[0]; len(got) != 1 || !strings.HasPrefix(got[0], "4 ") || !strings.Contains(got[0], "rejected on purpose") {
		t.Errorf("rejects = %q, want event 4 rejected on purpose", got)
	}
	if got := tr.Committed[0]; !reflect.DeepEqual(got, []bool{true, false, true, false, true, true, true, true}) {
		t.Errorf("committed = %v", got)
	}
	if got := ledgerop.Decode(hexValue(t, tr.Final, txn.Key{Table: uint32(ledgerop.Accounts), Key: "a0002"})); got != 17 {
		t.Errorf("account 2 holds %d, want 10 + 7 paid through alias 1", got)
	}
}

// outputsBatch is a small batch of ledger events: committed and aborted
// transfers, a payment through a bound and an unbound alias, a rejected
// event, a bind and a payment through the new binding.
func outputsBatch() []sluice.Record {
	return []sluice.Record{
		ledgerop.Transfer(0, 0, 0, 1, 1, 4),  // commits: src 10 >= 4
		ledgerop.Transfer(1, 0, 2, 2, 1, 20), // aborts at op 0: src 6 < 20
		ledgerop.Pay(2, 0, 5),                // alias 0 is bound to account 0
		ledgerop.Pay(3, 1, 5),                // alias 1 is unbound: aborts
		ledgerop.Other(4, ledgerop.KindReject),
		ledgerop.Bind(5, 1, 2),
		ledgerop.Pay(6, 1, 7),
	}
}

// TestTxnLogicRejectedEventError: a Post error is a *plugin.RecordError
// wrapping plugin.ErrRejected, with the handler's text as its reason.
func TestTxnLogicRejectedEventError(t *testing.T) {
	tables := ledgerop.Tables()
	op, err := txnop.New(txnop.Config{Name: "ledger", Tables: tables, Strategy: mustStrategy(t, "serial"), Workers: 1,
		Logic: hosttest.TxnLogic(ledgerop.Op(), tables)})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close(context.Background())
	r := ledgerop.Other(0, ledgerop.KindReject)
	var out plugin.Output
	if _, err := op.Process(context.Background(), []abi.Record{{Key: r.Key, Value: r.Value}}, txn.MapStore{}, &out); err != nil {
		t.Fatal(err)
	}
	var re *plugin.RecordError
	if len(out.Rejects) != 1 || !errors.As(out.Rejects[0].Err, &re) || !errors.Is(re, plugin.ErrRejected) ||
		re.Reason != "rejected on purpose" || re.Index != 0 || re.Export != abi.ExportPost || len(out.Records) != 0 {
		t.Errorf("rejects %+v, outputs %d", out.Rejects, len(out.Records))
	}
}

func mustStrategy(t testing.TB, name string) txn.Strategy {
	t.Helper()
	st, err := txn.ParseStrategy(name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestTxnLogicBatchFailures: a Plan error, a function's Fail, an access
// outside the declaration and an undeclared table fail the batch with an
// error that says why, for every strategy.
func TestTxnLogicBatchFailures(t *testing.T) {
	cases := []struct {
		name   string
		tables []string
		ev     sluice.Record
		is     []error
		text   string
	}{
		{"plan", nil, ledgerop.Other(0, 'Z'), nil, `plan: event 0: ledgerop: unknown event kind 'Z'`},
		{"fail", nil, ledgerop.Other(0, ledgerop.KindFail), nil, "function 5: failed on purpose"},
		{"stray", nil, ledgerop.Other(0, ledgerop.KindStray), []error{sluice.ErrUndeclared, txn.ErrUndeclared}, `get of table 1 key "undeclared"`},
		{"table", []string{"accounts", "books"}, ledgerop.Lookup(0, 0, 0), []error{sluice.ErrUnknownTable}, `"aliases"`},
	}
	for _, c := range cases {
		for _, s := range []string{"serial", "ns-op-lazy", "dfs-chain-eager", "sstore"} {
			t.Run(c.name+"/"+s, func(t *testing.T) {
				tables := c.tables
				if tables == nil {
					tables = ledgerop.Tables()
				}
				op, err := txnop.New(txnop.Config{Name: "ledger", Tables: tables, Strategy: mustStrategy(t, s), Workers: 2,
					Logic: hosttest.TxnLogic(ledgerop.Op(), tables)})
				if err != nil {
					t.Fatal(err)
				}
				defer op.Close(context.Background())
				d := ledgerop.Deposit(1, 0, 0, 5)
				events := []abi.Record{{Key: c.ev.Key, Value: c.ev.Value}, {Key: d.Key, Value: d.Value}}
				var out plugin.Output
				_, err = op.Process(context.Background(), events, txn.MapStore{}, &out)
				if err == nil || !strings.Contains(err.Error(), c.text) {
					t.Fatalf("error %v, want one containing %s", err, c.text)
				}
				for _, target := range c.is {
					if !errors.Is(err, target) {
						t.Errorf("error %v does not wrap %v", err, target)
					}
				}
			})
		}
	}
}

// TestTxnLogicRefusesBadOperators: TxnLogic panics, naming the fault, for
// an operator Transactional would refuse.
func TestTxnLogicRefusesBadOperators(t *testing.T) {
	for name, op := range map[string]sluice.Txn{
		"Plan is nil":    {Funcs: []sluice.TxnFunc{func(*sluice.Call) sluice.Effect { return sluice.Keep() }}},
		"Funcs is empty": {Plan: func(sluice.Record, *sluice.Planner) error { return nil }},
		"Funcs[1] is nil": {Plan: func(sluice.Record, *sluice.Planner) error { return nil },
			Funcs: []sluice.TxnFunc{func(*sluice.Call) sluice.Effect { return sluice.Keep() }, nil}},
	} {
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), name) {
					t.Errorf("panic %v, want one saying %s", v, name)
				}
			}()
			hosttest.TxnLogic(op, nil)
		}()
	}
}

// TestTxnLogicUnknownFunction: an operation naming a function the operator
// does not have fails the batch at plan time, naming the index and the
// number of functions.
func TestTxnLogicUnknownFunction(t *testing.T) {
	op := sluice.Txn{
		Plan: func(ev sluice.Record, p *sluice.Planner) error {
			p.Write(sluice.DefaultTable, ev.Key, 3, nil)
			return nil
		},
		Funcs: []sluice.TxnFunc{func(*sluice.Call) sluice.Effect { return sluice.Keep() }},
	}
	o, err := txnop.New(txnop.Config{Name: "bad", Tables: []string{"t"}, Strategy: mustStrategy(t, "serial"), Workers: 1,
		Logic: hosttest.TxnLogic(op, []string{"t"})})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close(context.Background())
	var out plugin.Output
	_, err = o.Process(context.Background(), []abi.Record{{Key: []byte("k")}}, txn.MapStore{}, &out)
	if err == nil || !strings.Contains(err.Error(), "names function 3, but the operator has 1 functions") {
		t.Errorf("error %v", err)
	}
}
