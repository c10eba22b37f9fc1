package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	wasm "github.com/sluicehq/sluice/runtime"
)

// WasmResult holds the wasm suite's figures.
type WasmResult struct {
	RecordSize   int         `json:"record_size_bytes"`
	Rounds       int         `json:"rounds"`
	RoundSeconds float64     `json:"round_seconds"`
	Batches      []WasmBatch `json:"batches"`
}

// WasmBatch holds the per-record costs for one batch size: medians over
// the rounds, and the rounds themselves.
type WasmBatch struct {
	Size int `json:"batch_size"`
	// NativeNs is the upper function in native Go (Plugins.UpperNative)
	// in a Go loop that copies each output record into an arena, as the
	// host copies a guest's output.
	NativeNs float64 `json:"native_ns_per_record"`
	// WasmNs is the upper plugin through Instance.Process on an engine
	// with the default call timeout, as deployed.
	WasmNs float64 `json:"wasm_ns_per_record"`
	// WasmNoTimeoutNs is the same on an engine with the call timeout off.
	WasmNoTimeoutNs float64 `json:"wasm_no_timeout_ns_per_record"`
	// OverheadNs is WasmNs - NativeNs; OverheadNoTimeoutNs is
	// WasmNoTimeoutNs - NativeNs.
	OverheadNs          float64 `json:"overhead_ns_per_record"`
	OverheadNoTimeoutNs float64 `json:"overhead_no_timeout_ns_per_record"`

	NativeRounds        []float64 `json:"native_rounds_ns_per_record"`
	WasmRounds          []float64 `json:"wasm_rounds_ns_per_record"`
	WasmNoTimeoutRounds []float64 `json:"wasm_no_timeout_rounds_ns_per_record"`
}

// wasmRecords returns n records whose values are size bytes of lower-case
// letters, digits and spaces, different from record to record.
func wasmRecords(n, size int) []abi.Record {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
	in := make([]abi.Record, n)
	for i := range in {
		v := make([]byte, size)
		for j := range v {
			v[j] = alphabet[(i+j)%len(alphabet)]
		}
		in[i] = abi.Record{Origin: uint32(i), Time: int64(i), Value: v}
	}
	return in
}

// checkUpper verifies that out is in upper-cased, record for record.
func checkUpper(what string, in, out []abi.Record) error {
	if len(out) != len(in) {
		return fmt.Errorf("bench: %s: %d output records for %d inputs", what, len(out), len(in))
	}
	for i := range in {
		if out[i].Origin != uint32(i) || !bytes.Equal(out[i].Value, bytes.ToUpper(in[i].Value)) {
			return fmt.Errorf("bench: %s: output record %d is %q (origin %d), want %q",
				what, i, out[i].Value, out[i].Origin, bytes.ToUpper(in[i].Value))
		}
	}
	return nil
}

// nativeMap is the native side of the comparison: the upper function on
// each record, the result copied into an arena of output records reused
// across batches, as plugin.Output holds what a guest emits.
type nativeMap struct {
	upper   func(dst, src []byte) []byte
	scratch []byte
	arena   []byte
	out     []abi.Record
}

func (m *nativeMap) take(n int) []byte {
	if n == 0 {
		return nil
	}
	if cap(m.arena)-len(m.arena) < n {
		m.arena = make([]byte, 0, max(2*cap(m.arena), n, 4096))
	}
	s := len(m.arena)
	m.arena = m.arena[:s+n]
	return m.arena[s : s+n : s+n]
}

func (m *nativeMap) copyBytes(b []byte) []byte {
	d := m.take(len(b))
	copy(d, b)
	return d
}

// process maps one batch; the outputs are valid until the next call.
func (m *nativeMap) process(in []abi.Record) []abi.Record {
	m.out, m.arena = m.out[:0], m.arena[:0]
	for i := range in {
		r := &in[i]
		m.scratch = m.upper(m.scratch[:0], r.Value)
		m.out = append(m.out, abi.Record{
			Origin: uint32(i), Time: r.Time,
			Key: m.copyBytes(r.Key), Value: m.copyBytes(m.scratch),
		})
	}
	return m.out
}

// wasmVariant is one of the three things measured per batch size.
type wasmVariant struct {
	name string
	run  func() error        // one batch
	last func() []abi.Record // the last batch's output
}

// measure runs batches of n records for at least d and returns the cost
// per record in nanoseconds.
func measure(ctx context.Context, d time.Duration, n int, run func() error) (float64, error) {
	start := time.Now()
	batches := 0
	for {
		for range 8 {
			if err := run(); err != nil {
				return 0, err
			}
		}
		batches += 8
		if el := time.Since(start); el >= d {
			return float64(el.Nanoseconds()) / float64(batches*n), nil
		}
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("bench: %w", err)
		}
	}
}

