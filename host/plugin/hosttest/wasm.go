package hosttest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

// WasmModule is a compiled plugin module (a .wasm file) loaded by the real
// host, from which harnesses are made, to test a plugin in the form the host
// runs it. A WasmModule is safe for concurrent use: harnesses made from it
// may run in parallel tests.
type WasmModule struct {
	eng  runtime.Engine
	p    *plugin.Plugin
	kind plugin.Kind
}

// LoadWasm loads wasm, a plugin module named name in errors, as the host
// loads an operator of the given kind: compiled by wazero with the host's
// functions (plugin.HostModule) and its defaults (no files, the clock at
// the event's time, randomness seeded from the event, 64 MiB of memory and
// a 5 s deadline per call,
// stderr captured for trap messages), and checked by plugin.Load. A module
// the host would refuse (not WebAssembly, missing exports, foreign imports,
// a WASI command, another ABI version) is refused with the host's
// *plugin.LoadError, which lists every problem. ctx bounds the loading.
func LoadWasm(ctx context.Context, name string, wasm []byte, kind plugin.Kind) (*WasmModule, error) {
	eng, err := runtime.NewWazero(ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()))
	if err != nil {
		return nil, fmt.Errorf("hosttest: module %q: starting wazero: %w", name, err)
	}
	p, err := plugin.Load(ctx, eng, name, wasm, kind, plugin.WithLogger(slog.New(logRouter{})))
	if err != nil {
		_ = eng.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return &WasmModule{eng: eng, p: p, kind: kind}, nil
}

// Kind returns the kind of operator the module was loaded as.
func (m *WasmModule) Kind() plugin.Kind { return m.kind }

// Close releases the module and every instance of its harnesses, which
// fail afterwards.
func (m *WasmModule) Close(ctx context.Context) error {
	return errors.Join(m.p.Close(ctx), m.eng.Close(ctx))
}

// New returns a harness whose operator runs in a fresh instance of the
// module, through (*plugin.Instance).Process: outputs, rejects, traps and
// the recovery from them are the host's own. The harness instantiates
// lazily, configured as Configure says; the host replaces the instance
// after a trap. For a keyed module, the harness's tables are the State the
// host reads and writes.
func (m *WasmModule) New() *Harness {
	h := &Harness{st: sluicetest.NewTables()}
	if !m.kind.Stateful() {
		h.statelessKind = string(m.kind)
	}
	h.b = &wasmBackend{m: m, st: h.st, logs: &h.logs}
	return h
}

// wasmBackend runs the operator in an instance of the plugin.
type wasmBackend struct {
	m    *WasmModule
	st   *sluicetest.Tables
	logs *[]sluicetest.LogEntry
	inst *plugin.Instance // nil when there is none
	in   []abi.Record     // input, reused
	out  plugin.Output
}

// logsKey is the context key under which a harness's log travels, through
// the host's guest calls, to logRouter.
type logsKey struct{}

// ctx returns the context of the harness's guest calls.
func (w *wasmBackend) ctx() context.Context {
	return context.WithValue(context.Background(), logsKey{}, w.logs)
}

func (w *wasmBackend) configure(config []byte) error {
	w.close()
	inst, err := w.m.p.NewInstance(w.ctx(), config)
	if err != nil {
		return startError(err)
	}
	w.inst = inst
	return nil
}

func (w *wasmBackend) close() {
	if w.inst != nil {
		_ = w.inst.Close(context.Background())
		w.inst = nil
	}
}

