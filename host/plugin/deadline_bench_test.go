//go:build unix

package plugin_test

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/ledger"
	"github.com/sluicehq/sluice/txn/apps/ledger/event"
)

// The cost of the call deadline on the transactional path, measured on the
// Streaming Ledger operator of plugins/ledger (a Go guest): the same calls
// on an engine with the default call timeout (instrumented guest code and
// the watchdog) and on one without. `sluice bench --only wasm` measures
// the batched map the same way.
//
// Besides wall time, each benchmark reports the process's CPU time per
// operation (cpu-ns/op, from getrusage, hence unix only): on a machine
// shared with other work, wall time counts the time the benchmark waited
// for a core, and CPU time much less so. The watchdog's ticks are CPU time
// of the process, part of what the deadline costs.

// deadline is an engine configuration the benchmarks compare.
type deadline struct {
	name    string
	timeout time.Duration // the call timeout; 0 for none
}

// deadlines are the configurations compared: the default call timeout,
// and none.
func deadlines() []deadline {
	return []deadline{{"deadline", runtime.DefaultCallTimeout}, {"nodeadline", 0}}
}

// ledgerEvents is the size of the benchmarks' batch.
const ledgerEvents = 256

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time since start per operation and, when
// perItem > 1, per item of an operation.
func reportCPU(b *testing.B, start time.Duration, perItem int, unit string) {
	cpu := float64(cpuTime(b) - start)
	b.ReportMetric(cpu/float64(b.N), "cpu-ns/op")
	if perItem > 1 {
		b.ReportMetric(cpu/float64(b.N*perItem), "cpu-ns/"+unit)
	}
}

// ledgerModule builds plugins/ledger.
func ledgerModule(b *testing.B) []byte {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"ledger": filepath.Join("..", "..", "plugins", "ledger")})
	if err != nil {
		b.Fatal(err)
	}
	return mods["ledger"]
}

// ledgerBatch draws a batch of n events, half deposits and half transfers
// over 10,000 accounts, with amounts every balance covers, and the state
// they run against.
func ledgerBatch(b *testing.B, n int) ([]abi.Record, txn.MapStore) {
	b.Helper()
	w, err := ledger.New(ledger.Config{Keys: 10_000, DepositRatio: 0.5, MaxAmount: 100,
		InitialBalance: event.InitialBalance, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	events := make([]abi.Record, n)
	for i, e := range w.Events(n) {
		v := event.AppendEvent(nil, &event.Event{Deposit: e.Deposit, Account: uint32(e.Account), Book: uint32(e.Book),
			DstAccount: uint32(e.DstAccount), DstBook: uint32(e.DstBook), Amount: e.Amount})
		events[i] = abi.Record{Time: int64(i), Key: fmt.Appendf(nil, "e%d", i), Value: v}
	}
	return events, w.Store()
}

// loadLedger loads the module as a transactional plugin on an engine with
// the call timeout given (0: none), both released when b ends.
func loadLedger(b *testing.B, wasm []byte, timeout time.Duration) *plugin.Plugin {
	b.Helper()
	ctx := context.Background()
	eng, err := runtime.NewWazero(ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()).WithCallTimeout(timeout))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = eng.Close(ctx) })
	p, err := plugin.Load(ctx, eng, "ledger.wasm", wasm, plugin.KindTransactional,
		plugin.WithTables([]string{event.AccountsTable, event.BookEntriesTable}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close(ctx) })
	return p
}

// plannedOp is an operation as the guest declared it.
type plannedOp struct {
	event, op int
	o         txn.Op
}