func runWasm(ctx context.Context, e *env, code []byte, upper func(dst, src []byte) []byte, cfg WasmConfig) (*WasmResult, error) {
	if len(cfg.BatchSizes) == 0 || cfg.RecordSize <= 0 || cfg.Rounds <= 0 || cfg.RoundTime <= 0 {
		return nil, fmt.Errorf("bench: wasm suite: batch sizes, record size, rounds and round time must be set (got %+v)", cfg)
	}
	switch {
	case len(code) == 0:
		return nil, errors.New("bench: the upper plugin was not given (Plugins field empty)")
	case upper == nil:
		return nil, errors.New("bench: wasm suite: the upper function in native Go was not given (Plugins.UpperNative nil)")
	}
	e.step("wasm: compiling the upper plugin (%s engine with the default call timeout, %[1]s engine without)", cmp.Or(e.engineName, wasm.EngineWazero))
	type engineVariant struct {
		name string
		inst *plugin.Instance
		out  plugin.Output
	}
	var variants []*engineVariant
	defer func() {
		for _, v := range variants {
			_ = v.inst.Close(context.WithoutCancel(ctx))
		}
	}()
	for _, timeout := range []bool{true, false} {
		p, err := e.load(ctx, "upper", code, plugin.KindMap, timeout)
		if err != nil {
			return nil, err
		}
		inst, err := p.NewInstance(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("bench: wasm suite: %w", err)
		}
		name := "wasm (call timeout on)"
		if !timeout {
			name = "wasm (call timeout off)"
		}
		variants = append(variants, &engineVariant{name: name, inst: inst})
	}

	res := &WasmResult{RecordSize: cfg.RecordSize, Rounds: cfg.Rounds, RoundSeconds: cfg.RoundTime.Seconds()}
	inputs := make([][]abi.Record, len(cfg.BatchSizes))
	plans := make([][]wasmVariant, len(cfg.BatchSizes))
	for bi, n := range cfg.BatchSizes {
		in := wasmRecords(n, cfg.RecordSize)
		inputs[bi] = in
		nm := &nativeMap{upper: upper}
		var nativeOut []abi.Record
		plan := []wasmVariant{{
			name: "native Go",
			run:  func() error { nativeOut = nm.process(in); return nil },
			last: func() []abi.Record { return nativeOut },
		}}
		for _, v := range variants {
			plan = append(plan, wasmVariant{
				name: v.name,
				run: func() error {
					v.out.Reset()
					if err := v.inst.Process(ctx, in, nil, &v.out); err != nil {
						return fmt.Errorf("bench: %s: %w", v.name, err)
					}
					if len(v.out.Rejects) > 0 {
						return fmt.Errorf("bench: %s: record %d rejected: %w", v.name, v.out.Rejects[0].Index, v.out.Rejects[0].Err)
					}
					return nil
				},
				last: func() []abi.Record { return v.out.Records },
			})
		}
		plans[bi] = plan
		res.Batches = append(res.Batches, WasmBatch{Size: n})
	}

	// Warm up every variant (buffers grown, code paged in) and check it.
	e.step("wasm: warming up %d variants x %d batch sizes", len(plans[0]), len(plans))
	for bi, plan := range plans {
		for _, v := range plan {
			for range 16 {
				if err := v.run(); err != nil {
					return nil, err
				}
			}
			if err := checkUpper(fmt.Sprintf("%s, batch of %d", v.name, cfg.BatchSizes[bi]), inputs[bi], v.last()); err != nil {
				return nil, err
			}
		}
	}

	// Rounds interleave batch sizes and variants, so that noise from the
	// rest of the machine spreads over all of them.
	for r := range cfg.Rounds {
		e.step("wasm: round %d/%d: batches of %v records, native Go then Wasm with and without call timeout, %s each",
			r+1, cfg.Rounds, cfg.BatchSizes, cfg.RoundTime)
		for bi, plan := range plans {
			b := &res.Batches[bi]
			for vi, v := range plan {
				ns, err := measure(ctx, cfg.RoundTime, b.Size, v.run)
				if err != nil {
					return nil, err
				}
				if err := checkUpper(fmt.Sprintf("%s, batch of %d", v.name, b.Size), inputs[bi], v.last()); err != nil {
					return nil, err
				}
				switch vi {
				case 0:
					b.NativeRounds = append(b.NativeRounds, ns)
				case 1:
					b.WasmRounds = append(b.WasmRounds, ns)
				case 2:
					b.WasmNoTimeoutRounds = append(b.WasmNoTimeoutRounds, ns)
				}
			}
		}
	}
	for i := range res.Batches {
		b := &res.Batches[i]
		b.NativeNs, b.WasmNs, b.WasmNoTimeoutNs = median(b.NativeRounds), median(b.WasmRounds), median(b.WasmNoTimeoutRounds)
		b.OverheadNs, b.OverheadNoTimeoutNs = b.WasmNs-b.NativeNs, b.WasmNoTimeoutNs-b.NativeNs
	}
	return res, nil
}
