package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/txn/adapt"
)

// Every report writer gives the JSON encoding/json gives when every figure
// is a number, field for field and in the same order.
func TestWriteJSONMatchesEncodingJSON(t *testing.T) {
	date := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	m := Machine{GOMAXPROCS: 2, NumCPU: 2, GoVersion: "go1.26", OS: "linux", Arch: "amd64"}
	for name, r := range map[string]any{
		"bench": &Report{Machine: m, Date: date, Quick: true,
			Wasm:    &WasmResult{RecordSize: 64, Rounds: 3, RoundSeconds: 0.5, Batches: []WasmBatch{{Size: 64}}},
			Targets: []Target{{Name: "map", Want: "at most +100 ns", Got: "+110 ns"}}},
		"swap": &SwapReport{Machine: m, Date: date, Rate: 1e5, Results: []SwapResult{{}}},
		"txn": &TxnReport{Machine: m, Date: date, Dynamic: &TxnDynamic{
			Phases:       []TxnPhase{{Events: 200, Knobs: map[string]string{"b": "2", "a": "1"}, AdaptiveVsBest: &RateRatio{Ratio: 1, Low: 0.9, High: 1.1, Batches: 4}}},
			Stats:        &adapt.Stats{},
			AdaptiveOver: []TxnLaneRatio{{Strategy: "serial", RateRatio: RateRatio{Ratio: 1.2, Low: 1.1, High: 1.3, Batches: 8}}},
		}},
		"empty": &TxnReport{},
	} {
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			if err := writeJSON(&got, r); err != nil {
				t.Fatal(err)
			}
			want, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(bytes.TrimSpace(got.Bytes()), want) {
				t.Errorf("writeJSON gave\n%s\nencoding/json gives\n%s", got.Bytes(), want)
			}
		})
	}
}

// A figure that cannot be computed (infinite, not a number) is written as
// null and listed with the reason; the report is still written, and still
// parses.
func TestWriteJSONDegenerateFigures(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for name, tc := range map[string]struct {
		report any
		want   []string // figures listed as unavailable
	}{
		"bench": {&Report{Wasm: &WasmResult{RoundSeconds: nan, Batches: []WasmBatch{{Size: 1}, {Size: 2, NativeNs: inf}}}},
			[]string{"wasm.round_seconds", "wasm.batches[1].native_ns_per_record"}},
		"swap": {&SwapReport{Rate: inf, Results: []SwapResult{{}, {Achieved: nan}}},
			[]string{"rate", "results[1].achieved_rate"}},
		"txn interval": {&TxnReport{Dynamic: &TxnDynamic{
			Phases:       []TxnPhase{{AdaptiveVsBest: ptr(pairedRateRatio([]float64{1}, []float64{2}))}},
			AdaptiveOver: []TxnLaneRatio{{Strategy: "s", RateRatio: pairedRateRatio(nil, nil)}},
		}}, []string{
			"dynamic.phases[0].adaptive_over_best_interval.low", "dynamic.phases[0].adaptive_over_best_interval.high",
			"dynamic.adaptive_over_static[0].low", "dynamic.adaptive_over_static[0].high"}},
		"map of figures": {map[string]float64{"b": nan, "a": 1}, []string{"b"}},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeJSON(&b, tc.report); err != nil {
				t.Fatalf("writeJSON: %v", err)
			}
			var parsed struct {
				Unavailable []Unavailable `json:"unavailable"`
			}
			if err := json.Unmarshal(b.Bytes(), &parsed); err != nil && name != "map of figures" {
				t.Fatalf("the report does not parse: %v\n%s", err, b.Bytes())
			}
			if name == "map of figures" {
				// Not a struct: nowhere to list them, but written.
				if !bytes.Contains(b.Bytes(), []byte(`"b": null`)) {
					t.Errorf("map written as %s", b.Bytes())
				}
				return
			}
			var figures []string
			for _, u := range parsed.Unavailable {
				figures = append(figures, u.Figure)
				if u.Reason == "" {
					t.Errorf("figure %s has no reason", u.Figure)
				}
			}
			if !slices.Equal(figures, tc.want) {
				t.Errorf("unavailable %v, want %v\n%s", figures, tc.want, b.Bytes())
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
