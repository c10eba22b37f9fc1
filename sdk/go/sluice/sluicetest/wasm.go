package sluicetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sluicehq/sluice/abi"
)

// stderrLimit bounds the guest stderr a trap error quotes.
const stderrLimit = 4096

// WasmModule is a compiled plugin module (a .wasm file) from which harnesses
// are made, to test a plugin in the form the host runs it. It uses wazero
// with its defaults, as the host does: no files, no clock of the host, no
// entropy, stderr captured.
//
// The host functions here are a test double written from abi/ABI.md, not the
// host's implementation; a module that passes here and fails in the host
// points at a difference between the two worth reporting.
type WasmModule struct {
	name     string
	rt       wazero.Runtime
	compiled wazero.CompiledModule
}

// hostKey carries the *fakeHost of the harness making a guest call to the
// host functions, which are shared by every instance of the module.
type hostKey struct{}

// LoadWasm compiles wasm, a plugin module named name in errors, and checks
// that it exports what ABI version 1 requires. ctx bounds the compilation.
func LoadWasm(ctx context.Context, name string, wasm []byte) (*WasmModule, error) {
	rt := wazero.NewRuntime(ctx)
	m := &WasmModule{name: name, rt: rt}
	if err := m.init(ctx, wasm); err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	return m, nil
}

func (m *WasmModule) init(ctx context.Context, wasm []byte) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, m.rt); err != nil {
		return fmt.Errorf("sluicetest: module %q: WASI: %w", m.name, err)
	}
	if _, err := m.hostModule().Instantiate(ctx); err != nil {
		return fmt.Errorf("sluicetest: module %q: host functions: %w", m.name, err)
	}
	compiled, err := m.rt.CompileModule(ctx, wasm)
	if err != nil {
		return fmt.Errorf("sluicetest: module %q does not compile: %w", m.name, err)
	}
	m.compiled = compiled
	exports := compiled.ExportedFunctions()
	for _, name := range []string{abi.ExportABIVersion, abi.ExportAlloc, abi.ExportProcess} {
		if _, ok := exports[name]; !ok {
			return fmt.Errorf("sluicetest: module %q does not export %s, which ABI version %d requires", m.name, name, abi.Version)
		}
	}
	if _, ok := compiled.ExportedMemories()[abi.ExportMemory]; !ok {
		return fmt.Errorf("sluicetest: module %q does not export its memory as %q", m.name, abi.ExportMemory)
	}
	return nil
}

// Close releases the module and every instance of its harnesses.
func (m *WasmModule) Close(ctx context.Context) error { return m.rt.Close(ctx) }

// New returns a harness whose operator runs in a fresh instance of the
// module. The harness instantiates lazily and again after a trap.
func (m *WasmModule) New() *Harness {
	return newHarness(func(f *fakeHost) (transport, error) { return m.instantiate(f) })
}

// instantiate makes an instance, runs its _initialize and checks its ABI
// version, as the host does before the first record.
func (m *WasmModule) instantiate(f *fakeHost) (*wasmTransport, error) {
	t := &wasmTransport{host: f, stderr: &tailBuffer{}}
	ctx := t.ctx()
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions(abi.ExportInitialize).WithStderr(t.stderr)
	mod, err := m.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: module %q failed to start: %s", ErrTrap, m.name, t.describe(err))
	}
	t.mod = mod
	res, err := mod.ExportedFunction(abi.ExportABIVersion).Call(ctx)
	if err != nil {
		t.close()
		return nil, fmt.Errorf("%w: module %q: %s: %s", ErrTrap, m.name, abi.ExportABIVersion, t.describe(err))
	}
	if v := int32(uint32(res[0])); v != abi.Version {
		t.close()
		return nil, fmt.Errorf("%w: module %q was built for ABI version %d; this harness speaks version %d", ErrVersion, m.name, v, abi.Version)
	}
	t.alloc = mod.ExportedFunction(abi.ExportAlloc)
	t.configureFn = mod.ExportedFunction(abi.ExportConfigure)
	t.processFn = mod.ExportedFunction(abi.ExportProcess)
	return t, nil
}

// wasmTransport is one instance of a WasmModule.
type wasmTransport struct {
	host        *fakeHost
	stderr      *tailBuffer
	mod         api.Module
	alloc       api.Function
	configureFn api.Function // nil when the module does not export it
	processFn   api.Function
}

func (t *wasmTransport) ctx() context.Context {
	return context.WithValue(context.Background(), hostKey{}, t.host)
}

func (t *wasmTransport) configure(config []byte) (int32, error) {
	if t.configureFn == nil {
		return abi.StatusOK, nil
	}
	return t.call(abi.ExportConfigure, t.configureFn, config)
}

func (t *wasmTransport) process(batch []byte) (int32, error) {
	return t.call(abi.ExportProcess, t.processFn, batch)
}