func (w *wasmBackend) process(config []byte, in []sluice.Record) ([]sluicetest.Output, []sluicetest.Reject, error) {
	if w.inst == nil {
		if err := w.configure(config); err != nil {
			return nil, nil, err
		}
	}
	if len(in) == 0 {
		return nil, nil, nil
	}
	w.in = w.in[:0]
	for i := range in {
		r := &in[i]
		w.in = append(w.in, abi.Record{Input: uint16(r.Input), Time: r.Time, Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	w.out.Reset()
	err := w.inst.Process(w.ctx(), w.in, w.st, &w.out)
	clear(w.in) // do not keep the caller's records reachable
	if err != nil {
		// The operator cannot go on (a fresh instance could not be made,
		// or the module was closed); the host rolled the batch back.
		w.close()
		return nil, nil, startError(err)
	}
	var outs []sluicetest.Output
	for _, r := range w.out.Records {
		rec := sluice.Record{Key: r.Key, Value: r.Value, Time: r.Time, Headers: r.Headers}
		outs = append(outs, sluicetest.Output{Origin: int(r.Origin), Record: rec.Clone()})
	}
	var rejects []sluicetest.Reject
	for _, r := range w.out.Rejects {
		rejects = append(rejects, hostReject(r))
	}
	return outs, rejects, nil
}

// hostReject turns the host's Reject into the harness's.
func hostReject(r plugin.Reject) sluicetest.Reject {
	var re *plugin.RecordError
	if errors.Is(r.Err, plugin.ErrRejected) && errors.As(r.Err, &re) {
		return sluicetest.Reject{Origin: r.Index, Message: re.Reason}
	}
	class := sluicetest.ErrTrap
	var se *plugin.StatusError
	if errors.As(r.Err, &se) {
		class = sluicetest.ErrBatchFailed
	}
	err := fmt.Errorf("%w: %w", class, r.Err)
	return sluicetest.Reject{Origin: r.Index, Message: err.Error(), Err: err}
}

// startError classifies the error of an instance that could not be made
// or configured.
func startError(err error) error {
	var se *plugin.StatusError
	if errors.As(err, &se) && se.Status == abi.StatusBadConfig {
		return fmt.Errorf("%w: %s", sluicetest.ErrBadConfig, reason(se.Reason))
	}
	var re *runtime.Error
	if errors.As(err, &re) || se != nil {
		return fmt.Errorf("%w: %w", sluicetest.ErrTrap, err)
	}
	return fmt.Errorf("hosttest: %w", err)
}

// logRouter is the slog.Handler of every plugin loaded by LoadWasm: it
// appends the messages a guest logs to the log of the harness whose call
// is in progress, which the ctx of the host's log call carries. The host's
// own messages about the plugin (a batch re-run record by record, dropped
// messages) are not the operator's and are left out: the host logs a
// guest's message with the one attribute "export", and its own with more.
type logRouter struct{}

func (logRouter) Enabled(ctx context.Context, _ slog.Level) bool {
	return ctx.Value(logsKey{}) != nil
}

func (logRouter) Handle(ctx context.Context, r slog.Record) error {
	logs, _ := ctx.Value(logsKey{}).(*[]sluicetest.LogEntry)
	if logs == nil || !guestMessage(r) {
		return nil
	}
	*logs = append(*logs, sluicetest.LogEntry{Level: sdkLevel(r.Level), Message: r.Message})
	return nil
}

func (h logRouter) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h logRouter) WithGroup(string) slog.Handler { return h }

// guestMessage reports whether r is a guest's message, as the host logs it.
func guestMessage(r slog.Record) bool {
	if r.NumAttrs() != 1 {
		return false
	}
	export := false
	r.Attrs(func(a slog.Attr) bool {
		export = a.Key == "export"
		return false
	})
	return export
}

// sdkLevel maps the host's slog level back to the guest's.
func sdkLevel(l slog.Level) sluice.Level {
	switch {
	case l < slog.LevelInfo:
		return sluice.LevelDebug
	case l < slog.LevelWarn:
		return sluice.LevelInfo
	case l < slog.LevelError:
		return sluice.LevelWarn
	}
	return sluice.LevelError
}

// reason renders a guest's error message for an error.
func reason(msg string) string {
	if msg == "" {
		return "(the guest logged no error)"
	}
	return msg
}
