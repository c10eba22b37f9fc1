package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/registry"
	wasm "github.com/sluicehq/sluice/runtime"
)

// TokenFile is the name, in the data directory, of the file holding the
// API's bearer token.
const TokenFile = "api-token"

// AddrFile is the name, in the data directory, of the file holding the
// address the running host's HTTP API listens on (host:port), for the
// CLI; the host removes it when it stops.
const AddrFile = "api-addr"

// ReadAddr returns the address of the HTTP API of the host running in
// dataDir, as it wrote it in AddrFile.
func ReadAddr(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, AddrFile))
	if err != nil {
		return "", fmt.Errorf("api address: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// TokenEnv is the environment variable that sets the API's token when the
// pipeline's http.token does not.
const TokenEnv = "SLUICE_TOKEN"

// apiToken returns the API's token (configured, from the environment, or
// generated) and writes it to <dataDir>/api-token with mode 0600, for the
// CLI on the same machine.
func apiToken(dataDir, configured string) (string, error) {
	tok := configured
	if tok == "" {
		tok = os.Getenv(TokenEnv)
	}
	if tok == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("api token: %w", err)
		}
		tok = hex.EncodeToString(b)
	}
	path := filepath.Join(dataDir, TokenFile)
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("api token: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil { // WriteFile keeps an existing file's mode
		return "", fmt.Errorf("api token: %w", err)
	}
	return tok, nil
}

