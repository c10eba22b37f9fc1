package natstest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
)

// waitLimit bounds each wait for the cluster: generous, a hang still
// fails the test.
const waitLimit = time.Minute

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// jetStream connects to every member of c and returns the JetStream
// client; the connection closes with the test.
func jetStream(t testing.TB, urls string) jetstream.JetStream {
	t.Helper()
	nc, err := natsconn.Connect(testCtx(t), urls, t.Name(), natsconn.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// retry calls f, with a bounded context, until it succeeds, failing the
// test after waitLimit with f's last error.
func retry(t testing.TB, what string, f func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := f(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, waitLimit, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// streamLeader waits until stream has a leader other than not, and
// returns its server name.
func streamLeader(t testing.TB, js jetstream.JetStream, stream, not string) string {
	t.Helper()
	var leader string
	retry(t, "leader of stream "+stream, func(ctx context.Context) error {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		info := s.CachedInfo()
		if info.Cluster == nil || info.Cluster.Leader == "" || info.Cluster.Leader == not {
			return fmt.Errorf("leader %+v, want one other than %q", info.Cluster, not)
		}
		leader = info.Cluster.Leader
		return nil
	})
	return leader
}

// publish publishes messages from to to-1 on s.<i>, each with a message
// id, until each is acknowledged, and checks that message i is stored at
// sequence i+1.
func publish(t testing.TB, js jetstream.JetStream, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		retry(t, fmt.Sprintf("publish %d", i), func(ctx context.Context) error {
			ack, err := js.Publish(ctx, "s."+strconv.Itoa(i), []byte(strconv.Itoa(i)), jetstream.WithMsgID("m"+strconv.Itoa(i)))
			if err != nil {
				return err
			}
			if ack.Sequence != uint64(i+1) {
				t.Fatalf("message %d stored at sequence %d, want %d", i, ack.Sequence, i+1)
			}
			return nil
		})
	}
}

// stored waits until member i's own copy of stream holds msgs messages,
// the last at sequence last.
func stored(t testing.TB, c *natstest.Cluster, i int, stream string, msgs, last uint64) {
	t.Helper()
	retry(t, fmt.Sprintf("%s's copy of %s", c.Name(i), stream), func(context.Context) error {
		jsz, err := c.Server(i).Server().Jsz(&server.JSzOptions{Accounts: true, Streams: true})
		if err != nil {
			return err
		}
		for _, acc := range jsz.AccountDetails {
			for _, sd := range acc.Streams {
				if sd.Name == stream {
					if sd.State.Msgs != msgs || sd.State.LastSeq != last {
						return fmt.Errorf("%d messages, last sequence %d; want %d, %d", sd.State.Msgs, sd.State.LastSeq, msgs, last)
					}
					return nil
				}
			}
		}
		return errors.New("no copy")
	})
}

func TestStartServer(t *testing.T) {
	e := natstest.StartServer(t)
	js := jetStream(t, e.ClientURL())
	ctx := testCtx(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, 0, 3)
}

// A replicated stream keeps taking and serving messages when its leader's
// server stops, and the server, started again, catches up.
func TestClusterStreamSurvivesAMemberStopped(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	if got := strings.Count(c.URLs(), ",") + 1; got != 3 {
		t.Fatalf("URLs() = %q, want 3", c.URLs())
	}
	js := jetStream(t, c.URLs())
	stopped := loseStreamLeader(t, c, js, c.Stop)
	c.Restart(stopped)
	stored(t, c, stopped, "S", 40, 40)
}

// loseStreamLeader creates stream S with 3 replicas on c, publishes 20
// messages, stops the stream leader's member with stop, publishes 20
// more, reads all 40 back, and returns the stopped member.
func loseStreamLeader(t testing.TB, c *natstest.Cluster, js jetstream.JetStream, stop func(i int)) int {
	t.Helper()
	if _, err := js.CreateStream(testCtx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, 0, 20)
	leader := streamLeader(t, js, "S", "")
	stopped := c.Index(leader)
	if stopped < 0 {
		t.Fatalf("stream leader %q is not a member", leader)
	}
	stop(stopped)
	streamLeader(t, js, "S", leader)
	publish(t, js, 20, 40)
	readAll(t, js, "S", 40)
	return stopped
}

// readAll reads sequences 1 to n of stream and checks that sequence i
// holds the message published as i-1.
func readAll(t testing.TB, js jetstream.JetStream, stream string, n uint64) {
	t.Helper()
	for seq := uint64(1); seq <= n; seq++ {
		retry(t, fmt.Sprintf("read sequence %d", seq), func(ctx context.Context) error {
			s, err := js.Stream(ctx, "S")
			if err != nil {
				return err
			}
			msg, err := s.GetMsg(ctx, seq)
			if err != nil {
				return err
			}
			if want := strconv.FormatUint(seq-1, 10); string(msg.Data) != want {
				t.Fatalf("sequence %d holds %q, want %q", seq, msg.Data, want)
			}
			return nil
		})
	}
}

// A replicated stream keeps taking and serving messages when its leader's
// server process is killed with SIGKILL, and the server, started again on
// its directory, catches up: every replica current, nothing lost.
func TestClusterProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS server processes")
	}
	c := natstest.StartClusterProcesses(t, 3)
	if c.Server(0) != nil {
		t.Error("Server(0) of a member run as a process is not nil")
	}
	js := jetStream(t, c.URLs())
	killed := loseStreamLeader(t, c, js, c.Kill)
	c.Restart(killed)
	retry(t, "every replica of S current", func(ctx context.Context) error {
		s, err := js.Stream(ctx, "S")
		if err != nil {
			return err
		}
		info := s.CachedInfo()
		if info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			return fmt.Errorf("cluster %+v, want a leader and 2 replicas", info.Cluster)
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline || r.Lag != 0 {
				return fmt.Errorf("replica %s: current %v, offline %v, lag %d", r.Name, r.Current, r.Offline, r.Lag)
			}
		}
		if info.State.Msgs != 40 || info.State.LastSeq != 40 {
			return fmt.Errorf("%d messages, last sequence %d; want 40, 40", info.State.Msgs, info.State.LastSeq)
		}
		return nil
	})
	// With another member stopped, the stream's quorum needs the
	// restarted one: it still answers, with every message.
	c.Stop((killed + 1) % 3)
	streamLeader(t, js, "S", "")
	readAll(t, js, "S", 40)
}

