package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

func TestMain(m *testing.M) { os.Exit(plugintest.Main(m)) }

const testConfig = `{"require": ["user"], "min": {"amount": 10, "age": 18}, "set": {"source": "web", "v": [1, 2]}}`

func TestApply(t *testing.T) {
	r, err := parseRules([]byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in, out string // out "" means dropped
		err     string
	}{
		{in: `{"user":"ann","amount":12,"age":30}`, out: `{"user":"ann","amount":12,"age":30,"source":"web","v":[1,2]}`},
		{in: ` { "user" : "bo" , "age":18, "amount": 1e3, "source": "app" } `, out: `{"user":"bo","age":18,"amount":1e3,"source":"web","v":[1,2]}`},
		{in: `{"user":"a\u0062","x":{"nested":[1, 2]},"amount":10,"age":99}`, out: `{"user":"a\u0062","x":{"nested":[1, 2]},"amount":10,"age":99,"source":"web","v":[1,2]}`},
		{in: `{"amount":12,"age":30}`},                       // no user
		{in: `{"user":"c","amount":9.99,"age":30}`},          // under a minimum
		{in: `{"user":"c","age":30}`},                        // minimum field absent
		{in: `{"user":"c","amount":-5e400,"age":30}`},        // -Inf is under
		{in: `{"user":"c","amount":11,"amount":2,"age":30}`}, // the last duplicate counts
		{in: `{"user":"c","amount":"12","age":30}`, err: `field "amount" is a string, not a number`},
		{in: `{"user":"c","amount":null,"age":30}`, err: `field "amount" is null, not a number`},
		{in: `[1,2]`, err: "value is not a JSON object: it is an array"},
		{in: `"text"`, err: "value is not a JSON object: it is a string"},
		{in: `{"user":`, err: "value is not a JSON object: unexpected end of JSON"},
		{in: `{"user":1} {}`, err: "value is not a JSON object: data after the object"},
		{in: ``, err: "value is not a JSON object"},
		{in: `not json`, err: "value is not a JSON object"},
	} {
		out, keep, err := r.apply(nil, []byte(tc.in))
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("apply(%s): error %v, want %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("apply(%s): %v", tc.in, err)
		case tc.out == "" && keep:
			t.Errorf("apply(%s) kept %s, want it dropped", tc.in, out)
		case tc.out != "" && string(out) != tc.out:
			t.Errorf("apply(%s) = %s, %v; want %s", tc.in, out, keep, tc.out)
		}
	}
}

func TestEmptyRulesAndEmptyObject(t *testing.T) {
	r, err := parseRules([]byte(`null`))
	if err != nil {
		t.Fatal(err)
	}
	if out, keep, err := r.apply(nil, []byte(`{}`)); err != nil || !keep || string(out) != `{}` {
		t.Errorf("{} with no rules = %s %v %v", out, keep, err)
	}
	r, _ = parseRules([]byte(`{"set":{"a":1}}`))
	if out, _, _ := r.apply(nil, []byte(`{}`)); string(out) != `{"a":1}` {
		t.Errorf("set on {} = %s", out)
	}
}

func TestParseRulesErrors(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{"requires": ["x"]}`, `unknown field "requires"`},
		{`{"require": "x"}`, "cannot unmarshal"},
		{`{"require": [""]}`, "empty field name"},
		{`{"min": {"a": "1"}}`, "cannot unmarshal"},
		{`{"set": [1]}`, `"set": it is an array`},
		{`{"set": {"a": 1, "a": 2}}`, `names field "a" twice`},
		{`[`, "enrich configuration"},
	} {
		if _, err := parseRules([]byte(tc.config)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseRules(%s) = %v, want an error containing %q", tc.config, err, tc.want)
		}
	}
}

func TestEnrich(t *testing.T) {
	h := sluicetest.New()
	if err := h.Configure([]byte(testConfig)); err != nil {
		t.Fatal(err)
	}
	in := []sluice.Record{
		sluicetest.KV("k1", `{"user":"ann","amount":12,"age":30}`),
		sluicetest.KV("k2", `{"user":"bo","amount":3,"age":30}`),
		sluicetest.KV("k3", `oops`),
		sluicetest.KV("k4", `{"user":"cy","amount":50,"age":"old"}`),
	}
	in[0].Time = 5
	in[0].Headers = []sluice.Header{{Name: []byte("trace"), Value: []byte("t1")}}
	outs, rejects, err := h.Process(in...)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Origin != 0 || string(outs[0].Key) != "k1" || outs[0].Time != 5 ||
		string(outs[0].Value) != `{"user":"ann","amount":12,"age":30,"source":"web","v":[1,2]}` {
		t.Fatalf("outputs %+v", outs)
	}
	if v, _ := outs[0].Header("trace"); string(v) != "t1" {
		t.Error("headers not carried")
	}
	got := fmt.Sprint(rejects)
	if len(rejects) != 2 || rejects[0].Origin != 2 || rejects[1].Origin != 3 ||
		!strings.Contains(got, "value is not a JSON object") || !strings.Contains(got, `field "age" is a string, not a number`) {
		t.Errorf("rejects %v", rejects)
	}
	if err := sluicetest.New().Configure([]byte(`{"bogus":1}`)); err == nil || !strings.Contains(err.Error(), `unknown field "bogus"`) {
		t.Errorf("bad configuration: %v", err)
	}
}

func TestEnrichSameInWasm(t *testing.T) {
	var batch []sluice.Record
	for i := range 500 {
		batch = append(batch, sluicetest.KV(fmt.Sprint(i), fmt.Sprintf(`{"user":"u%d","amount":%d,"age":%d,"tags":["a","b"]}`, i, i%40, 10+i%20)))
	}
	batch = append(batch, sluicetest.KV("x", "[]"), sluicetest.KV("y", `{"user":"z","amount":"12","age":20}`))
	plugintest.SameInWasm(t, []plugintest.Case{
		{Name: "rules", Config: []byte(testConfig), Batches: [][]sluice.Record{batch}},
		{Name: "no config", Batches: [][]sluice.Record{batch[:10]}},
		{Name: "bad config", Config: []byte(`{"min":{"a":"b"}}`), Batches: [][]sluice.Record{batch[:1]}},
	})
}

// BenchmarkApply is the plugin's per-record logic natively, for comparison
// with the plugin in WebAssembly.
func BenchmarkApply(b *testing.B) {
	r, err := parseRules([]byte(testConfig))
	if err != nil {
		b.Fatal(err)
	}
	in := []byte(`{"user":"ann","amount":12,"age":30,"tags":["a","b"]}`)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _, _ = r.apply(buf[:0], in)
	}
}
