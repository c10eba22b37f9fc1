//go:build !wasip1

package hosttest_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin/hosttest/internal/ledgerop"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// BenchmarkWasmMap measures the SDK's own per-record cost in WebAssembly:
// a Map that returns its input (testdata/identityguest) and a MapInPlace
// that leaves it as it is (testdata/inplaceidentityguest), over batches of
// 1024 records of 64 bytes, under wazero, with host functions that do
// nothing. It calls the exports directly (sluice_alloc, a memory write,
// sluice_process) so that the figure holds the SDK's decode, handler call
// and output, plus one guest call per batch, and nothing of a harness.
// The difference between the two is what passing a Record by value costs.
func BenchmarkWasmMap(b *testing.B) {
	ctx := context.Background()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{
		"Map":        filepath.Join("testdata", "identityguest"),
		"MapInPlace": filepath.Join("testdata", "inplaceidentityguest"),
	})
	if err != nil {
		b.Fatal(err)
	}
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	emitted := 0
	benchHost(ctx, b, rt, &emitted)
	const n = 1024
	batch := abi.AppendBatchHeader(nil, n)
	for i := range n {
		r := abi.Record{Origin: uint32(i), Key: fmt.Appendf(nil, "key%05d", i), Value: bytes.Repeat([]byte{'v'}, 24), Time: int64(i)}
		batch = abi.AppendRecord(batch, &r)
	}
	for _, name := range []string{"Map", "MapInPlace"} {
		b.Run(name, func(b *testing.B) {
			mod, err := rt.InstantiateWithConfig(ctx, mods[name], wazero.NewModuleConfig().WithName(name).WithStartFunctions(abi.ExportInitialize))
			if err != nil {
				b.Fatal(err)
			}
			defer mod.Close(ctx)
			alloc, process := mod.ExportedFunction(abi.ExportAlloc), mod.ExportedFunction(abi.ExportProcess)
			stack := make([]uint64, 2)
			emitted = 0
			b.SetBytes(int64(len(batch)))
			for b.Loop() {
				stack[0] = uint64(len(batch))
				if err := alloc.CallWithStack(ctx, stack); err != nil {
					b.Fatal(err)
				}
				ptr := uint32(stack[0])
				if !mod.Memory().Write(ptr, batch) {
					b.Fatal("sluice_alloc returned a region outside memory")
				}
				stack[0], stack[1] = uint64(ptr), uint64(len(batch))
				if err := process.CallWithStack(ctx, stack); err != nil || int32(stack[0]) != abi.StatusOK {
					b.Fatalf("sluice_process: %v, status %d", err, int32(stack[0]))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			if emitted == 0 {
				b.Fatal("the guest emitted nothing")
			}
		})
	}
}

// benchHost instantiates WASI and host functions that do nothing in rt,
// but count emit calls in *emitted.
func benchHost(ctx context.Context, b *testing.B, rt wazero.Runtime, emitted *int) {
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	nop := api.GoModuleFunc(func(context.Context, api.Module, []uint64) {})
	i32 := api.ValueTypeI32
	hb := rt.NewHostModuleBuilder(abi.HostModule)
	for _, f := range []struct {
		name    string
		fn      api.GoModuleFunc
		params  int
		results int
	}{
		{abi.FuncEmit, func(context.Context, api.Module, []uint64) { *emitted++ }, 2, 0},
		{abi.FuncReject, nop, 3, 0},
		{abi.FuncTableID, nop, 2, 1},
		{abi.FuncStateGet, nop, 5, 1},
		{abi.FuncStatePut, nop, 5, 0},
		{abi.FuncStateDelete, nop, 3, 0},
		{abi.FuncLog, nop, 3, 0},
		{abi.FuncTxnPlan, nop, 2, 0},
		{abi.FuncTxnGet, nop, 5, 1},
		{abi.FuncTxnPut, nop, 5, 1},
		{abi.FuncTxnDelete, nop, 3, 1},
	} {
		params := make([]api.ValueType, f.params)
		results := make([]api.ValueType, f.results)
		for i := range params {
			params[i] = i32
		}
		for i := range results {
			results[i] = i32
		}
		hb.NewFunctionBuilder().WithGoModuleFunction(f.fn, params, results).Export(f.name)
	}
	if _, err := hb.Instantiate(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWasmApply measures one sluice_apply call of a transactional
// operator in WebAssembly, under wazero, as the host makes it: the request
// (a ledger credit: an 8-byte balance, one declared read, an 8-byte
// amount) written into the region sluice_alloc gave once, the call, and
// the written value's address read from the result slot. The function is
// ledgerop's (testdata/txnguest), so the figure is the SDK's decode,
// dispatch and result plus one guest call, against BenchmarkApply (the same
// guest core natively) and BenchmarkTxnLogicApply (the native
// adapter).
func BenchmarkWasmApply(b *testing.B) {
	ctx := context.Background()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"txn": filepath.Join("testdata", "txnguest")})
	if err != nil {
		b.Fatal(err)
	}
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	emitted := 0
	benchHost(ctx, b, rt, &emitted)
	mod, err := rt.InstantiateWithConfig(ctx, mods["txn"], wazero.NewModuleConfig().WithName("txn").WithStartFunctions(abi.ExportInitialize))
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Close(ctx)
	alloc, apply := mod.ExportedFunction(abi.ExportAlloc), mod.ExportedFunction(abi.ExportApply)
	le := binary.LittleEndian
	// ledgerop's function 1 (credit if funded) on a deposit-sized request.
	req := abi.AppendApplyRequest(nil, &abi.ApplyRequest{Fn: 1, Event: 1, Op: 1, Key: []byte("a0001"),
		Own:   abi.Value{Found: true, Bytes: le.AppendUint64(nil, 100)},
		Reads: []abi.ReadValue{{TableKey: abi.TableKey{Key: []byte("a0002")}, Value: abi.Value{Found: true, Bytes: le.AppendUint64(nil, 50)}}},
		Arg:   le.AppendUint64(nil, 7)})
	stack := make([]uint64, 2)
	stack[0] = 4096
	if err := alloc.CallWithStack(ctx, stack); err != nil {
		b.Fatal(err)
	}
	region := uint32(stack[0])
	mem := mod.Memory()
	for b.Loop() {
		if !mem.Write(region, req) {
			b.Fatal("the region is outside memory")
		}
		stack[0], stack[1] = uint64(region), uint64(len(req))
		if err := apply.CallWithStack(ctx, stack); err != nil || int32(stack[0]) != abi.ApplyWrite {
			b.Fatalf("sluice_apply: %v, status %d", err, int32(stack[0]))
		}
		slot, _ := mem.Read(region, 8)
		if v, ok := mem.Read(le.Uint32(slot), le.Uint32(slot[4:])); !ok || le.Uint64(v) != 107 {
			b.Fatalf("wrote %x", v)
		}
	}
}

// BenchmarkWasmPlanPost measures sluice_plan and sluice_post of a
// transactional operator in WebAssembly, per event, over batches of 1024
// ledgerop events (a quarter deposits, of two operations, the rest
// transfers, of four), with host functions that do nothing: the SDK's
// decoding, the handlers, the declarations' encoding (plan) and the
// outcomes' decoding and the outputs' encoding (post). The guest is
// testdata/txnbenchguest (ledgerop.BenchOp), whose Post emits one small
// record per event.
func BenchmarkWasmPlanPost(b *testing.B) {
	ctx := context.Background()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"txn": filepath.Join("testdata", "txnbenchguest")})
	if err != nil {
		b.Fatal(err)
	}
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	emitted := 0
	benchHost(ctx, b, rt, &emitted)
	mod, err := rt.InstantiateWithConfig(ctx, mods["txn"], wazero.NewModuleConfig().WithName("txn").WithStartFunctions(abi.ExportInitialize))
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Close(ctx)
	const n = 1024
	events := abi.AppendBatchHeader(nil, n)
	outs := abi.AppendOutcomesHeader(nil, n)
	le := binary.LittleEndian
	bal := abi.Value{Found: true, Bytes: le.AppendUint64(nil, 100)}
	for i := range n {
		r := ledgerop.Deposit(i, i%100, (i*7)%100, 5)
		ops := 2
		if i%4 != 0 {
			r = ledgerop.Transfer(i, i%100, (i*7)%100, (i*3+1)%100, (i*11+1)%100, 5)
			ops = 4
		}
		events = abi.AppendRecord(events, &abi.Record{Origin: uint32(i), Key: r.Key, Value: r.Value, Time: r.Time})
		o := abi.EventOutcome{Committed: true}
		for m := range ops {
			op := abi.OpOutcome{Executed: true, Own: bal}
			if ops == 4 && m < 3 {
				op.Reads = []abi.Value{bal}
			}
			o.Ops = append(o.Ops, op)
		}
		outs = abi.AppendEventOutcome(outs, &o)
	}
	alloc := mod.ExportedFunction(abi.ExportAlloc)
	stack := make([]uint64, 4)
	// place writes data into one region from sluice_alloc, one after the
	// other, as the host places a batch's events and outcomes, and returns
	// the pointers and lengths.
	place := func(data ...[]byte) []uint64 {
		var all []byte
		for _, d := range data {
			all = append(all, d...)
		}
		stack[0] = uint64(len(all))
		if err := alloc.CallWithStack(ctx, stack); err != nil {
			b.Fatal(err)
		}
		if !mod.Memory().Write(uint32(stack[0]), all) {
			b.Fatal("region outside memory")
		}
		var args []uint64
		for at, d := stack[0], data; len(d) > 0; d = d[1:] {
			args = append(args, at, uint64(len(d[0])))
			at += uint64(len(d[0]))
		}
		return args
	}
	for _, c := range []struct {
		name string
		data [][]byte
	}{{abi.ExportPlan, [][]byte{events}}, {abi.ExportPost, [][]byte{events, outs}}} {
		b.Run(c.name, func(b *testing.B) {
			f := mod.ExportedFunction(c.name)
			emitted = 0
			for b.Loop() {
				copy(stack, place(c.data...))
				if err := f.CallWithStack(ctx, stack); err != nil || int32(stack[0]) != abi.StatusOK {
					b.Fatalf("%s: %v, status %d", c.name, err, int32(stack[0]))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}
