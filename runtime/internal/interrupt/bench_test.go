package interrupt

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

// BenchmarkThreadJumps measures what threading jumps saves a Go guest: the
// upper plugin (plugins/upper, a batched map) over batches of 64 and 1024
// records of 64 bytes, as built, with its jumps threaded, with the
// interrupt checks, and with both, in one run and one wazero runtime. Each
// batch is a sluice_alloc, a memory write and a sluice_process call, and
// the host functions do nothing but keep what the guest emits, which is
// checked.
//
//	go test -run XXX -bench ThreadJumps ./runtime/internal/interrupt/
func BenchmarkThreadJumps(b *testing.B) {
	ctx := context.Background()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"upper": filepath.Join("..", "..", "..", "plugins", "upper")})
	if err != nil {
		b.Fatal(err)
	}
	variants := []struct {
		name string
		opts *Options
	}{
		{"as-built", nil},
		{"threaded", &Options{ThreadJumps: true}},
		{"checks", &Options{Deadline: true}},
		{"checks+threaded", &Options{Deadline: true, ThreadJumps: true}},
	}
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	var emitted []byte
	guestHost(ctx, b, rt, &emitted)
	for _, v := range variants {
		wasm := mods["upper"]
		var res Result
		if v.opts != nil {
			if res, err = InstrumentWith(wasm, *v.opts); err != nil {
				b.Fatal(err)
			}
			wasm = res.Wasm
		}
		mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(v.name).WithStartFunctions(abi.ExportInitialize))
		if err != nil {
			b.Fatal(v.name, err)
		}
		if res.Start {
			if _, err := mod.ExportedFunction(StartExport).Call(ctx); err != nil {
				b.Fatal(err)
			}
		}
		alloc, process := mod.ExportedFunction(abi.ExportAlloc), mod.ExportedFunction(abi.ExportProcess)
		stack := make([]uint64, 2)
		for _, n := range []int{64, 1024} {
			batch, want := abi.AppendBatchHeader(nil, uint32(n)), abi.AppendBatchHeader(nil, uint32(n))
			for i := range n {
				v := make([]byte, 64)
				for j := range v {
					v[j] = "abcdefghijklmnopqrstuvwxyz0123456789 "[(i+j)%37]
				}
				batch = abi.AppendRecord(batch, &abi.Record{Origin: uint32(i), Value: v, Time: int64(i)})
				want = abi.AppendRecord(want, &abi.Record{Origin: uint32(i), Value: bytes.ToUpper(v), Time: int64(i)})
			}
			b.Run(fmt.Sprintf("%s/batch=%d", v.name, n), func(b *testing.B) {
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
				if !bytes.Equal(emitted, want) {
					b.Fatalf("the guest emitted %d bytes, not the upper-cased batch of %d", len(emitted), len(want))
				}
			})
		}
		_ = mod.Close(ctx)
	}
}

// guestHost instantiates WASI and the sluice host functions in rt: emit
// keeps a copy of the batch emitted last in *emitted, the others do
// nothing.
func guestHost(ctx context.Context, b *testing.B, rt wazero.Runtime, emitted *[]byte) {
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	nop := api.GoModuleFunc(func(context.Context, api.Module, []uint64) {})
	emit := api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		v, _ := m.Memory().Read(uint32(s[0]), uint32(s[1]))
		*emitted = append((*emitted)[:0], v...)
	})
	hb := rt.NewHostModuleBuilder(abi.HostModule)
	for _, f := range []struct {
		name            string
		fn              api.GoModuleFunc
		params, results int
	}{
		{abi.FuncEmit, emit, 2, 0}, {abi.FuncReject, nop, 3, 0}, {abi.FuncTableID, nop, 2, 1},
		{abi.FuncStateGet, nop, 5, 1}, {abi.FuncStatePut, nop, 5, 0}, {abi.FuncStateDelete, nop, 3, 0},
		{abi.FuncLog, nop, 3, 0}, {abi.FuncTxnPlan, nop, 2, 0}, {abi.FuncTxnGet, nop, 5, 1},
		{abi.FuncTxnPut, nop, 5, 1}, {abi.FuncTxnDelete, nop, 3, 1},
	} {
		ps, rs := make([]api.ValueType, f.params), make([]api.ValueType, f.results)
		for i := range ps {
			ps[i] = api.ValueTypeI32
		}
		for i := range rs {
			rs[i] = api.ValueTypeI32
		}
		hb.NewFunctionBuilder().WithGoModuleFunction(f.fn, ps, rs).Export(f.name)
	}
	if _, err := hb.Instantiate(ctx); err != nil {
		b.Fatal(err)
	}
}