// call writes data into a region from sluice_alloc and calls fn(ptr, len).
func (t *wasmTransport) call(export string, fn api.Function, data []byte) (int32, error) {
	ctx := t.ctx()
	res, err := t.alloc.Call(ctx, api.EncodeU32(uint32(len(data))))
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %s", ErrTrap, abi.ExportAlloc, t.describe(err))
	}
	ptr := api.DecodeU32(res[0])
	if ptr == 0 {
		return 0, fmt.Errorf("%w: %s(%d) returned 0", ErrTrap, abi.ExportAlloc, len(data))
	}
	if !t.mod.Memory().Write(ptr, data) {
		return 0, fmt.Errorf("%w: %s(%d) returned %d, outside guest memory", ErrTrap, abi.ExportAlloc, len(data), ptr)
	}
	res, err = fn.Call(ctx, api.EncodeU32(ptr), api.EncodeU32(uint32(len(data))))
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %s", ErrTrap, export, t.describe(err))
	}
	return api.DecodeI32(res[0]), nil
}

// describe renders a guest call's error on one line, with the guest's
// stderr (where a Go panic writes its message).
func (t *wasmTransport) describe(err error) string {
	var exit *sys.ExitError
	var msg string
	var tr *trap
	switch {
	case errors.As(err, &tr):
		msg = tr.Error()
	case errors.As(err, &exit):
		msg = fmt.Sprintf("guest exited with code %d", exit.ExitCode())
	default:
		msg, _, _ = strings.Cut(err.Error(), "\n")
	}
	if s := strings.TrimSpace(t.stderr.String()); s != "" {
		msg += " (guest stderr: " + s + ")"
	}
	return msg
}

func (t *wasmTransport) close() {
	if t.mod != nil {
		_ = t.mod.Close(context.Background())
	}
}

func (t *wasmTransport) sharesGlobals() bool { return false }

// tailBuffer keeps the first stderrLimit bytes written to it.
type tailBuffer struct{ bytes.Buffer }

func (b *tailBuffer) Write(p []byte) (int, error) {
	if room := stderrLimit - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// hostModule defines the host functions of ABI version 1 over guest memory,
// each checking its pointers and dispatching to the calling harness's fake
// host.
func (m *WasmModule) hostModule() wazero.HostModuleBuilder {
	i32 := api.ValueTypeI32
	b := m.rt.NewHostModuleBuilder(abi.HostModule)
	def := func(name string, params, results []api.ValueType, fn func(f *fakeHost, mem api.Memory, stack []uint64)) {
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			f, _ := ctx.Value(hostKey{}).(*fakeHost)
			if f == nil {
				trapf(name, "called outside a harness call")
			}
			fn(f, mod.Memory(), stack)
		}), params, results).Export(name)
	}
	def(abi.FuncEmit, []api.ValueType{i32, i32}, nil, func(f *fakeHost, mem api.Memory, s []uint64) {
		f.Emit(read(mem, abi.FuncEmit, s[0], s[1]))
	})
	def(abi.FuncReject, []api.ValueType{i32, i32, i32}, nil, func(f *fakeHost, mem api.Memory, s []uint64) {
		f.Reject(api.DecodeU32(s[0]), string(read(mem, abi.FuncReject, s[1], s[2])))
	})
	def(abi.FuncTableID, []api.ValueType{i32, i32}, []api.ValueType{i32}, func(f *fakeHost, mem api.Memory, s []uint64) {
		s[0] = api.EncodeI32(f.TableID(string(read(mem, abi.FuncTableID, s[0], s[1]))))
	})
	def(abi.FuncStateGet, []api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i32}, func(f *fakeHost, mem api.Memory, s []uint64) {
		key := read(mem, abi.FuncStateGet, s[1], s[2])
		buf := read(mem, abi.FuncStateGet, s[3], s[4])
		s[0] = api.EncodeI32(f.StateGet(api.DecodeI32(s[0]), key, buf))
	})
	def(abi.FuncStatePut, []api.ValueType{i32, i32, i32, i32, i32}, nil, func(f *fakeHost, mem api.Memory, s []uint64) {
		f.StatePut(api.DecodeI32(s[0]), read(mem, abi.FuncStatePut, s[1], s[2]), read(mem, abi.FuncStatePut, s[3], s[4]))
	})
	def(abi.FuncStateDelete, []api.ValueType{i32, i32, i32}, nil, func(f *fakeHost, mem api.Memory, s []uint64) {
		f.StateDelete(api.DecodeI32(s[0]), read(mem, abi.FuncStateDelete, s[1], s[2]))
	})
	def(abi.FuncLog, []api.ValueType{i32, i32, i32}, nil, func(f *fakeHost, mem api.Memory, s []uint64) {
		f.Log(api.DecodeI32(s[0]), string(read(mem, abi.FuncLog, s[1], s[2])))
	})
	return b
}

// read returns a view of guest memory, trapping when the range is out of
// bounds.
func read(mem api.Memory, fn string, ptr, n uint64) []byte {
	p, l := api.DecodeU32(ptr), api.DecodeU32(n)
	b, ok := mem.Read(p, l)
	if !ok {
		trapf(fn, "range [%d, %d+%d) is outside guest memory of %d bytes", p, p, l, mem.Size())
	}
	return b
}
