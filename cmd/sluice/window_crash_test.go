package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors/natsconn"
)

const jetStreamWindowedCount = `
name: kill
nats:
  url: NATSURL
sources:
  - name: clicks
    type: jetstream
    stream: IN
operators:
  - name: per-second
    kind: aggregate
    function: count
    parallelism: 2
    window: {type: tumbling, size: 1s}
sinks:
  - name: out
    type: jetstream
    subject: out.counts
    stream: OUT
    create: true
batch:
  size: 50
http:
  addr: 127.0.0.1:0
`

// TestKillWindowedCountFromJetStream kills a host with SIGKILL in the
// middle of a windowed count fed by JetStream and runs it again: every
// window the watermark closed fires once, with the count of an
// uninterrupted run, and the output stream holds each result once.
func TestKillWindowedCountFromJetStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts NATS and two sluice processes")
	}
	dir := t.TempDir()
	url, js := startJetStream(t, dir, "in.clicks")
	// 20,000 clicks of 50 keys, 10 ms apart in event time: 100 a window.
	const n, keys = 20000, 50
	base := int64(1_700_000_000) * int64(time.Second)
	want := map[string]int{}
	var last int64
	for i := range n {
		ts := base + int64(i)*int64(10*time.Millisecond)
		key := "k" + strconv.Itoa(i%keys)
		m := nats.NewMsg("in.clicks")
		m.Header.Set(natsconn.HeaderKey, key)
		m.Header.Set(natsconn.HeaderTime, strconv.FormatInt(ts, 10))
		m.Data = []byte("click")
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil { // a busy machine acknowledges slowly
			t.Fatal(err)
		}
		start := ts - ts%int64(time.Second)
		want[fmt.Sprintf("%s %d %d", key, start, start+int64(time.Second))]++
		last = ts
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("publishing the input did not complete")
	}
	// The watermark after the last click is last - 1: the window holding
	// it stays open; every other one fires.
	lastStart := last - last%int64(time.Second)
	for k := range want {
		if strings.Contains(k, " "+strconv.FormatInt(lastStart, 10)+" ") {
			delete(want, k)
		}
	}

	p := writePipeline(t, dir, strings.Replace(jetStreamWindowedCount, "NATSURL", url, 1))
	first := startHost(t, dir, p)
	first.waitFor(t, "clicks", 5000)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()
	second := startHost(t, dir, p)
	second.waitFor(t, "clicks", n)
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("second host after SIGTERM: %v: %s", err, drain(second.logs))
	}

	got := map[string]int{}
	for _, m := range outputMessages(t, js, "OUT") {
		id := m.Header.Get("Nats-Msg-Id")
		var v struct {
			Key        string
			Start, End int64
			Count      int
		}
		if err := json.Unmarshal(m.Data, &v); err != nil {
			t.Fatalf("output %s: %q: %v", id, m.Data, err)
		}
		k := fmt.Sprintf("%s %d %d", v.Key, v.Start, v.End)
		if _, ok := got[k]; ok {
			t.Fatalf("window %s fired twice", k)
		}
		got[k] = v.Count
	}
	if len(got) != len(want) {
		t.Errorf("%d windows fired, want %d", len(got), len(want))
	}
	for k, c := range want {
		if got[k] != c {
			t.Errorf("window %s: count %d, want %d", k, got[k], c)
		}
	}
}

const fileWindowJoin = `
name: joinkill
sources:
  - {name: orders, type: file, path: orders.json, format: json, key_field: id, time_field: ts, watermark: {out_of_orderness: 1s}}
  - {name: payments, type: file, path: payments.json, format: json, key_field: id, time_field: ts, watermark: {out_of_orderness: 1s}}
operators:
  - name: paid
    kind: join
    inputs: [orders, payments]
    parallelism: 2
    JOIN
sinks:
  - {name: out, type: file, path: out.jsonl, format: json}
batch:
  size: 20
http:
  addr: 127.0.0.1:0
`

