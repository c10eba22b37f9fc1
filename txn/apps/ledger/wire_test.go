package ledger_test

import (
	"testing"

	"github.com/sluicehq/sluice/txn/apps/ledger"
	"github.com/sluicehq/sluice/txn/apps/ledger/event"
)

// TestFromEvent: a wire event converts field by field, and the workload's
// keys (8-digit decimals) are the ones Workload.Key names.
func TestFromEvent(t *testing.T) {
	e := event.Event{Account: 3, Book: 4, DstAccount: 5, DstBook: 6, Amount: 100}
	want := ledger.Event{Account: 3, Book: 4, DstAccount: 5, DstBook: 6, Amount: 100}
	if got := ledger.FromEvent(e); got != want {
		t.Fatalf("FromEvent(%+v) = %+v", e, got)
	}
	w, err := ledger.New(ledger.Config{Keys: 10, MaxAmount: 1})
	if err != nil {
		t.Fatal(err)
	}
	if k := w.Key(ledger.Accounts, 7); k.Key != string(event.AppendKey(nil, 7)) || k.Table != event.Accounts {
		t.Fatalf("Key(Accounts, 7) = %v, want table %d key %q", k, event.Accounts, event.AppendKey(nil, 7))
	}
}
