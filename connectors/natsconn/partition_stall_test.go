package natsconn

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors"
)

// TestPartitionedSourceSurvivesAPoisonedName loses the source's consumer
// while the name its re-creation takes is unusable (a consumer of that
// name exists with a configuration it cannot take, as one placed on a
// lost server stays unusable until the server returns): the source reads
// on through a consumer of the next name (the ordered consumer's own
// re-creation; the watchdog waits a minute), and the records published
// after come once each.
func TestPartitionedSourceSurvivesAPoisonedName(t *testing.T) {
	readAcrossPoisonedNames(t, 1, time.Minute)
}

// TestPartitionedSourceWatchdog: as above, with so many names poisoned
// that the ordered consumer's re-creation, one name after the other, does
// not get through within the test: the source's watchdog replaces the
// stuck consumer by a new one.
func TestPartitionedSourceWatchdog(t *testing.T) {
	before, after := readAcrossPoisonedNames(t, 64, 2*time.Second)
	if before.prefix == after.prefix {
		t.Errorf("the consumer %s was followed by %s: the watchdog's new consumer was expected", before, after)
	}
}

// consumerName is an ordered consumer's name: a prefix and a serial, one
// more at each re-creation.
type consumerName struct {
	prefix string
	serial int
}

func (n consumerName) String() string { return fmt.Sprintf("%s_%d", n.prefix, n.serial) }

func parseConsumerName(t *testing.T, name string) consumerName {
	t.Helper()
	cut := strings.LastIndexByte(name, '_')
	var serial int
	if _, err := fmt.Sscan(name[cut+1:], &serial); cut < 0 || err != nil {
		t.Fatalf("consumer name %q: not <prefix>_<serial>", name)
	}
	return consumerName{name[:cut], serial}
}

// readAcrossPoisonedNames reads records, makes the next poisoned names
// of the source's ordered consumer unusable, deletes the consumer, and
// reads the records published after: each once. The source's watchdog
// waits stall. It returns the names of the consumer before and after.
func readAcrossPoisonedNames(t *testing.T, poisoned int, stall time.Duration) (before, after consumerName) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	js := partStream(t, nc, "P", "p")
	ctx := testCtx(t)
	var recs []partRecord
	for i := range 10 {
		recs = append(recs, publishGroup(t, js, "p", i%2, fmt.Sprint("a", i)))
	}
	src := newPartSource(t, nc, PartitionedSourceConfig{Stream: "P", Prefix: "p", KeyGroups: 2, PullExpiry: time.Second, StallTimeout: stall})
	if err := src.OpenGroups(ctx, map[int]uint64{0: 0, 1: 0}); err != nil {
		t.Fatal(err)
	}
	expectRecords(ctx, t, src, recs)
	before = parseConsumerName(t, src.cur.Load().cons.CachedInfo().Name)
	for i := range poisoned {
		// A durable consumer with acknowledgements, delivering from the
		// last message: the ordered consumer's update of it is refused.
		name := consumerName{before.prefix, before.serial + 1 + i}.String()
		if _, err := js.CreateConsumer(ctx, "P", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverLastPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	if err := js.DeleteConsumer(ctx, "P", before.String()); err != nil {
		t.Fatal(err)
	}
	var more []partRecord
	for i := range 10 {
		more = append(more, publishGroup(t, js, "p", i%2, fmt.Sprint("b", i)))
	}
	expectGroupSet(t, expectRecords(ctx, t, src, more), 0)
	return before, parseConsumerName(t, src.cur.Load().cons.CachedInfo().Name)
}

// TestPartitionedSourceRestartRacesRead replaces the source's consumer
// (what the watchdog does to a stuck one) again and again while another
// goroutine reads: every record comes once, in stream order.
func TestPartitionedSourceRestartRacesRead(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	js := partStream(t, nc, "P", "p")
	ctx := testCtx(t)
	const n, groups = 3000, 4
	var recs []partRecord
	for i := range n {
		recs = append(recs, publishGroup(t, js, "p", i%groups, fmt.Sprint("v", i)))
	}
	src := newPartSource(t, nc, PartitionedSourceConfig{Stream: "P", Prefix: "p", KeyGroups: groups, Batch: 64})
	floors := map[int]uint64{}
	for kg := range groups {
		floors[kg] = 0
	}
	if err := src.OpenGroups(ctx, floors); err != nil {
		t.Fatal(err)
	}
	var (
		wg      sync.WaitGroup
		got     []connectors.Message
		readErr error
		done    = make(chan struct{})
	)
	wg.Go(func() {
		defer close(done)
		buf := make([]connectors.Message, 64)
		for len(got) < n {
			k, err := src.Read(ctx, buf[:min(len(buf), n-len(got))])
			if err != nil {
				readErr = fmt.Errorf("read after %d of %d: %w", len(got), n, err)
				return
			}
			got = append(got, buf[:k]...)
		}
	})
	restarts := 0
	for {
		select {
		case <-done:
		default:
			if err := src.restart(ctx, src.cur.Load()); err != nil {
				t.Error(err)
			}
			restarts++
			continue
		}
		break
	}
	wg.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	for i, m := range got {
		w := recs[i]
		if m.Err != nil || m.Position != w.seq || m.Group != w.group || string(m.Record.Value) != w.value || m.GroupSet != 0 {
			t.Fatalf("message %d (after %d replacements): position %d group %d value %q group set %d err %v; want position %d group %d value %q group set 0",
				i, restarts, m.Position, m.Group, m.Record.Value, m.GroupSet, m.Err, w.seq, w.group, w.value)
		}
	}
	if d := src.Delivered(); d != recs[n-1].seq {
		t.Errorf("Delivered = %d after the last record, at %d", d, recs[n-1].seq)
	}
	t.Logf("%d replacements while %d records were read", restarts, n)
}
