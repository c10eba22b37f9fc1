package ledgerop_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/plugins/ledger/ledgerop"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/ledger/event"
)

// run runs events as one batch, serially, over accounts and book entries
// 0 to len(balances)-1 holding the given balances, and returns the
// outputs' values and the final state by table and key index.
func run(t *testing.T, balances []int64, events ...event.Event) ([]string, map[[2]uint32]int64) {
	t.Helper()
	w := plugintest.TxnWorkload{Tables: []string{event.AccountsTable, event.BookEntriesTable}, Initial: txn.MapStore{}}
	for table := range uint32(2) {
		for k, b := range balances {
			w.Initial[txn.Key{Table: table, Key: string(event.AppendKey(nil, uint32(k)))}] = event.AppendBalance(nil, b)
		}
	}
	var batch []abi.Record
	for i := range events {
		batch = append(batch, abi.Record{Origin: uint32(i), Key: []byte("k"), Value: event.AppendEvent(nil, &events[i]), Time: int64(i)})
	}
	w.Batches = [][]abi.Record{batch}
	tr := plugintest.RunTxn(t, w, "serial", 1, hosttest.TxnLogic(ledgerop.New(), w.Tables))
	var outs []string
	for _, o := range tr.Outputs[0] {
		outs = append(outs, strings.SplitN(o, " ", 3)[2])
	}
	final := map[[2]uint32]int64{}
	for k, v := range tr.Final {
		i, _ := event.ParseKey([]byte(k.Key))
		b, err := event.DecodeBalance(v)
		if err != nil {
			t.Fatal(err)
		}
		final[[2]uint32{k.Table, i}] = b
	}
	return outs, final
}

// TestOperations checks each operation's effect and each output's text.
func TestOperations(t *testing.T) {
	deposit := event.Event{Deposit: true, Account: 0, Book: 1, Amount: 10}
	const big = math.MaxInt64 - 250
	transfer := func(amount int64) event.Event {
		return event.Event{Account: 0, Book: 1, DstAccount: 2, DstBook: 0, Amount: amount}
	}
	for _, c := range []struct {
		name   string
		events []event.Event
		outs   []string
		final  map[[2]uint32]int64 // the entries that changed
	}{
		{"deposit", []event.Event{deposit},
			[]string{"deposit committed 100 200"},
			map[[2]uint32]int64{{0, 0}: 110, {1, 1}: 210}},
		{"transfer of the whole balance", []event.Event{transfer(100)},
			[]string{"transfer committed 100 200 300 100"},
			map[[2]uint32]int64{{0, 0}: 0, {1, 1}: 100, {0, 2}: 400, {1, 0}: 200}},
		{"transfer over the balance", []event.Event{transfer(101)},
			[]string{"transfer aborted 100 200 - -"}, nil},
		{"transfer over the book entry's balance", []event.Event{{Account: 2, Book: 0, DstAccount: 1, DstBook: 2, Amount: 101}},
			[]string{"transfer aborted 300 100 - -"}, nil},
		{"transfer of the book entry's whole balance", []event.Event{{Account: 2, Book: 0, DstAccount: 1, DstBook: 2, Amount: 100}},
			[]string{"transfer committed 300 100 200 300"},
			map[[2]uint32]int64{{0, 2}: 200, {1, 0}: 0, {0, 1}: 300, {1, 2}: 400}},
		{"transfer funded by a deposit before it", []event.Event{deposit, transfer(101), transfer(10)},
			[]string{"deposit committed 100 200", "transfer committed 110 210 300 100", "transfer aborted 9 109 - -"},
			map[[2]uint32]int64{{0, 0}: 9, {1, 1}: 109, {0, 2}: 401, {1, 0}: 201}},
		{"deposits overflowing a balance", []event.Event{
			{Deposit: true, Account: 1, Book: 2, Amount: big}, // the book entry would overflow
			{Deposit: true, Account: 1, Book: 0, Amount: big},
			{Deposit: true, Account: 1, Book: 0, Amount: 51}, // the account would overflow
		},
			[]string{"deposit aborted 200 300", "deposit committed 200 100", "deposit aborted 9223372036854775757 -"},
			map[[2]uint32]int64{{0, 1}: big + 200, {1, 0}: big + 100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			initial := []int64{100, 200, 300}
			outs, final := run(t, initial, c.events...)
			if !reflect.DeepEqual(outs, c.outs) {
				t.Errorf("outputs %q, want %q", outs, c.outs)
			}
			for table := range uint32(2) {
				for k, b := range initial {
					key := [2]uint32{table, uint32(k)}
					want, ok := c.final[key]
					if !ok {
						want = b
					}
					if final[key] != want {
						t.Errorf("table %d key %d: %d, want %d", table, k, final[key], want)
					}
				}
			}
		})
	}
}

// TestBookEntryCondition is the smallest case of the book entry's
// condition: every balance starts at 100; the first transfer empties book
// entry 2; the second, of 1 from account 4, which holds 100, and book
// entry 2, which holds nothing, aborts, and book entry 2 stays at 0.
func TestBookEntryCondition(t *testing.T) {
	outs, final := run(t, []int64{100, 100, 100, 100, 100, 100},
		event.Event{Account: 0, Book: 2, DstAccount: 1, DstBook: 3, Amount: 100},
		event.Event{Account: 4, Book: 2, DstAccount: 5, DstBook: 3, Amount: 1})
	want := []string{"transfer committed 100 100 100 100", "transfer aborted 100 0 - -"}
	if !reflect.DeepEqual(outs, want) {
		t.Errorf("outputs %q, want %q", outs, want)
	}
	for key, b := range final {
		want := int64(100)
		switch key {
		case [2]uint32{0, 0}, [2]uint32{1, 2}:
			want = 0
		case [2]uint32{0, 1}, [2]uint32{1, 3}:
			want = 200
		}
		if b != want {
			t.Errorf("table %d key %d: %d, want %d", key[0], key[1], b, want)
		}
	}
}

// TestResultText: AppendResult and ParseResult round-trip, and ParseResult
// refuses what AppendResult never writes, naming what is wrong.
func TestResultText(t *testing.T) {
	for _, r := range []ledgerop.Result{
		{Deposit: true, Committed: true, Balances: []ledgerop.Balance{{Value: 1, Read: true}, {Value: -5, Read: true}}},
		{Balances: []ledgerop.Balance{{Value: 3, Read: true}, {Value: 4, Read: true}, {}, {}}},
		{Committed: true, Balances: []ledgerop.Balance{{Value: math.MaxInt64, Read: true}, {Value: math.MinInt64, Read: true}, {Read: true}, {Value: 7, Read: true}}},
	} {
		text := ledgerop.AppendResult(nil, &r)
		got, err := ledgerop.ParseResult(text)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("%q parsed as %+v, %v; want %+v", text, got, err, r)
		}
	}
	for text, want := range map[string]string{
		"":                          "want a kind",
		"refund committed 1 2":      `kind "refund"`,
		"deposit pending 1 2":       `outcome "pending"`,
		"deposit committed 1":       "1 balances, want 2",
		"transfer aborted 1 2 3":    "3 balances, want 4",
		"transfer aborted 1 2 x -":  `balance "x"`,
		"deposit committed 1 9e99":  `balance "9e99"`,
		"deposit committed 1 2 3 4": "4 balances, want 2",
	} {
		if _, err := ledgerop.ParseResult([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseResult(%q): %v, want an error containing %s", text, err, want)
		}
	}
}
