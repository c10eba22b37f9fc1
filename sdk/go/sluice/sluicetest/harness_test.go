package sluicetest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

// The operator under test: a keyed sum of the numeric values per key, in
// the default table, emitting "<prefix><sum>"; the prefix comes from the
// configuration. The value "panic" panics, "log" logs, "emit-then-fail"
// emits then fails, "other" writes to table "other", "put-then-fail" writes
// to both tables then fails, "input" emits "input=<the record's input>".
var prefix string

func init() {
	sluice.Configure(func(b []byte) error {
		var cfg struct {
			Prefix *string `json:"prefix"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return err
		}
		prefix = "sum="
		if cfg.Prefix != nil {
			if *cfg.Prefix == "" {
				return errors.New(`"prefix" must not be empty`)
			}
			prefix = *cfg.Prefix
		}
		return nil
	})
	sluice.Keyed(func(r sluice.Record, st *sluice.State, out *sluice.Emitter) error {
		switch string(r.Value) {
		case "panic":
			panic("handler panicked")
		case "log":
			sluice.Logf(sluice.LevelInfo, "key %s logs", r.Key)
			return nil
		case "emit-then-fail":
			out.Emit(sluice.Record{Key: r.Key, Value: []byte("never seen")})
			return errors.New("failed after emitting")
		case "other":
			st.Table("other").Put(r.Key)
			return nil
		case "input":
			out.Emit(sluice.Record{Key: r.Key, Value: fmt.Appendf(nil, "input=%d", r.Input)})
			return nil
		case "put-then-fail":
			st.Put([]byte("poison"))
			st.Table("other").Delete()
			return errors.New("failed after writing")
		}
		n, err := strconv.Atoi(string(r.Value))
		if err != nil {
			return fmt.Errorf("value %q is not a number", r.Value)
		}
		if old, ok := st.Get(); ok {
			prev, _ := strconv.Atoi(string(old))
			n += prev
		}
		st.Put(strconv.AppendInt(nil, int64(n), 10))
		out.Emit(sluice.Record{Key: r.Key, Value: []byte(prefix + strconv.Itoa(n)), Time: r.Time})
		return nil
	})
}

func values(outs []sluicetest.Output) string {
	var s []string
	for _, o := range outs {
		s = append(s, fmt.Sprintf("%d:%s=%s", o.Origin, o.Key, o.Value))
	}
	return strings.Join(s, " ")
}

func TestProcess(t *testing.T) {
	h := sluicetest.New().Declare("sums", "other")
	in := []sluice.Record{sluicetest.KV("a", "1"), sluicetest.KV("b", "x"), sluicetest.KV("a", "2"), sluicetest.KV("c", "emit-then-fail")}
	in[2].Time = 99
	outs, rejects, err := h.Process(in...)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := values(outs), "0:a=sum=1 2:a=sum=3"; got != want {
		t.Errorf("outputs %s, want %s", got, want)
	}
	if outs[1].Time != 99 {
		t.Errorf("time = %d, want 99", outs[1].Time)
	}
	want := []sluicetest.Reject{{Origin: 1, Message: `value "x" is not a number`}, {Origin: 3, Message: "failed after emitting"}}
	if fmt.Sprint(rejects) != fmt.Sprint(want) {
		t.Errorf("rejects %v, want %v", rejects, want)
	}
	if v, ok := h.State("sums", "a"); !ok || string(v) != "3" {
		t.Errorf("State(sums, a) = %q %v", v, ok)
	}
	if v, ok := h.State("", "a"); !ok || string(v) != "3" {
		t.Errorf("State of the default table = %q %v", v, ok)
	}
	if _, ok := h.State("sums", "b"); ok {
		t.Error("a rejected record left state")
	}
	h.SetState("sums", "b", []byte("40"))
	if _, _, err := h.Process(sluicetest.KV("b", "2"), sluicetest.KV("k", "other"), sluicetest.KV("q", "log")); err != nil {
		t.Fatal(err)
	}
	if v, _ := h.State("sums", "b"); string(v) != "42" {
		t.Errorf("sum after SetState = %q, want 42", v)
	}
	if v, ok := h.State("other", "k"); !ok || string(v) != "k" {
		t.Errorf("State(other, k) = %q %v", v, ok)
	}
	if logs := h.Logs(); len(logs) != 1 || logs[0] != (sluicetest.LogEntry{Level: sluice.LevelInfo, Message: "key q logs"}) {
		t.Errorf("logs = %+v", logs)
	}
	h.SetState("sums", "b", nil)
	if _, ok := h.State("sums", "b"); ok {
		t.Error("SetState(nil) did not delete")
	}
}

// A record's Input reaches the handler, as the host encodes it; one no
// pipeline can give is refused.
func TestInputs(t *testing.T) {
	h := sluicetest.New().Declare("sums", "other")
	in := []sluice.Record{sluicetest.KV("a", "input"), sluicetest.KV("b", "input"), sluicetest.KV("c", "input")}
	in[0].Input, in[2].Input = 2, 65535
	outs, rejects, err := h.Process(in...)
	if err != nil || len(rejects) > 0 {
		t.Fatalf("Process: %v, rejects %v", err, rejects)
	}
	if got, want := values(outs), "0:a=input=2 1:b=input=0 2:c=input=65535"; got != want {
		t.Errorf("outputs %s, want %s", got, want)
	}
	for _, bad := range []int{-1, 65536} {
		r := sluicetest.KV("a", "input")
		r.Input = bad
		if _, _, err := h.Process(r); !errors.Is(err, sluicetest.ErrBadInput) {
			t.Errorf("Input %d: error %v, want ErrBadInput", bad, err)
		}
	}
}

func TestConfigurePerHarness(t *testing.T) {
	a, b := sluicetest.New().Declare("s"), sluicetest.New().Declare("s")
	if err := a.Configure([]byte(`{"prefix":"A:"}`)); err != nil {
		t.Fatal(err)
	}
	if err := b.Configure([]byte(`{"prefix":"B:"}`)); err != nil {
		t.Fatal(err)
	}
	// The handler keeps its configuration in a package variable: a's call
	// must still see a's.
	outs, _, err := a.Process(sluicetest.KV("k", "1"))
	if err != nil || values(outs) != "0:k=A:1" {
		t.Errorf("a: %s, %v", values(outs), err)
	}
	outs, _, err = b.Process(sluicetest.KV("k", "1"))
	if err != nil || values(outs) != "0:k=B:1" {
		t.Errorf("b: %s, %v", values(outs), err)
	}
	// Never configured: null, the defaults.
	outs, _, err = sluicetest.New().Declare("s").Process(sluicetest.KV("k", "1"))
	if err != nil || values(outs) != "0:k=sum=1" {
		t.Errorf("unconfigured: %s, %v", values(outs), err)
	}
}

func TestErrors(t *testing.T) {
	h := sluicetest.New().Declare("s")
	err := h.Configure([]byte(`{"prefix":""}`))
	if !errors.Is(err, sluicetest.ErrBadConfig) || !strings.Contains(err.Error(), `"prefix" must not be empty`) {
		t.Errorf("Configure = %v", err)
	}
	if _, _, err := h.Process(sluicetest.KV("k", "1")); !errors.Is(err, sluicetest.ErrBadConfig) {
		t.Errorf("Process after a refused configuration = %v", err)
	}
	if err := h.Configure([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}

	// A panic fails the batch: the host, and the harness, undo it and run
	// its records one at a time, so only the record that panics is lost.
	outs, rejects, err := h.Process(sluicetest.KV("k", "1"), sluicetest.KV("k", "panic"), sluicetest.KV("k", "2"))
	if err != nil || values(outs) != "0:k=sum=1 2:k=sum=3" {
		t.Errorf("Process with a panicking handler: %s, %v", values(outs), err)
	}
	if len(rejects) != 1 || rejects[0].Origin != 1 || !errors.Is(rejects[0].Err, sluicetest.ErrTrap) ||
		!strings.Contains(rejects[0].Message, "handler panicked") {
		t.Errorf("rejects %+v, want record 1 trapped", rejects)
	}
	if v, _ := h.State("", "k"); string(v) != "3" {
		t.Errorf("state after the trap = %q, want 3", v)
	}
	// A panic alone in its batch: nothing of it stays, the harness goes on
	// with a fresh instance.
	outs, rejects, err = h.Process(sluicetest.KV("k", "panic"))
	if err != nil || len(outs) != 0 || len(rejects) != 1 || !errors.Is(rejects[0].Err, sluicetest.ErrTrap) {
		t.Errorf("a lone panic: %s %+v %v", values(outs), rejects, err)
	}
	outs, _, err = h.Process(sluicetest.KV("k", "1"))
	if err != nil || values(outs) != "0:k=sum=4" {
		t.Errorf("after the trap: %s, %v", values(outs), err)
	}

	_, rejects, err = h.Process(sluicetest.KV("k", "other"))
	if err != nil || len(rejects) != 1 || !errors.Is(rejects[0].Err, sluicetest.ErrTrap) ||
		!strings.Contains(rejects[0].Message, `state table "other" is not declared`) {
		t.Errorf("undeclared table: %+v, %v", rejects, err)
	}
	_, rejects, err = sluicetest.New().Process(sluicetest.KV("k", "1"))
	if err != nil || len(rejects) != 1 || !errors.Is(rejects[0].Err, sluicetest.ErrTrap) || !strings.Contains(rejects[0].Message, "stateless") {
		t.Errorf("state call without tables: %+v, %v", rejects, err)
	}
}

// TestRejectLeavesNoState checks the host's rule for a keyed operator: a
// record whose handler fails leaves no state behind, while the writes of
// the batch's other records, to the same key before and after it, stand.
func TestRejectLeavesNoState(t *testing.T) {
	h := sluicetest.New().Declare("sums", "other")
	h.SetState("other", "a", []byte("before"))
	outs, rejects, err := h.Process(sluicetest.KV("a", "1"), sluicetest.KV("a", "put-then-fail"), sluicetest.KV("a", "2"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := values(outs), "0:a=sum=1 2:a=sum=3"; got != want {
		t.Errorf("outputs %s, want %s", got, want)
	}
	if len(rejects) != 1 || rejects[0].Origin != 1 || rejects[0].Message != "failed after writing" || rejects[0].Err != nil {
		t.Errorf("rejects %+v", rejects)
	}
	if v, _ := h.State("sums", "a"); string(v) != "3" {
		t.Errorf("sum of a = %q, want 3: the rejected record's write was not undone", v)
	}
	if v, _ := h.State("other", "a"); string(v) != "before" {
		t.Errorf("other/a = %q, want before", v)
	}

	// Alone in its batch, too.
	outs, rejects, err = h.Process(sluicetest.KV("a", "put-then-fail"))
	if err != nil || len(outs) != 0 || len(rejects) != 1 {
		t.Fatalf("%s %+v %v", values(outs), rejects, err)
	}
	if v, _ := h.State("sums", "a"); string(v) != "3" {
		t.Errorf("sum of a = %q, want 3", v)
	}
	if v, _ := h.State("other", "a"); string(v) != "before" {
		t.Errorf("other/a = %q, want before", v)
	}
}

func TestDeclarePanics(t *testing.T) {
	for name, fn := range map[string]func(){
		"empty":            func() { sluicetest.New().Declare("") },
		"duplicate":        func() { sluicetest.New().Declare("a", "a") },
		"undeclared State": func() { sluicetest.New().Declare("a").State("b", "k") },
		"no tables":        func() { sluicetest.New().State("", "k") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			fn()
		}()
	}
}

// TestParallelHarnesses runs harnesses with different configurations from
// parallel goroutines; with -race it checks the harness's serialisation.
func TestParallelHarnesses(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sluicetest.New().Declare("s")
			p := fmt.Sprintf("P%d:", i)
			if err := h.Configure(fmt.Appendf(nil, `{"prefix":%q}`, p)); err != nil {
				t.Error(err)
				return
			}
			for j := range 20 {
				outs, _, err := h.Process(sluicetest.KV("k", "1"))
				if err != nil || len(outs) != 1 || string(outs[0].Value) != p+strconv.Itoa(j+1) {
					t.Errorf("harness %d batch %d: %s, %v", i, j, values(outs), err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
