package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

// values returns the output records' values.
func values(out *Output) []string {
	v := make([]string, len(out.Records))
	for i, r := range out.Records {
		v[i] = string(r.Value)
	}
	return v
}

// origins returns the output records' Origins.
func origins(out *Output) []uint32 {
	o := make([]uint32, len(out.Records))
	for i, r := range out.Records {
		o[i] = r.Origin
	}
	return o
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMapCopiesRecordsOut(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindMap})
	in := records("a", "bb", "")
	in[1].Headers = []abi.Header{{Name: []byte("h1"), Value: []byte("v1")}, {Name: []byte("h2")}}
	var out Output
	if err := f.inst.Process(context.Background(), in, nil, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Records) != 3 || len(out.Rejects) != 0 {
		t.Fatalf("got %d records, %d rejects", len(out.Records), len(out.Rejects))
	}
	for i, r := range out.Records {
		if r.Origin != uint32(i) || r.Time != in[i].Time || !bytes.Equal(r.Key, in[i].Key) || !bytes.Equal(r.Value, in[i].Value) {
			t.Errorf("record %d = %+v, want the input with Origin %d", i, r, i)
		}
	}
	h := out.Records[1].Headers
	if len(h) != 2 || string(h[0].Name) != "h1" || string(h[0].Value) != "v1" || string(h[1].Name) != "h2" || len(h[1].Value) != 0 {
		t.Errorf("headers = %q", h)
	}
	// The output is a copy, not a view of guest memory: another batch
	// through the same instance leaves it intact.
	var out2 Output
	if err := f.inst.Process(context.Background(), records("zzzzzzzzzzzzzzzzzzzz", "yyyyyyyy"), nil, &out2); err != nil {
		t.Fatal(err)
	}
	if got := values(&out); !equal(got, []string{"a", "bb", ""}) {
		t.Errorf("first output changed to %q", got)
	}
}

func TestFilterDropsRecords(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindFilter})
	out := f.process("keep1", "drop", "keep2", "drop")
	if !equal(values(out), []string{"keep1", "keep2"}) || !equal(origins(out), []uint32{0, 2}) {
		t.Errorf("values %q origins %v", values(out), origins(out))
	}
}

func TestFlatMapEmitsMany(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindFlatMap})
	out := f.process("dup:2", "dup:0", "dup:3")
	if !equal(origins(out), []uint32{0, 0, 2, 2, 2}) {
		t.Errorf("origins %v", origins(out))
	}
}

func TestKeyedState(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindKeyed})
	in := records("count", "count", "count", "get", "get-small", "table:totals", "table:nope")
	for i := range 3 {
		in[i].Key = []byte("a")
	}
	in[3].Key, in[4].Key = []byte("a"), []byte("a")
	var out Output
	if err := f.inst.Process(context.Background(), in, f.st, &out); err != nil {
		t.Fatal(err)
	}
	want := []string{"1", "2", "3", "3", "1", "1", "-1"}
	if !equal(values(&out), want) {
		t.Errorf("values %q, want %q", values(&out), want)
	}
	out.Reset()
	in = records("delete", "get")
	in[0].Key, in[1].Key = []byte("a"), []byte("a")
	if err := f.inst.Process(context.Background(), in, f.st, &out); err != nil {
		t.Fatal(err)
	}
	if !equal(values(&out), []string{"delete", "<none>"}) {
		t.Errorf("after delete: %q", values(&out))
	}
}

func TestKeyedNeedsState(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindKeyed})
	var out Output
	if err := f.inst.Process(context.Background(), records("count"), nil, &out); err == nil {
		t.Fatal("keyed Process without State succeeded")
	}
}

func TestEmptyBatch(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindKeyed})
	out := f.process()
	if len(out.Records)+len(out.Rejects) != 0 {
		t.Errorf("output from an empty batch: %+v", out)
	}
}

