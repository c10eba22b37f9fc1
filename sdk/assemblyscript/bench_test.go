package assemblyscript_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/sluicehq/sluice/abi"
)

// benchModule instantiates the operator in testdata/name under wazero with
// host functions that do nothing but count emits, and memory limited to
// maxPages (0: wazero's default).
func benchModule(ctx context.Context, b testing.TB, name string, emitted *int, maxPages ...uint32) (wazero.Runtime, api.Module) {
	code := build(b, filepath.Join("testdata", name))
	cfg := wazero.NewRuntimeConfig()
	if len(maxPages) > 0 {
		cfg = cfg.WithMemoryLimitPages(maxPages[0])
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	nop := api.GoModuleFunc(func(context.Context, api.Module, []uint64) {})
	i32 := api.ValueTypeI32
	hb := rt.NewHostModuleBuilder(abi.HostModule)
	for _, f := range []struct {
		name            string
		fn              api.GoModuleFunc
		params, results int
	}{
		{abi.FuncEmit, func(context.Context, api.Module, []uint64) { *emitted++ }, 2, 0},
		{abi.FuncReject, nop, 3, 0}, {abi.FuncTableID, nop, 2, 1}, {abi.FuncStateGet, nop, 5, 1},
		{abi.FuncStatePut, nop, 5, 0}, {abi.FuncStateDelete, nop, 3, 0}, {abi.FuncLog, nop, 3, 0},
		{abi.FuncTxnPlan, nop, 2, 0}, {abi.FuncTxnGet, nop, 5, 1}, {abi.FuncTxnPut, nop, 5, 1}, {abi.FuncTxnDelete, nop, 3, 1},
	} {
		params, results := make([]api.ValueType, f.params), make([]api.ValueType, f.results)
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
	mod, err := rt.InstantiateModule(ctx, mustCompile(ctx, b, rt, code), wazero.NewModuleConfig().WithName(name))
	if err != nil {
		b.Fatal(err)
	}
	return rt, mod
}

func mustCompile(ctx context.Context, b testing.TB, rt wazero.Runtime, code []byte) wazero.CompiledModule {
	c, err := rt.CompileModule(ctx, code)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkWasmMap measures the SDK's per-record cost in WebAssembly: a
// map that leaves its records as they are (testdata/identity), over
// batches of 1024 records of 64 bytes, under wazero, with host functions
// that do nothing. It calls the exports directly (sluice_alloc, a memory
// write, sluice_process), as the Go SDK's BenchmarkWasmMap does, so the
// two compare: the SDK's decode, the handler call, the check that the
// record is unchanged, and one guest call and one emit per batch.
func BenchmarkWasmMap(b *testing.B) {
	ctx := context.Background()
	emitted := 0
	rt, mod := benchModule(ctx, b, "identity", &emitted)
	defer rt.Close(ctx)
	const n = 1024
	batch := abi.AppendBatchHeader(nil, n)
	for i := range n {
		r := abi.Record{Origin: uint32(i), Key: fmt.Appendf(nil, "key%05d", i), Value: bytes.Repeat([]byte{'v'}, 24), Time: int64(i)}
		batch = abi.AppendRecord(batch, &r)
	}
	alloc, process := mod.ExportedFunction(abi.ExportAlloc), mod.ExportedFunction(abi.ExportProcess)
	stack := make([]uint64, 2)
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
}

// BenchmarkWasmApply measures one sluice_apply call of a transactional
// operator in WebAssembly, as the host makes it: a request written into
// the region sluice_alloc gave once (function 0 of testdata/txn: add the
// argument to the own key's decimal value, with one declared read), the
// call, and the written value read through the result slot. Compare with
// the Go SDK's BenchmarkWasmApply.
func BenchmarkWasmApply(b *testing.B) {
	ctx := context.Background()
	emitted := 0
	rt, mod := benchModule(ctx, b, "txn", &emitted)
	defer rt.Close(ctx)
	alloc, apply := mod.ExportedFunction(abi.ExportAlloc), mod.ExportedFunction(abi.ExportApply)
	le := binary.LittleEndian
	req := abi.AppendApplyRequest(nil, &abi.ApplyRequest{Fn: 0, Event: 1, Op: 1, Key: []byte("a0001"),
		Own:   abi.Value{Found: true, Bytes: []byte("100")},
		Reads: []abi.ReadValue{{TableKey: abi.TableKey{Key: []byte("a0002")}, Value: abi.Value{Found: true, Bytes: []byte("50")}}},
		Arg:   []byte("7")})
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
		if v, ok := mem.Read(le.Uint32(slot), le.Uint32(slot[4:])); !ok || string(v) != "107" {
			b.Fatalf("wrote %q", v)
		}
	}
}
