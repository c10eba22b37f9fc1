package runner

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// oncePipeline counts words from a file into a JetStream sink. %s adds
// sinks: a file sink on /dev/full fails its flush, after the JetStream
// sink has published the batch and before the commit, as a crash would.
const oncePipeline = `
name: once
nats: {url: %s}
http: {addr: "off"}
batch: {size: 4}
sources:
  - {name: lines, type: file, path: in.txt, format: lines}
operators:
  - {name: split, plugin: wordsplit.wasm, kind: flatmap}
  - {name: count, plugin: wordcount.wasm, kind: keyed, parallelism: 2, state: [counts]}
sinks:
  - {name: out, type: jetstream, subject: out, stream: OUT}
%s`

// TestJetStreamSinkExactlyOnceAfterTheDuplicateWindow crashes a host
// after its JetStream sink published a batch that was never committed,
// in the pipeline's first batch and in a later one, and restarts it only
// after the sink stream's duplicate window has passed: the stream must
// hold each output once, and the committed state must be a clean run's.
func TestJetStreamSinkExactlyOnceAfterTheDuplicateWindow(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("needs /dev/full to fail a sink's flush")
	}
	ctx := context.Background()
	dir := t.TempDir()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"wordsplit": "../../plugins/wordsplit", "wordcount": "../../plugins/wordcount"})
	if err != nil {
		t.Fatal(err)
	}
	for name, code := range mods {
		if err := os.WriteFile(filepath.Join(dir, name+".wasm"), code, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := natsconn.StartEmbedded(ctx, natsconn.Options{Dir: filepath.Join(dir, "nats"), Port: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(ctx)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	out, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "OUT", Subjects: []string{"out", "probe"}, Duplicates: 100 * time.Millisecond, // the least JetStream allows
	})
	if err != nil {
		t.Fatal(err)
	}

	clean := filepath.Join(dir, "clean.yaml")
	writeFile(t, clean, fmt.Sprintf(oncePipeline, srv.ClientURL(), ""))
	crashing := filepath.Join(dir, "crash.yaml")
	writeFile(t, crashing, fmt.Sprintf(oncePipeline, srv.ClientURL(), "  - {name: boom, type: file, path: /dev/full}\n"))
	data := filepath.Join(dir, "data")
	run := func(file string) error {
		t.Helper()
		p, err := pipeline.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Start(ctx, p, Options{DataDir: data, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return h.Run(ctx)
	}
	crash := func() {
		t.Helper()
		before := len(outputIDs(t, out))
		if err := run(crashing); err == nil || !strings.Contains(err.Error(), `sink "boom"`) {
			t.Fatalf("the crashing run ended with %v, want the boom sink's failure", err)
		}
		if len(outputIDs(t, out)) == before {
			t.Fatal("the crashing run published nothing before it failed")
		}
		waitPastDuplicateWindow(t, js)
	}

	lines := []string{
		"alpha beta", "beta gamma delta", "alpha", "gamma gamma",
		"delta alpha beta", "beta", "epsilon alpha", "gamma delta",
		"alpha alpha beta", "zeta", "beta gamma", "delta epsilon",
		"alpha", "beta beta", "gamma", "zeta alpha",
	}
	input := filepath.Join(dir, "in.txt")
	writeFile(t, input, strings.Join(lines[:8], "\n")+"\n")
	crash() // in the pipeline's first batch: nothing committed yet
	if err := run(clean); err != nil {
		t.Fatal(err)
	}
	writeFile(t, input, strings.Join(lines, "\n")+"\n")
	crash() // in a later batch
	if err := run(clean); err != nil {
		t.Fatal(err)
	}

	// What an uninterrupted run stores: for line i, the n-th word w
	// with the running count of w as its value.
	want := map[string]string{}
	counts := map[string]int{}
	for i, l := range lines {
		for n, w := range strings.Fields(l) {
			counts[w]++
			want[fmt.Sprintf("once/lines/%d/%d", i+1, n)] = w + "=" + strconv.Itoa(counts[w])
		}
	}
	got := outputIDs(t, out)
	stored := map[string]string{}
	for _, o := range got {
		if prev, dup := stored[o.id]; dup {
			t.Errorf("output %s stored twice: %s and %s", o.id, prev, o.value)
		}
		stored[o.id] = o.value
	}
	if !maps.Equal(stored, want) {
		t.Errorf("the stream holds %d outputs %v\nwant the %d of a clean run %v", len(got), stored, len(want), want)
	}
	s := openStore(t, filepath.Join(data, "state"))
	defer s.Close()
	wantCounts := map[string]string{}
	for w, n := range counts {
		wantCounts[w] = strconv.Itoa(n)
	}
	if state := scan(t, s, "counts"); !maps.Equal(state, wantCounts) {
		t.Errorf("committed counts %v, want %v", state, wantCounts)
	}
}

// output is a message of the sink's subject: its id and "key=value".
type output struct{ id, value string }

// outputIDs returns the messages on subject "out" of st, in order.
func outputIDs(t *testing.T, st jetstream.Stream) []output {
	t.Helper()
	ctx := context.Background()
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var outs []output
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		if m.Subject == "out" {
			outs = append(outs, output{m.Header.Get(jetstream.MsgIDHeader), m.Header.Get("Sluice-Key") + "=" + string(m.Data)})
		}
	}
	return outs
}

// waitPastDuplicateWindow returns once the stream capturing "probe" has
// forgotten every Nats-Msg-Id it stored before the call: it stores a probe
// id and publishes it again until the stream no longer takes it for a
// duplicate. A stream forgets ids oldest first.
func waitPastDuplicateWindow(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := fmt.Sprint("probe-", time.Now().UnixNano())
	for first := true; ; first = false {
		ack, err := js.Publish(ctx, "probe", nil, jetstream.WithMsgID(id))
		if err != nil {
			t.Fatalf("waiting for the duplicate window to pass: %v", err)
		}
		if !first && !ack.Duplicate {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