func TestConfigure(t *testing.T) {
	f := newFixture(t, fixtureConfig{config: `{"greeting":"hi"}`})
	if got := values(f.process("config")); !equal(got, []string{`{"greeting":"hi"}`}) {
		t.Errorf("config seen by the guest = %q", got)
	}
	ctx := context.Background()
	_, err := f.p.NewInstance(ctx, []byte(`{"bad":true}`))
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *StatusError", err)
	}
	if se.Status != abi.StatusBadConfig || se.Export != abi.ExportConfigure || se.Reason != `bad config: key "bad" is not allowed` {
		t.Errorf("StatusError = %+v", se)
	}
	const want = `plugin "ops.wasm" export "sluice_configure" returned status -3 (bad config): bad config: key "bad" is not allowed`
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	_, err = f.p.NewInstance(ctx, []byte(`{"trap":true}`))
	if !errors.Is(err, runtime.ErrTrap) {
		t.Errorf("configure trap: err = %v, want ErrTrap", err)
	}
}

func TestRejectFromGuest(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	out := f.process("a", "reject", "b")
	if !equal(values(out), []string{"a", "b"}) || !equal(origins(out), []uint32{0, 2}) {
		t.Errorf("values %q origins %v", values(out), origins(out))
	}
	if len(out.Rejects) != 1 || out.Rejects[0].Index != 1 {
		t.Fatalf("rejects = %+v", out.Rejects)
	}
	err := out.Rejects[0].Err
	var re *RecordError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &re) || re.Reason != "rejected on request" || re.Index != 1 {
		t.Errorf("reject error = %v", err)
	}
	const want = `plugin "ops.wasm": input record 1 rejected by the operator: rejected on request`
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
}

// isolated processes a batch with bad in the middle of good records and
// checks that only bad is rejected; it returns the reject's error.
func isolated(t *testing.T, f *fixture, bad string) error {
	t.Helper()
	out := f.process("a", "b", bad, "c")
	if !equal(values(out), []string{"a", "b", "c"}) || !equal(origins(out), []uint32{0, 1, 3}) {
		t.Errorf("values %q origins %v, want a b c from 0 1 3", values(out), origins(out))
	}
	if len(out.Rejects) != 1 || out.Rejects[0].Index != 2 {
		t.Fatalf("rejects = %+v, want record 2", out.Rejects)
	}
	err := out.Rejects[0].Err
	var re *RecordError
	if !errors.As(err, &re) || re.Index != 2 || re.Plugin != "ops.wasm" {
		t.Fatalf("reject error = %T %v", err, err)
	}
	if !strings.Contains(err.Error(), `plugin "ops.wasm" export "sluice_process": input record 2: `) {
		t.Errorf("error does not name plugin, export and record: %q", err)
	}
	// The instance was replaced: a later batch works and sees the config.
	if got := values(f.process("config", "d")); !equal(got, []string{f.config, "d"}) {
		t.Errorf("next batch = %q", got)
	}
	return err
}

func TestGuestTrapIsolated(t *testing.T) {
	f := newFixture(t, fixtureConfig{config: `{"mode":"strict"}`})
	err := isolated(t, f, "trap")
	var rerr *runtime.Error
	if !errors.Is(err, runtime.ErrTrap) || !errors.As(err, &rerr) || rerr.Export != abi.ExportProcess {
		t.Errorf("err = %v, want a trap in sluice_process", err)
	}
}

func TestGuestPanicIsolated(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	err := isolated(t, f, "panic")
	// A Go reactor's runtime aborts with unreachable on a fatal panic.
	if !errors.Is(err, runtime.ErrTrap) && !errors.Is(err, runtime.ErrExit) {
		t.Errorf("err = %v, want ErrTrap or ErrExit", err)
	}
	if !strings.Contains(err.Error(), "guest panics on request") {
		t.Errorf("error lacks the guest's stderr: %q", err)
	}
}

func TestGuestLoopTimesOut(t *testing.T) {
	f := newFixture(t, fixtureConfig{timeout: 300 * time.Millisecond})
	err := isolated(t, f, "loop")
	if !errors.Is(err, runtime.ErrTimeout) {
		t.Errorf("err = %v, want ErrTimeout", err)
	}
}

func TestGuestMemoryGrowthPastCap(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	err := isolated(t, f, "grow")
	var rerr *runtime.Error
	if !errors.As(err, &rerr) || (rerr.Kind != runtime.KindTrap && rerr.Kind != runtime.KindExit) {
		t.Errorf("err = %v, want a trap or exit", err)
	}
}