// A key-value bucket with 3 replicas keeps taking compare-and-set updates
// when its leader's server stops, and the server, started again, catches
// up.
func TestClusterKeyValueSurvivesAMemberStopped(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	js := jetStream(t, c.URLs())
	ctx := testCtx(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "B", Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	// A bucket with replicas answers reads from any of them (direct gets),
	// and one that lags answers with an older entry (seen: "4" at revision
	// 5 read after "5" was written at 6). Reads are made to go to the
	// leader, as host/cluster makes its buckets' reads go.
	s, err := js.Stream(ctx, "KV_B")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowDirect = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "B")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Create(ctx, "k", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	leader := streamLeader(t, js, "KV_B", "")
	stopped := c.Index(leader)
	c.Stop(stopped)
	streamLeader(t, js, "KV_B", leader)

	for v := 1; v <= 5; v++ {
		val := strconv.Itoa(v)
		retry(t, "update to "+val, func(ctx context.Context) error {
			r, err := kv.Update(ctx, "k", []byte(val), rev)
			if err == nil {
				rev = r
				return nil
			}
			// An update whose answer was lost is in place: the next
			// attempt fails its compare-and-set.
			e, gerr := kv.Get(ctx, "k")
			if gerr == nil && string(e.Value()) == val {
				rev = e.Revision()
				return nil
			}
			return err
		})
	}
	// A stale revision is refused. A replicated stream reports it with
	// another code (10164) than a single server's 10071, which only
	// ErrKeyRevisionMismatch matches whichever answers.
	if _, err := kv.Update(ctx, "k", []byte("stale"), rev-1); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		t.Fatalf("update at a stale revision: %v, want %v", err, jetstream.ErrKeyRevisionMismatch)
	}
	e, err := kv.Get(ctx, "k")
	if err != nil || string(e.Value()) != "5" || e.Revision() != rev {
		t.Fatalf("get = %v, %v; want 5 at revision %d", e, err, rev)
	}

	c.Restart(stopped)
	stored(t, c, stopped, "KV_B", 1, rev) // one key, its last revision
}