// ReadToken returns the token a host wrote in dataDir.
func ReadToken(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, TokenFile))
	if err != nil {
		return "", fmt.Errorf("api token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// deployed is an operator's code: what runs now and what ran before it.
type deployed struct {
	op   *pipeline.Operator
	eng  wasm.Engine
	kind plugin.Kind
	opts []plugin.Option

	// Guarded by Host.dataMu.
	current registry.Entry
	history []registry.Entry // earlier modules, the last one most recent

	// prepared is the module the last Prepare loaded, nil when none:
	// guarded by Host.ctlMu.
	prepared *prepared
}

// prepared is a module Prepare loaded for an operator, kept for its swap.
// It lives until the operator's next prepare or swap (a swap of the same
// module takes it over, any other closes it) or the host's Close; a
// rollback leaves it.
type prepared struct {
	entry  registry.Entry
	plugin *plugin.Plugin
}

// OperatorPlugins is one operator's part of GET /api/v1/plugins.
type OperatorPlugins = schema.OperatorPlugins

// Plugins is the answer of GET /api/v1/plugins.
type Plugins = schema.Plugins

// SwapResult is the answer of a swap or rollback.
type SwapResult = schema.SwapResult

// Deployment reasons in the registry's log.
const (
	reasonStart        = "start"
	reasonSwap         = "swap"
	reasonRollback     = "rollback"
	reasonAutoRollback = "auto-rollback"
)

// resume decides which module operator op runs at start, from the
// pipeline file's module (file) and the registry's deployment log, and
// rebuilds its rollback history from the log:
//
//   - when the pipeline file still names the module it named at the last
//     start, and a swap or rollback replaced that module while the host
//     ran, the operator resumes with the module that ran last: its state
//     was written by that module, and the swap outlives the restart;
//   - otherwise (a first start, or a pipeline file changed since the last
//     start) the file's module runs, recorded as a "start" deployment.
//
// It returns the module to run (nil: the file's) with its registry entry,
// and the history, oldest first.
func (h *Host) resume(op string, file registry.Entry) (cur registry.Entry, code []byte, history []registry.Entry, err error) {
	ds, err := h.reg.Deployments(op)
	if err != nil {
		return file, nil, nil, err
	}
	last, stack, lastStart := replayDeployments(ds)
	if last != "" && last != file.SHA256 && lastStart == file.SHA256 {
		if e, gerr := h.reg.Get(last); gerr != nil {
			h.log.Warn("the module the operator ran last is not in the registry: starting with the pipeline file's",
				"operator", op, "sha256", last, "err", gerr)
		} else if code, err = h.reg.Module(last); err != nil {
			h.log.Warn("the module the operator ran last cannot be read: starting with the pipeline file's",
				"operator", op, "sha256", last, "err", err)
		} else {
			h.log.Info("resuming with the module deployed last, not the pipeline file's (unchanged since it was replaced)",
				"operator", op, "module", e.Label(), "file_module", file.Label())
			return e, code, h.entries(op, stack), nil
		}
	}
	if lastStart != file.SHA256 {
		if last != "" && last != file.SHA256 {
			stack = append(stack, last)
		}
		err = h.reg.Record(registry.Deployment{Operator: op, SHA256: file.SHA256, Reason: reasonStart})
	}
	return file, nil, h.entries(op, stack), err
}

// replayDeployments replays an operator's deployment log: the module it
// ran last, the modules a rollback would return to (oldest first), and the
// module of the last start.
func replayDeployments(ds []registry.Deployment) (last string, stack []string, lastStart string) {
	for _, d := range ds {
		switch d.Reason {
		case reasonStart, reasonSwap:
			if d.Reason == reasonStart {
				lastStart = d.SHA256
			}
			if last != "" && last != d.SHA256 {
				stack = append(stack, last)
			}
		case reasonRollback, reasonAutoRollback:
			if n := len(stack); n > 0 && stack[n-1] == d.SHA256 {
				stack = stack[:n-1]
			}
		}
		last = d.SHA256
	}
	return last, stack, lastStart
}

// entries returns the registry entries of hashes, leaving out (with a
// warning) those no longer in the registry.
func (h *Host) entries(op string, hashes []string) []registry.Entry {
	var out []registry.Entry
	for _, hash := range hashes {
		e, err := h.reg.Get(hash)
		if err != nil {
			h.log.Warn("a module of the operator's history is not in the registry: it cannot be rolled back to",
				"operator", op, "sha256", hash, "err", err)
			continue
		}
		out = append(out, e)
	}
	return out
}

// Plugins lists the registry and each operator's history.
func (h *Host) Plugins() (Plugins, error) {
	mods, err := h.reg.List()
	if err != nil {
		return Plugins{}, err
	}
	out := Plugins{Modules: mods}
	for i := range h.p.Operators {
		name := h.p.Operators[i].Name
		d := h.deployed[name]
		ds, err := h.reg.Deployments(name)
		if err != nil {
			return Plugins{}, err
		}
		h.dataMu.Lock()
		op := OperatorPlugins{Operator: name, Current: d.current, Deployments: ds}
		for k := len(d.history) - 1; k >= 0; k-- {
			op.Previous = append(op.Previous, d.history[k])
		}
		h.dataMu.Unlock()
		out.Operators = append(out.Operators, op)
	}
	return out, nil
}

// Swap replaces operator's plugin with module (file names it): the module
// is stored in the registry, checked and loaded on the operator's engine,
// and swapped in by the job at its next batch boundary. On a host of a
// pipeline spread over hosts, the checked module is first recorded for
// every host (clusterswap.go): refused, wrapping api.ErrConflict, while
// key groups are moving. It is refused
// (wrapping api.ErrRefused) when it is invalid, declares another ABI
// version than the running one, or lacks what the operator's kind needs.
//
// A module the registry holds is not checked again, and the one the
// operator's last Prepare loaded is not loaded again: the answer's
// Source says which, and its Steps how long each step took.
func (h *Host) Swap(ctx context.Context, operator, file string, module []byte) (SwapResult, error) {
	start := time.Now()
	h.ctlMu.Lock()
	defer h.ctlMu.Unlock()
	d, err := h.operator(operator, file)
	if err != nil {
		return SwapResult{}, err
	}
	entry, source, check, err := h.register(ctx, d, file, module)
	if err != nil {
		return SwapResult{}, err
	}
	if h.cluster != nil {
		// Checked and loaded before it is recorded for every host: a
		// module this host refuses is recorded nowhere.
		if err := h.prepareFor(ctx, d, entry, module); err != nil {
			return SwapResult{}, err
		}
		if err := h.record(ctx, d, entry, module, reasonSwap); err != nil {
			return SwapResult{}, err
		}
	}
	res, err := h.deploy(ctx, d, entry, module, reasonSwap)
	if err != nil {
		return SwapResult{}, err
	}
	if h.cluster != nil {
		h.switched(ctx)
	}
	if res.Source == schema.SourceRegistry {
		res.Source = source
	}
	res.Steps.CheckMS = schema.Millis(check)
	res.Steps.TotalMS = schema.Millis(time.Since(start))
	return res, nil
}

// Prepare does what Swap does before the swap itself: module (file names
// it) is stored in the registry, checked (which compiles it into the
// compilation cache) and loaded for operator's kind, and refused as Swap
// refuses it. The loaded module is kept until the operator's next swap,
// which then only makes its instances and installs them, or next
// prepare, or the host's Close.
func (h *Host) Prepare(ctx context.Context, operator, file string, module []byte) (schema.PrepareResult, error) {
	start := time.Now()
	h.ctlMu.Lock()
	defer h.ctlMu.Unlock()
	d, err := h.operator(operator, file)
	if err != nil {
		return schema.PrepareResult{}, err
	}
	if h.closing {
		return schema.PrepareResult{}, fmt.Errorf("operator %q: cannot prepare %s: the host is stopping: %w", operator, file, api.ErrConflict)
	}
	entry, source, check, err := h.register(ctx, d, file, module)
	if err != nil {
		return schema.PrepareResult{}, err
	}
	if err := checkABI(d, entry, h.current(d)); err != nil {
		return schema.PrepareResult{}, err
	}
	// The module prepared before goes, whether or not this one loads.
	if err := h.dropPrepared(ctx, d); err != nil {
		h.log.Warn("closing a prepared plugin failed", "operator", operator, "err", err)
	}
	loadStart := time.Now()
	pl, err := h.load(ctx, d, entry, module)
	if err != nil {
		return schema.PrepareResult{}, err
	}
	d.prepared = &prepared{entry: entry, plugin: pl}
	h.log.Info("plugin prepared", "operator", operator, "module", entry.Label(), "sha256", entry.SHA256, "source", source,
		"check", check.Round(time.Millisecond).String(), "load", time.Since(loadStart).Round(time.Millisecond).String())
	return schema.PrepareResult{Operator: operator, Module: entry, Source: source, Steps: schema.PrepareSteps{
		CheckMS: schema.Millis(check), LoadMS: schema.Millis(time.Since(loadStart)), TotalMS: schema.Millis(time.Since(start)),
	}}, nil
}

// operator returns the deployment of the operator a swap or prepare of
// file names.
func (h *Host) operator(operator, file string) (*deployed, error) {
	d, ok := h.deployed[operator]
	if !ok {
		return nil, fmt.Errorf("operator %q: %w: the pipeline has no operator of that name (%s was not stored)", operator, api.ErrNotFound, file)
	}
	return d, nil
}

// register stores module in the registry, checking it (and so compiling
// it into the compilation cache) unless the registry holds it already,
// and returns its entry, where it came from (schema.SourceUpload or
// schema.SourceRegistry) and how long the check took.
func (h *Host) register(ctx context.Context, d *deployed, file string, module []byte) (registry.Entry, string, time.Duration, error) {
	if e, err := h.reg.Get(registry.Hash(module)); err == nil {
		return e, schema.SourceRegistry, 0, nil
	}
	start := time.Now()
	entry, err := h.reg.Add(ctx, d.eng, file, module)
	took := time.Since(start)
	if err != nil {
		if errors.Is(err, registry.ErrInvalid) {
			err = fmt.Errorf("%w: operator %q: %w", api.ErrRefused, d.op.Name, err)
		} else {
			err = fmt.Errorf("operator %q: %w", d.op.Name, err)
		}
		return registry.Entry{}, "", took, err
	}
	return entry, schema.SourceUpload, took, nil
}

// current returns the module d's operator runs.
func (h *Host) current(d *deployed) registry.Entry {
	h.dataMu.Lock()
	defer h.dataMu.Unlock()
	return d.current
}

// checkABI refuses entry for d's operator, which runs from, when the two
// declare different ABI versions.
func checkABI(d *deployed, entry, from registry.Entry) error {
	if entry.ABIVersion != from.ABIVersion {
		return fmt.Errorf("%w: operator %q runs ABI version %d and %s declares %d", api.ErrRefused, d.op.Name, from.ABIVersion, entry.Name, entry.ABIVersion)
	}
	return nil
}

// load loads module (entry) for d's operator, refusing it (api.ErrRefused)
// when it cannot serve the operator's kind.
func (h *Host) load(ctx context.Context, d *deployed, entry registry.Entry, module []byte) (*plugin.Plugin, error) {
	pl, err := plugin.Load(ctx, d.eng, entry.Name, module, d.kind, d.opts...)
	if err != nil {
		var le *plugin.LoadError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w: operator %q: %w", api.ErrRefused, d.op.Name, err)
		}
		return nil, fmt.Errorf("operator %q: %w", d.op.Name, err)
	}
	return pl, nil
}

// dropPrepared closes the module prepared for d's operator, if any. The
// caller holds ctlMu.
func (h *Host) dropPrepared(ctx context.Context, d *deployed) error {
	if d.prepared == nil {
		return nil
	}
	err := d.prepared.plugin.Close(context.WithoutCancel(ctx))
	d.prepared = nil
	return err
}

// closePrepared closes every prepared module, for Close, and refuses
// later prepares.
func (h *Host) closePrepared(ctx context.Context) error {
	h.ctlMu.Lock()
	defer h.ctlMu.Unlock()
	h.closing = true
	var errs []error
	for _, d := range h.deployed {
		errs = append(errs, h.dropPrepared(ctx, d))
	}
	return errors.Join(errs...)
}

// Rollback returns operator to the module that ran before the current one;
// on a host of a pipeline spread over hosts, on every host, as Swap does.
func (h *Host) Rollback(ctx context.Context, operator string) (SwapResult, error) {
	start := time.Now()
	h.ctlMu.Lock()
	defer h.ctlMu.Unlock()
	d, ok := h.deployed[operator]
	if !ok {
		return SwapResult{}, fmt.Errorf("operator %q: %w", operator, api.ErrNotFound)
	}
	h.dataMu.Lock()
	n := len(d.history)
	var prev registry.Entry
	if n > 0 {
		prev = d.history[n-1]
	}
	h.dataMu.Unlock()
	if n == 0 {
		return SwapResult{}, fmt.Errorf("operator %q has run no other plugin since the host started: nothing to roll back to: %w", operator, api.ErrConflict)
	}
	module, err := h.reg.Module(prev.SHA256)
	if err != nil {
		return SwapResult{}, err
	}
	if h.cluster != nil {
		if err := h.prepareFor(ctx, d, prev, module); err != nil {
			return SwapResult{}, err
		}
		if err := h.record(ctx, d, prev, module, reasonRollback); err != nil {
			return SwapResult{}, err
		}
	}
	res, err := h.deploy(ctx, d, prev, module, reasonRollback)
	if err != nil {
		return SwapResult{}, err
	}
	if h.cluster != nil {
		h.switched(ctx)
	}
	res.Steps.TotalMS = schema.Millis(time.Since(start))
	return res, nil
}

// deploy loads module (entry) for d's operator and swaps it in. A swap
// pushes the current module on the history; a rollback pops it. The
// module prepared for the operator is taken when it is entry, closed by
// a swap of another module, and left by a rollback of another. The
// answer's Source is SourcePrepared or SourceRegistry, and its Steps
// have all but CheckMS and TotalMS.
func (h *Host) deploy(ctx context.Context, d *deployed, entry registry.Entry, module []byte, reason string) (SwapResult, error) {
	name := d.op.Name
	from := h.current(d)
	if err := checkABI(d, entry, from); err != nil {
		return SwapResult{}, err
	}
	res := SwapResult{Operator: name, From: from, To: entry, Source: schema.SourceRegistry}
	var pl *plugin.Plugin
	switch p := d.prepared; {
	case p != nil && p.entry.SHA256 == entry.SHA256:
		pl, d.prepared = p.plugin, nil
		res.Source = schema.SourcePrepared
	case p != nil && reason == reasonSwap:
		if err := h.dropPrepared(ctx, d); err != nil {
			h.log.Warn("closing a prepared plugin failed", "operator", name, "err", err)
		}
	}
	if pl == nil {
		start := time.Now()
		var err error
		if pl, err = h.load(ctx, d, entry, module); err != nil {
			return SwapResult{}, err
		}
		res.Steps.LoadMS = schema.Millis(time.Since(start))
	}
	// The job closes the module once it stops running it: a rollback
	// loads the earlier module again from the registry (the compilation
	// cache makes that quick), so replaced modules do not pile up.
	r := exec.Replacement{Plugin: pl, Version: entry.Label(), ClosePlugin: true}
	var txnTook time.Duration
	if d.kind == plugin.KindTransactional {
		start := time.Now()
		var err error
		if r.Txn, err = h.txnOperator(ctx, d.op, pl); err != nil {
			return SwapResult{}, errors.Join(fmt.Errorf("%w: %w", api.ErrRefused, err), pl.Close(context.WithoutCancel(ctx)))
		}
		txnTook = time.Since(start)
	}
	// The history changes before the job swaps: an automatic rollback
	// right after the swap pops it.
	h.dataMu.Lock()
	oldHistory := d.history
	if reason == reasonRollback {
		d.history = d.history[:len(d.history)-1]
	} else {
		d.history = append(d.history[:len(d.history):len(d.history)], from)
	}
	d.current = entry
	h.dataMu.Unlock()
	times, err := h.job.SwapTimed(ctx, name, r)
	if err != nil {
		h.dataMu.Lock()
		d.history, d.current = oldHistory, from
		h.dataMu.Unlock() // the job closed pl
		switch {
		case errors.Is(err, exec.ErrUnknownOperator):
			err = fmt.Errorf("%w: %w", api.ErrNotFound, err)
		case errors.Is(err, exec.ErrSwapRefused):
			err = fmt.Errorf("%w: %w", api.ErrRefused, err)
		case errors.Is(err, exec.ErrNotRunning):
			err = fmt.Errorf("%w: %w", api.ErrConflict, err)
		}
		return SwapResult{}, err
	}
	res.Steps.InstancesMS = schema.Millis(txnTook + times.Instances)
	res.Steps.BoundaryMS = schema.Millis(times.Boundary)
	res.Steps.InstallMS = schema.Millis(times.Install)
	h.log.Info("plugin deployed", "operator", name, "reason", reason, "from", from.Label(), "to", entry.Label(), "sha256", entry.SHA256,
		"source", res.Source, "instances", (txnTook + times.Instances).Round(time.Microsecond).String(),
		"boundary", times.Boundary.Round(time.Microsecond).String(), "install", times.Install.Round(time.Microsecond).String())
	if err := h.reg.Record(registry.Deployment{Operator: name, SHA256: entry.SHA256, Reason: reason}); err != nil {
		h.log.Warn("recording the deployment failed", "operator", name, "err", err)
	}
	return res, nil
}

// autoRollback is the job's OnRollback: the failed module is dropped and
// the one before it is current again.
func (h *Host) autoRollback(operator, failed, restored string, reason error) {
	d, ok := h.deployed[operator]
	if !ok {
		return
	}
	h.dataMu.Lock()
	if n := len(d.history); n > 0 {
		d.current, d.history = d.history[n-1], d.history[:n-1]
	}
	cur := d.current
	h.dataMu.Unlock()
	if err := h.reg.Record(registry.Deployment{Operator: operator, SHA256: cur.SHA256, Reason: reasonAutoRollback,
		Detail: fmt.Sprintf("%s failed in its trial: %v", failed, reason)}); err != nil {
		h.log.Warn("recording the deployment failed", "operator", operator, "err", err)
	}
}

// pluginControl adapts the Host to api.Control.
type pluginControl struct{ h *Host }

func (c pluginControl) Plugins(context.Context) (schema.Plugins, error) { return c.h.Plugins() }

func (c pluginControl) Swap(ctx context.Context, operator, file string, module []byte) (schema.SwapResult, error) {
	return c.h.Swap(ctx, operator, file, module)
}

func (c pluginControl) Prepare(ctx context.Context, operator, file string, module []byte) (schema.PrepareResult, error) {
	return c.h.Prepare(ctx, operator, file, module)
}

func (c pluginControl) Rollback(ctx context.Context, operator string) (schema.SwapResult, error) {
	return c.h.Rollback(ctx, operator)
}

func (c pluginControl) SetWorkers(ctx context.Context, operator string, workers int) (schema.Workers, error) {
	return c.h.SetWorkers(ctx, operator, workers)
}

// SetWorkers changes the number of workers of a stateless or keyed
// operator while the pipeline runs (exec.Job.SetWorkers).
func (h *Host) SetWorkers(ctx context.Context, operator string, workers int) (schema.Workers, error) {
	from := -1
	for _, os := range h.job.Status().Operators {
		if os.Name == operator {
			from = os.Parallelism
		}
	}
	if err := h.job.SetWorkers(ctx, operator, workers); err != nil {
		switch {
		case errors.Is(err, exec.ErrUnknownOperator):
			err = fmt.Errorf("%w: %w", api.ErrNotFound, err)
		case errors.Is(err, exec.ErrChangeRefused):
			err = fmt.Errorf("%w: %w", api.ErrRefused, err)
		case errors.Is(err, exec.ErrNotRunning):
			err = fmt.Errorf("%w: %w", api.ErrConflict, err)
		}
		return schema.Workers{}, err
	}
	res := schema.Workers{Operator: operator, From: from, To: workers}
	for _, os := range h.job.Status().Operators {
		if os.Name == operator {
			res.Assignment = os.Assignment
		}
	}
	h.log.Info("operator's workers changed", "operator", operator, "from", from, "to", workers)
	return res, nil
}