func TestGuestErrorStatusIsolated(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	err := isolated(t, f, "status")
	var se *StatusError
	if !errors.As(err, &se) || se.Status != abi.StatusError || se.Reason != "status requested by record 0" {
		t.Errorf("err = %v, want StatusError with the logged reason", err)
	}
}

func TestTrapRollsBackState(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindKeyed})
	in := records("count", "count-trap", "count", "count")
	in[0].Key, in[1].Key, in[2].Key, in[3].Key = []byte("a"), []byte("b"), []byte("a"), []byte("b")
	var out Output
	if err := f.inst.Process(context.Background(), in, f.st, &out); err != nil {
		t.Fatal(err)
	}
	if !equal(values(&out), []string{"1", "2", "1"}) || !equal(origins(&out), []uint32{0, 2, 3}) {
		t.Errorf("values %q origins %v", values(&out), origins(&out))
	}
	if len(out.Rejects) != 1 || out.Rejects[0].Index != 1 {
		t.Fatalf("rejects = %+v", out.Rejects)
	}
	// Record 1's increment of b was rolled back: b counts record 3 only.
	if a, b := f.st.data[0]["a"], f.st.data[0]["b"]; a != "2" || b != "1" {
		t.Errorf("state a=%q b=%q, want 2 and 1", a, b)
	}
}

func TestCancelledContextAbandonsBatch(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindKeyed})
	f.process("count")
	// The batch counts k0, then spins until the caller's deadline stops it
	// (the engine's own timeout is far longer).
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var out Output
	err := f.inst.Process(ctx, records("count", "loop"), f.st, &out)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if len(out.Records)+len(out.Rejects) != 0 {
		t.Errorf("abandoned batch left output %+v", out)
	}
	if got := f.st.data[0]["k0"]; got != "1" {
		t.Errorf("state k0 = %q, want 1 (the abandoned batch rolled back)", got)
	}
	// A context done before the call touches nothing.
	err = f.inst.Process(ctx, records("count"), f.st, &out)
	if !errors.Is(err, context.DeadlineExceeded) || f.st.data[0]["k0"] != "1" {
		t.Errorf("done context: err = %v, k0 = %q", err, f.st.data[0]["k0"])
	}
	// The operator goes on with a live context.
	if got := values(f.process("count")); !equal(got, []string{"2"}) {
		t.Errorf("after cancellation: %q", got)
	}
}

func TestClosed(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	ctx := context.Background()
	inst, err := f.p.NewInstance(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var out Output
	if err := inst.Process(ctx, records("a"), nil, &out); !errors.Is(err, ErrInstanceClosed) {
		t.Errorf("Process after Close: err = %v, want ErrInstanceClosed", err)
	}
	// Closing the plugin closes its instances under them: Process fails as a
	// whole instead of rejecting every record.
	if err := f.p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	err = f.inst.Process(ctx, records("a", "b"), nil, &out)
	if !errors.Is(err, runtime.ErrClosed) || len(out.Rejects) != 0 {
		t.Errorf("Process after Plugin.Close: err = %v, rejects %d", err, len(out.Rejects))
	}
}

// hostFault processes "a", bad, "b" and returns the *runtime.HostError that
// rejected bad, checking it names fn.
func hostFaultOf(t *testing.T, f *fixture, bad, fn string) (*runtime.HostError, error) {
	t.Helper()
	out := f.process("a", bad, "b")
	if !equal(values(out), []string{"a", "b"}) {
		t.Errorf("values %q, want a b", values(out))
	}
	if len(out.Rejects) != 1 || out.Rejects[0].Index != 1 {
		t.Fatalf("rejects = %+v, want record 1", out.Rejects)
	}
	err := out.Rejects[0].Err
	var he *runtime.HostError
	if !errors.Is(err, runtime.ErrHost) || !errors.As(err, &he) {
		t.Fatalf("err = %v, want a host function error", err)
	}
	if he.Func != fn {
		t.Errorf("HostError.Func = %q, want %q (%v)", he.Func, fn, err)
	}
	return he, err
}

func TestBadPointers(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindKeyed})
	for _, tc := range []struct{ arg, fn, what string }{
		{"emit", "emit", "batch"},
		{"reject", "reject", "message"},
		{"log", "log", "message"},
		{"table_id", "table_id", "name"},
		{"state_get", "state_get", "key"},
		{"state_get:buf", "state_get", "buffer"},
		{"state_put", "state_put", "key"},
		{"state_put:value", "state_put", "value"},
		{"state_delete", "state_delete", "key"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			he, _ := hostFaultOf(t, f, "oob:"+tc.arg, tc.fn)
			want := fmt.Sprintf("%s pointer 0xffff0000 length 8 is outside memory of ", tc.what)
			if !strings.HasPrefix(he.Reason, want) {
				t.Errorf("reason = %q, want prefix %q", he.Reason, want)
			}
			he, _ = hostFaultOf(t, f, "overflow:"+tc.arg, tc.fn)
			want = fmt.Sprintf("%s pointer 0xfffffff0 + length 32 overflows the 32-bit address space", tc.what)
			if !strings.HasPrefix(he.Reason, want) {
				t.Errorf("reason = %q, want prefix %q", he.Reason, want)
			}
		})
	}
	if f.st.puts != 0 {
		t.Errorf("state was written %d times by calls with bad pointers", f.st.puts)
	}
}