// TestKillWindowJoinFromFiles kills a host with SIGKILL in the middle of a
// join of two files and runs it again: the output file holds the results
// of an uninterrupted run, each once. Sliding windows with a lazy and an
// eager algorithm, session windows, and an interval join.
func TestKillWindowJoinFromFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts twelve sluice processes")
	}
	var orders, payments bytes.Buffer
	base := int64(1_700_000_000_000) // ms
	for i := range 6000 {
		fmt.Fprintf(&orders, `{"id":"o%d","ts":%d}`+"\n", i%500, base+int64(i)*5)
		if i%3 != 0 {
			fmt.Fprintf(&payments, `{"id":"o%d","ts":%d}`+"\n", i%500, base+int64(i)*5+int64(i%7)*100)
		}
	}
	files := map[string][]byte{"orders.json": orders.Bytes(), "payments.json": payments.Bytes()}
	run := func(join string, kill bool) []string {
		return runFilePipeline(t, files, strings.Replace(fileWindowJoin, "JOIN", join, 1), "orders", 1000, kill)
	}
	for _, join := range []string{
		"join: {type: full, algorithm: npj}\n    window: {type: sliding, size: 4s, slide: 2s}",
		"join: {type: full, algorithm: shj-jm}\n    window: {type: sliding, size: 4s, slide: 2s}",
		"join: {type: left}\n    window: {type: session, gap: 1s}",
		"join: {interval: {lower: -1s, upper: 1s}}",
	} {
		clean, killed := run(join, false), run(join, true)
		if len(clean) < 1000 {
			t.Fatalf("%s: the clean run joined only %d results", join, len(clean))
		}
		if !slices.Equal(clean, killed) {
			t.Errorf("%s: after kill -9 and a restart, %d results; an uninterrupted run gives %d (or different ones)", join, len(killed), len(clean))
		}
	}
}

const fileWindowedCount = `
name: countkill
sources:
  - {name: clicks, type: file, path: clicks.json, format: json, key_field: user, time_field: ts}
operators:
  - name: counts
    kind: aggregate
    function: count
    parallelism: 2
    window: WINDOW
sinks:
  - {name: out, type: file, path: out.jsonl, format: json}
batch:
  size: 20
http:
  addr: 127.0.0.1:0
`

// TestKillWindowedCountFromFile kills a host with SIGKILL in the middle of
// a windowed count of a file, tumbling and sliding, and runs it again: the
// output file holds the results of an uninterrupted run, each once, and
// the counts add up to the input (each click in each of its windows once).
func TestKillWindowedCountFromFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four sluice processes")
	}
	var clicks bytes.Buffer
	const n = 20_000
	base := int64(1_700_000_000_000) // ms
	for i := range n {
		fmt.Fprintf(&clicks, `{"user":"u%d","ts":%d}`+"\n", i%50, base+int64(i)*10)
	}
	files := map[string][]byte{"clicks.json": clicks.Bytes()}
	run := func(window string, kill bool) []string {
		return runFilePipeline(t, files, strings.Replace(fileWindowedCount, "WINDOW", window, 1), "clicks", n/5, kill)
	}
	for _, c := range []struct {
		window string
		each   int // windows each click is in
	}{
		{"{type: tumbling, size: 1s}", 1},
		{"{type: sliding, size: 4s, slide: 1s}", 4},
	} {
		clean, killed := run(c.window, false), run(c.window, true)
		total := 0
		for _, l := range clean {
			var r struct{ Count int }
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			total += r.Count
		}
		if total != c.each*n {
			t.Errorf("%s: the clean run counted %d, want %d", c.window, total, c.each*n)
		}
		if !slices.Equal(clean, killed) {
			t.Errorf("%s: after kill -9 and a restart, %d results; an uninterrupted run gives %d (or different ones)", c.window, len(killed), len(clean))
		}
	}
}

