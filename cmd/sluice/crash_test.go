package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/api"
)

const jetStreamWordCount = `
name: kill
nats:
  url: NATSURL
sources:
  - name: lines
    type: jetstream
    stream: IN
operators:
  - name: split
    plugin: PLUGINS/wordsplit.wasm
    kind: flatmap
  - name: count
    plugin: PLUGINS/wordcount.wasm
    kind: keyed
    parallelism: 2
    state: [counts]
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

// host is a sluice process started in the background.
type host struct {
	cmd  *exec.Cmd
	addr string // of the HTTP API
	logs chan string
}

func startHost(t *testing.T, dir, pipelineFile string) *host {
	t.Helper()
	return startHostWith(t, dir, pipelineFile, nil)
}

// startHostWith is startHost with the process's standard input read from
// stdin (none when nil).
func startHostWith(t *testing.T, dir, pipelineFile string, stdin io.Reader) *host {
	t.Helper()
	cmd := exec.Command(sluiceBin, "run", "-c", pipelineFile, "--log-format", "json")
	cmd.Dir = dir
	cmd.Stdin = stdin
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &host{cmd: cmd, logs: make(chan string, 1000)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "http api listening" {
				addr <- strings.TrimPrefix(l.Addr, "http://")
			}
			select {
			case h.logs <- sc.Text():
			default:
			}
		}
		close(addr)
		io.Copy(io.Discard, stderr)
	}()
	a, ok := <-addr
	if !ok {
		cmd.Wait()
		t.Fatalf("sluice exited before serving its API: %s", drain(h.logs))
	}
	h.addr = a
	return h
}

func drain(c chan string) string {
	var b strings.Builder
	for {
		select {
		case l := <-c:
			b.WriteString(l + "\n")
		default:
			return b.String()
		}
	}
}

// position returns the committed position of the source, from the API.
func (h *host) position(t *testing.T, source string) uint64 {
	t.Helper()
	st, err := (&api.Client{Addr: h.addr}).Status(context.Background())
	var ue *url.Error
	switch {
	case errors.As(err, &ue):
		return 0 // not up yet, or gone
	case err != nil:
		t.Fatal(err)
	}
	return st.Positions[source]
}

func (h *host) waitFor(t *testing.T, source string, pos uint64) {
	t.Helper()
	for h.position(t, source) < pos {
		if h.cmd.ProcessState != nil {
			t.Fatalf("sluice exited: %s", drain(h.logs))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestKillAndResumeFromJetStream kills a host with SIGKILL in the middle
// of a JetStream-fed word count, runs it again until it has read
// everything, and checks that the committed state and the output stream
// equal those of an uninterrupted run: exactly the serial word count, each
// output exactly once.
//
// With a commit interval the first host dies with batches processed and
// their outputs stored but their state and positions not committed: the
// second replays them, and the sink skips what its stream holds.
func TestKillAndResumeFromJetStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts NATS and two sluice processes")
	}
	for _, interval := range []string{"0s", "200ms"} {
		t.Run("commit_interval="+interval, func(t *testing.T) { killAndResume(t, interval) })
	}
}

func killAndResume(t *testing.T, interval string) {
	dir := t.TempDir()
	url, js := startJetStream(t, dir, "in.lines")
	lines := testLines(20000)
	for _, l := range lines {
		// A long stall wait: on a busy machine the acknowledgements of
		// 4,000 messages in flight may take longer than the default 200 ms.
		if _, err := js.PublishAsync("in.lines", []byte(l), jetstream.WithStallWait(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("publishing the input did not complete")
	}

	p := writePipeline(t, dir, strings.Replace(jetStreamWordCount, "NATSURL", url, 1)+"state:\n  commit_interval: "+interval+"\n")
	first := startHost(t, dir, p)
	first.waitFor(t, "lines", 2000)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()
	t.Logf("killed the first host; it had read at least 2000 of %d lines", len(lines))

	second := startHost(t, dir, p)
	second.waitFor(t, "lines", uint64(len(lines)))
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("second host after SIGTERM: %v: %s", err, drain(second.logs))
	}

	want := wordCounts(lines)
	if got := dumpState(t, filepath.Join(dir, ".sluice", "kill"), "counts"); !maps.Equal(got, want) {
		t.Errorf("state after kill and resume differs from the serial count:\n got %v\nwant %v", got, want)
	}

	// The output an uninterrupted run writes: for line number i (its stream
	// sequence), the n-th word w gets the running count of w.
	expected := map[string]string{}
	running := map[string]int{}
	for i, l := range lines {
		for n, w := range strings.Fields(strings.ToLower(l)) {
			running[w]++
			expected[fmt.Sprintf("kill/lines/%d/%d", i+1, n)] = w + "=" + strconv.Itoa(running[w])
		}
	}
	msgs := outputMessages(t, js, "OUT")
	if len(msgs) != len(expected) {
		t.Errorf("output stream holds %d messages, want %d (one per word, each once)", len(msgs), len(expected))
	}
	for _, m := range msgs {
		id := m.Header.Get("Nats-Msg-Id")
		got := m.Header.Get("Sluice-Key") + "=" + string(m.Data)
		if expected[id] != got {
			t.Fatalf("output %s = %q, want %q", id, got, expected[id])
		}
	}
	if t.Failed() {
		return
	}
	_ = os.Remove(p)
}

// outputMessages returns every message of stream, in order, and fails the
// test when two carry the same Nats-Msg-Id (an output written twice).
func outputMessages(t *testing.T, js jetstream.JetStream, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	out, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := out.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*jetstream.RawStreamMsg
	seen := map[string]bool{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := out.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("%s: output %d: %v", stream, seq, err)
		}
		id := m.Header.Get("Nats-Msg-Id")
		if seen[id] {
			t.Fatalf("%s: output id %s appears twice", stream, id)
		}
		seen[id] = true
		msgs = append(msgs, m)
	}
	return msgs
}

// startJetStream starts an embedded NATS server with JetStream under dir,
// stopped when the test ends, with a stream IN of subject, and returns its
// URL and a JetStream client.
func startJetStream(t *testing.T, dir, subject string) (string, jetstream.JetStream) {
	t.Helper()
	ctx := context.Background()
	srv, err := natsconn.StartEmbedded(ctx, natsconn.Options{Dir: filepath.Join(dir, "nats"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(ctx) })
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "IN", Subjects: []string{subject}}); err != nil {
		t.Fatal(err)
	}
	return srv.ClientURL(), js
}
