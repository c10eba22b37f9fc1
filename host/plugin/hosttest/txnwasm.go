package hosttest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/runtime"
)

// LoadTxnWasm loads wasm, a transactional plugin module named name in
// errors, as the host does (wazero with the host's functions and defaults,
// checked by plugin.Load as plugin.KindTransactional), and returns its
// txnop.Logic with one instance per scheduler worker (txnop.NewWasm), each
// configured with no configuration. workers must equal the Workers of the
// txnop.Config the Logic runs in. Closing the Logic closes the instances,
// the plugin and its engine. Guest log messages go to slog's default
// logger.
//
// tables name the operator's state tables in handle order, for the guest's
// sluice.TableID (optional: a guest that uses handles as numbers needs none).
//
// With TxnLogic over the same operator's source, a test runs one workload
// both ways and compares outcomes, change sets and outputs.
func LoadTxnWasm(ctx context.Context, name string, wasm []byte, workers int, tables ...string) (txnop.Logic, error) {
	eng, err := runtime.NewWazero(ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()))
	if err != nil {
		return nil, fmt.Errorf("hosttest: module %q: starting wazero: %w", name, err)
	}
	p, err := plugin.Load(ctx, eng, name, wasm, plugin.KindTransactional, plugin.WithLogger(slog.Default()), plugin.WithTables(tables))
	if err != nil {
		return nil, errors.Join(err, eng.Close(context.WithoutCancel(ctx)))
	}
	l, err := txnop.NewWasm(ctx, p, workers, nil)
	if err != nil {
		return nil, errors.Join(err, p.Close(context.WithoutCancel(ctx)), eng.Close(context.WithoutCancel(ctx)))
	}
	return &wasmTxnLogic{Logic: l, p: p, eng: eng}, nil
}

// wasmTxnLogic is a Logic that owns its plugin and engine.
type wasmTxnLogic struct {
	txnop.Logic
	p   *plugin.Plugin
	eng runtime.Engine
}

func (w *wasmTxnLogic) Close(ctx context.Context) error {
	return errors.Join(w.Logic.Close(ctx), w.p.Close(ctx), w.eng.Close(ctx))
}