const jetStreamWindowJoin = `
name: NAME
nats:
  url: NATSURL
sources:
  - {name: orders, type: jetstream, stream: IN, watermark: {out_of_orderness: 1s}}
  - {name: payments, type: jetstream, stream: PAY, watermark: {out_of_orderness: 1s}}
operators:
  - name: paid
    kind: join
    inputs: [orders, payments]
    parallelism: 2
    join: {type: full, algorithm: ALGO}
    window: {type: sliding, size: 4s, slide: 2s}
sinks:
  - {name: out, type: jetstream, subject: out.NAME, stream: OUTNAME, create: true}
batch:
  size: 20
http:
  addr: 127.0.0.1:0
`

// TestKillWindowJoinFromJetStream runs a window join of two JetStream
// streams twice over the same input, once uninterrupted and once killed
// with SIGKILL and run again, each stopped with SIGTERM once it has read
// everything: the killed run's output stream holds the same results as the
// uninterrupted run's, each once (a lazy and an eager algorithm).
func TestKillWindowJoinFromJetStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts NATS and three sluice processes")
	}
	ctx := context.Background()
	dir := t.TempDir()
	url, js := startJetStream(t, dir, "in.orders")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PAY", Subjects: []string{"in.payments"}}); err != nil {
		t.Fatal(err)
	}
	const n = 6000
	base := int64(1_700_000_000) * int64(time.Second)
	publish := func(subject, key string, ts int64) {
		m := nats.NewMsg(subject)
		m.Header.Set(natsconn.HeaderKey, key)
		m.Header.Set(natsconn.HeaderTime, strconv.FormatInt(ts, 10))
		m.Data = []byte(`{"id":"` + key + `"}`)
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	payments := 0
	for i := range n {
		ts := base + int64(i)*int64(5*time.Millisecond)
		key := "o" + strconv.Itoa(i%500)
		publish("in.orders", key, ts)
		if i%3 != 0 {
			publish("in.payments", key, ts+int64(i%7)*int64(100*time.Millisecond))
			payments++
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("publishing the input did not complete")
	}
	run := func(name, algo string, kill bool) []string {
		p := writePipeline(t, dir, strings.NewReplacer("NATSURL", url, "NAME", name, "ALGO", algo).Replace(jetStreamWindowJoin))
		if kill {
			h := startHost(t, dir, p)
			h.waitFor(t, "orders", n/5)
			if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			h.cmd.Wait()
		}
		h := startHost(t, dir, p)
		h.waitFor(t, "orders", n)
		h.waitFor(t, "payments", uint64(payments))
		if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("%s after SIGTERM: %v: %s", name, err, drain(h.logs))
		}
		var results []string
		for _, m := range outputMessages(t, js, "OUT"+name) {
			results = append(results, string(m.Data))
		}
		slices.Sort(results)
		return results
	}
	// Windows still open at the stop have emitted what the algorithm
	// emits before a window closes (an eager one, its matches so far; a
	// lazy one, nothing), so each run forces one: auto may choose either.
	for _, algo := range []string{"npj", "shj-jm"} {
		clean, killed := run("clean"+algo, algo, false), run("killed"+algo, algo, true)
		if len(clean) < 1000 {
			t.Fatalf("%s: the uninterrupted run joined only %d results", algo, len(clean))
		}
		if !slices.Equal(clean, killed) {
			t.Errorf("%s: after kill -9 and a restart, %d results; an uninterrupted run gives %d (or different ones)", algo, len(killed), len(clean))
		}
	}
}

// runFilePipeline writes files and the pipeline yaml to a new directory
// and runs it to the end of its files, and returns the lines of its output
// file out.jsonl, sorted. With kill, a first host is killed with SIGKILL
// once source's committed position reaches at, before the run to the end.
func runFilePipeline(t *testing.T, files map[string][]byte, yaml, source string, at uint64, kill bool) []string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := writePipeline(t, dir, yaml)
	if kill {
		h := startHost(t, dir, p)
		h.waitFor(t, source, at)
		if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		h.cmd.Wait()
	}
	h := startHost(t, dir, p)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("sluice run: %v: %s", err, drain(h.logs))
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	return lines
}
