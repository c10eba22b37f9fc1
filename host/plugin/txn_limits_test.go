package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/txn"
)

// keepAccess is a txn.Access that finds nothing and accepts every write,
// counting the calls that reach it.
type keepAccess struct{ calls int }

func (*keepAccess) Worker() int                         { return 0 }
func (*keepAccess) Own() ([]byte, bool)                 { return nil, false }
func (*keepAccess) Read(int) ([]byte, bool)             { return nil, false }
func (a *keepAccess) Get(txn.Key) ([]byte, bool, error) { a.calls++; return nil, false, nil }
func (a *keepAccess) Put(txn.Key, []byte) error         { a.calls++; return nil }
func (a *keepAccess) Delete(txn.Key) error              { a.calls++; return nil }

// newTxnFlood loads testdata/hostile/txnflood.wat as a transactional
// operator whose calls may keep at most maxOutput bytes.
func newTxnFlood(t *testing.T, maxOutput int) *Instance {
	t.Helper()
	ctx := context.Background()
	p, err := Load(ctx, newEngine(t, engineConfig()), "txnflood.wasm", hostileModule(t, "txnflood"),
		KindTransactional, WithLimits(Limits{MaxOutputBytes: maxOutput}))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.NewInstance(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = inst.Close(ctx)
		_ = p.Close(ctx)
	})
	return inst
}

// checkKeepLimit checks that err fails the call in host function fn for
// keeping more than the limit of 64 KiB.
func checkKeepLimit(t *testing.T, err error, fn string) {
	t.Helper()
	var he *runtime.HostError
	switch {
	case err == nil:
		t.Fatalf("the call kept 100 MB and more without an error")
	case !errors.Is(err, runtime.ErrHost) || !errors.As(err, &he) || he.Func != fn:
		t.Fatalf("err = %v, want a failure of host function %s", err, fn)
	case !strings.Contains(err.Error(), "over the limit of 65536 bytes per call (records emitted, state written"):
		t.Errorf("the error does not name the limit: %v", err)
	}
}

// A sluice_plan that declares the same operation again and again fails
// once its declarations reach Limits.MaxOutputBytes, before the host has
// copied more.
func TestTxnPlanKeepLimit(t *testing.T) {
	inst := newTxnFlood(t, 64<<10)
	declared := 0
	err := inst.Plan(context.Background(), []abi.Record{{Key: []byte("e")}}, func(*abi.OpDecl) error {
		declared++
		return nil
	})
	checkKeepLimit(t, err, abi.FuncTxnPlan)
	if want := (64 << 10) / 1028; declared != want {
		t.Errorf("%d declarations reached the scheduler, want %d (each is 1028 bytes)", declared, want)
	}
}

// A non-deterministic sluice_apply that calls txn_put, txn_get or
// txn_delete in a loop fails once the keys and values the host copied
// reach Limits.MaxOutputBytes; one that stays under it runs.
func TestTxnAccessKeepLimit(t *testing.T) {
	for _, tc := range []struct {
		fn    uint32
		name  string
		calls int // reaching the Access before the limit
	}{
		{0, abi.FuncTxnPut, (64 << 10) / 2000},
		{1, abi.FuncTxnGet, (64 << 10) / 1000},
		{2, abi.FuncTxnDelete, (64 << 10) / 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := newTxnFlood(t, 64<<10)
			a := &keepAccess{}
			_, err := inst.ApplyOp(context.Background(), 0, 0, &txn.Op{Fn: tc.fn, NonDet: true}, a)
			checkKeepLimit(t, err, tc.name)
			if a.calls != tc.calls {
				t.Errorf("%d accesses reached txn, want %d", a.calls, tc.calls)
			}
			// The instance carries on, within the limit.
			a = &keepAccess{}
			if _, err := inst.ApplyOp(context.Background(), 0, 0, &txn.Op{Fn: 3, NonDet: true}, a); err != nil || a.calls != 1 {
				t.Errorf("a put of 20 bytes after the failure: %v, %d accesses", err, a.calls)
			}
		})
	}
}