func TestStateFromStatelessOperator(t *testing.T) {
	for _, k := range []Kind{KindMap, KindFilter, KindFlatMap} {
		f := newFixture(t, fixtureConfig{kind: k})
		he, err := hostFaultOf(t, f, "put", "state_put")
		if want := fmt.Sprintf("called by a %s operator: only keyed operators have state", k); he.Reason != want {
			t.Errorf("reason = %q, want %q", he.Reason, want)
		}
		if !strings.Contains(err.Error(), "host function state_put: called by a "+string(k)+" operator") {
			t.Errorf("error = %q", err)
		}
	}
}

func TestStateErrorsAreWrapped(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindKeyed})
	_, err := hostFaultOf(t, f, "put-table:7", "state_put")
	if !errors.Is(err, errUnknownTable) {
		t.Errorf("undeclared table: err = %v, want errUnknownTable", err)
	}
	in := records("a", "put", "b")
	in[1].Key = []byte("foreign-key")
	var out Output
	if err := f.inst.Process(context.Background(), in, f.st, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Rejects) != 1 || !errors.Is(out.Rejects[0].Err, errForeignKey) {
		t.Fatalf("foreign key: rejects = %+v", out.Rejects)
	}
	if !strings.Contains(out.Rejects[0].Err.Error(), `host function state_put: table 0 key "foreign-key": key "foreign-key": key outside`) {
		t.Errorf("error = %q", out.Rejects[0].Err)
	}
}

func TestEmitMisuse(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindFlatMap, limits: Limits{MaxRecordBytes: 1024, MaxOutputBytes: 8192}})
	_, err := hostFaultOf(t, f, "emit-malformed", "emit")
	var de *abi.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, abi.ErrMalformed) {
		t.Errorf("malformed batch: err = %v, want an abi.DecodeError", err)
	}
	he, _ := hostFaultOf(t, f, "emit-bad-origin", "emit")
	if he.Reason != "output record 0 has Origin 1000000, but the input batch has 1 records" {
		t.Errorf("bad origin: reason = %q", he.Reason)
	}
	// The limit counts what a user counts, the key, value and headers:
	// key "k1" and a value of 1022 bytes fit 1024, of 1023 do not.
	he, _ = hostFaultOf(t, f, "emit-big:1023", "emit")
	if he.Reason != "output record 0 holds 1025 bytes (key, value and headers), over the limit of 1024 bytes (limits.max_record_bytes)" {
		t.Errorf("big record: reason = %q", he.Reason)
	}
	if out := f.process("emit-big:1022"); len(out.Rejects) != 0 || len(out.Records) != 1 || len(out.Records[0].Value) != 1022 {
		t.Errorf("a record of exactly the limit: rejects %+v, %d records", out.Rejects, len(out.Records))
	}
	// 20 emits of ~550 bytes: under the record limit, over the output limit.
	he, _ = hostFaultOf(t, f, "emit-many:20:500", "emit")
	if !strings.Contains(he.Reason, "over the limit of 8192 bytes per call") {
		t.Errorf("output limit: reason = %q", he.Reason)
	}
	he, _ = hostFaultOf(t, f, "reject-bad-origin", "reject")
	if he.Reason != "origin 1000000 is not in the input batch of 1 records" {
		t.Errorf("reject origin: reason = %q", he.Reason)
	}
	// Under the limits, emit-many goes through.
	if got := len(f.process("emit-many:3:500").Records); got != 3 {
		t.Errorf("emit-many under the limits: %d records", got)
	}
}

