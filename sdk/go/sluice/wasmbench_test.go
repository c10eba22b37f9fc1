//go:build !wasip1

package sluice_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/sluicehq/sluice/abi"
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
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	emitted := 0
	nop := api.GoModuleFunc(func(context.Context, api.Module, []uint64) {})
	i32 := api.ValueTypeI32
	hb := rt.NewHostModuleBuilder(abi.HostModule)
	for _, f := range []struct {
		name    string
		fn      api.GoModuleFunc
		params  int
		results int
	}{
		{abi.FuncEmit, func(context.Context, api.Module, []uint64) { emitted++ }, 2, 0},
		{abi.FuncReject, nop, 3, 0},
		{abi.FuncTableID, nop, 2, 1},
		{abi.FuncStateGet, nop, 5, 1},
		{abi.FuncStatePut, nop, 5, 0},
		{abi.FuncStateDelete, nop, 3, 0},
		{abi.FuncLog, nop, 3, 0},
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