// planLedger runs sluice_plan over events and returns the operations
// declared.
func planLedger(b *testing.B, inst *plugin.Instance, events []abi.Record) []plannedOp {
	b.Helper()
	var ops []plannedOp
	err := inst.Plan(context.Background(), events, func(d *abi.OpDecl) error {
		op := 0
		if k := len(ops); k > 0 && ops[k-1].event == int(d.Event) {
			op = ops[k-1].op + 1
		}
		o := txn.Op{Write: txn.Key{Table: d.Table, Key: string(d.Key)}, Fn: d.Fn, Table: d.Table,
			NonDet: d.Flags&abi.OpFlagNonDet != 0, Arg: append([]byte(nil), d.Arg...)}
		for _, r := range d.Reads {
			o.Reads = append(o.Reads, txn.Key{Table: r.Table, Key: string(r.Key)})
		}
		ops = append(ops, plannedOp{event: int(d.Event), op: op, o: o})
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return ops
}

// storeAccess is the txn.Access of an operation run alone against a
// store: it reads the committed values, and refuses writes.
type storeAccess struct {
	store txn.MapStore
	op    *txn.Op
}

func (a *storeAccess) Worker() int               { return 0 }
func (a *storeAccess) Own() ([]byte, bool)       { return a.value(a.op.Write) }
func (a *storeAccess) Read(i int) ([]byte, bool) { return a.value(a.op.Reads[i]) }
func (a *storeAccess) Get(k txn.Key) ([]byte, bool, error) {
	v, ok := a.value(k)
	return v, ok, nil
}

func (a *storeAccess) value(k txn.Key) ([]byte, bool) {
	v, ok := a.store[k]
	return v, ok
}
func (a *storeAccess) Put(txn.Key, []byte) error { return txn.ErrUndeclared }
func (a *storeAccess) Delete(txn.Key) error      { return txn.ErrUndeclared }

// BenchmarkDeadlineLedgerApply measures one sluice_apply call
// (Instance.ApplyOp) of the ledger's operations, in the order its
// sluice_plan declared those of a batch: ns/op is one apply.
func BenchmarkDeadlineLedgerApply(b *testing.B) {
	wasm := ledgerModule(b)
	events, store := ledgerBatch(b, ledgerEvents)
	ctx := context.Background()
	for _, d := range deadlines() {
		b.Run(d.name, func(b *testing.B) {
			inst, err := loadLedger(b, wasm, d.timeout).NewInstance(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = inst.Close(ctx) }()
			ops := planLedger(b, inst, events)
			a := &storeAccess{store: store}
			b.ReportAllocs()
			i := 0
			cpu := cpuTime(b)
			for b.Loop() {
				p := &ops[i]
				if i++; i == len(ops) {
					i = 0
				}
				a.op = &p.o
				if eff, err := inst.ApplyOp(ctx, p.event, p.op, &p.o, a); err != nil || eff.Abort {
					b.Fatalf("event %d operation %d: %+v, %v", p.event, p.op, eff, err)
				}
			}
			reportCPU(b, cpu, 1, "")
		})
	}
}

// BenchmarkDeadlineLedgerBatch measures a batch of the ledger through the
// transactional operator (host/txnop) with one worker and the serial
// strategy: sluice_plan, one sluice_apply per operation, and sluice_post.
// ns/event is the figure to compare.
func BenchmarkDeadlineLedgerBatch(b *testing.B) {
	wasm := ledgerModule(b)
	events, store := ledgerBatch(b, ledgerEvents)
	serial, err := txn.ParseStrategy("serial")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, d := range deadlines() {
		b.Run(d.name, func(b *testing.B) {
			p := loadLedger(b, wasm, d.timeout)
			logic, err := txnop.NewWasm(ctx, p, 1, nil)
			if err != nil {
				b.Fatal(err)
			}
			op, err := txnop.New(txnop.Config{Name: "ledger", Tables: []string{event.AccountsTable, event.BookEntriesTable},
				Strategy: serial, Workers: 1, Logic: logic})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = op.Close(ctx) }()
			var out plugin.Output
			b.ReportAllocs()
			cpu := cpuTime(b)
			for b.Loop() {
				out.Reset()
				if _, err := op.Process(ctx, events, store, &out); err != nil {
					b.Fatal(err)
				}
				if len(out.Records) != len(events) {
					b.Fatalf("%d outputs of %d events", len(out.Records), len(events))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
			reportCPU(b, cpu, len(events), "event")
		})
	}
}
