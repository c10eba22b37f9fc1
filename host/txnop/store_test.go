package txnop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/txn"
)

var errUnreadable = errors.New("unreadable")

// failingStore is a MapStore whose Get fails on one key.
type failingStore struct {
	txn.MapStore
	bad txn.Key
}

func (s failingStore) Get(k txn.Key) ([]byte, bool, error) {
	if k == s.bad {
		return nil, false, errUnreadable
	}
	return s.MapStore.Get(k)
}

// TestProcessStoreError: a Store error on a key the batch reads fails
// Process under every strategy, for the native and the Wasm logic, whether
// the key is declared (a deposit's account) or reached by a guest's Get (a
// redirect's pointer); the key is never read as absent.
func TestProcessStoreError(t *testing.T) {
	ctx := context.Background()
	p := loadLedger(t, 0)
	ops := map[string]*txnop.Operator{
		"native": newOperator(t, &nativeLedger{}, 2),
		"wasm":   newWasmOperator(t, p, 2),
	}
	events := records(deposit(0, 0, 5), redirect(1, 10, 4))
	for _, bad := range []txn.Key{key(accounts, 0), key(accounts, 1)} {
		store := failingStore{MapStore: txn.MapStore{key(accounts, 0): enc(3), key(accounts, 1): enc(2)}, bad: bad}
		for name, op := range ops {
			for _, s := range txn.StrategyNames() {
				if err := op.SetStrategy(strategy(t, s)); err != nil {
					t.Fatal(err)
				}
				var out plugin.Output
				res, err := op.Process(ctx, events, store, &out)
				var se *txn.StoreError
				if res != nil || !errors.Is(err, errUnreadable) || !errors.As(err, &se) || se.Key != bad {
					t.Errorf("%s, %s, failing %v: result %v, error %v; want the Store's error", name, s, bad, res != nil, err)
				}
			}
		}
	}
}