func TestGuestLog(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	f.process("log:2:careful now", "log-many:100")
	logged := f.log.String()
	if !strings.Contains(logged, `level=WARN msg="careful now" plugin=ops.wasm kind=map export=sluice_process`) {
		t.Errorf("log lacks the warning with plugin attributes:\n%s", logged)
	}
	if n := strings.Count(logged, `msg="message `); n != maxLogsPerCall-1 {
		t.Errorf("%d messages logged, want %d", n, maxLogsPerCall-1)
	}
	if !strings.Contains(logged, `msg="plugin log messages dropped" plugin=ops.wasm kind=map export=sluice_process dropped=37`) {
		t.Errorf("log lacks the dropped-messages summary:\n%s", logged)
	}
}

func TestOutputArena(t *testing.T) {
	var o Output
	rec := func(i int) abi.Record {
		return abi.Record{
			Origin:  uint32(i),
			Key:     fmt.Appendf(nil, "key-%d", i),
			Value:   bytes.Repeat([]byte{byte(i)}, i%700),
			Headers: []abi.Header{{Name: []byte("n"), Value: fmt.Appendf(nil, "%d", i)}},
		}
	}
	check := func(n int) {
		t.Helper()
		if len(o.Records) != n {
			t.Fatalf("%d records, want %d", len(o.Records), n)
		}
		for i := range n {
			want := rec(i)
			want.Origin += 10
			got := o.Records[i]
			if got.Origin != want.Origin || !bytes.Equal(got.Key, want.Key) || !bytes.Equal(got.Value, want.Value) ||
				len(got.Headers) != 1 || !bytes.Equal(got.Headers[0].Value, want.Headers[0].Value) {
				t.Fatalf("record %d = %+v", i, got)
			}
		}
	}
	// add puts r in o as the emit host function does: the encoded batch is
	// copied into the arena whole and the record points into the copy.
	add := func(r *abi.Record, base uint32) {
		b := o.copyBytes(abi.AppendRecord(abi.AppendBatchHeader(nil, 1), r))
		var d abi.Decoder
		var x abi.Record
		if d.Reset(b) != nil || !d.Next(&x) {
			t.Fatal("cannot decode the record just encoded")
		}
		o.addAliased(&x, base)
	}
	for round := range 3 {
		o.Reset()
		for i := range 200 { // far past the first chunk: spills
			r := rec(i)
			add(&r, 10)
		}
		check(200)
		m := o.mark()
		for i := 200; i < 300; i++ {
			r := rec(i)
			add(&r, 10)
		}
		o.Rejects = append(o.Rejects, Reject{Index: 1})
		o.truncate(m)
		check(200)
		if len(o.Rejects) != 0 {
			t.Fatal("truncate kept a reject")
		}
		// Round 0 grows the arena; its truncated tail is not counted, so
		// round 1 may grow it once more; from round 2 it holds a batch.
		if round > 1 && (o.spilled != 0 || o.hspilled != 0) {
			t.Errorf("round %d: arena spilled again after Reset sized it", round)
		}
	}
	// Appending to an output slice must not overwrite its neighbour.
	_ = append(o.Records[0].Key, "XXXXXXXX"...)
	check(200)
}

func TestSingleRecordBatchRunsOnce(t *testing.T) {
	f := newFixture(t, fixtureConfig{kind: KindKeyed})
	// count-trap increments, then traps: were the record run twice, the
	// fake State would see two puts.
	out := f.process("count-trap")
	if len(out.Rejects) != 1 || out.Rejects[0].Index != 0 || !errors.Is(out.Rejects[0].Err, runtime.ErrTrap) {
		t.Fatalf("rejects = %+v", out.Rejects)
	}
	if f.st.puts != 1 || len(f.st.data[0]) != 0 {
		t.Errorf("puts = %d, state = %v; want one put, rolled back", f.st.puts, f.st.data[0])
	}
}
