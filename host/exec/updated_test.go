package exec

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/plugin"
)

// TestUpdatedFollowsTheStatus: a channel from Updated is closed once a
// batch is committed, and the status names each operator's and sink's
// inputs and counts every batch's duration in batch_seconds.
func TestUpdatedFollowsTheStatus(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	src := &sliceSource{recs: records("a", "b", "c", "d", "e", "f"), chunk: 2, block: true}
	r := newRun(t, store, src, 2, Operator{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 1})
	st := r.job.Status()
	if got := st.Operators[0].Inputs; !slices.Equal(got, []string{"in"}) {
		t.Errorf("operator inputs %q, want [in]", got)
	}
	if len(st.Sinks) != 1 || st.Sinks[0].Name != "out" || !slices.Equal(st.Sinks[0].Inputs, []string{"up"}) {
		t.Errorf("sinks %+v, want out reading up", st.Sinks)
	}
	if b := st.BatchSeconds; len(b.Bounds) == 0 || len(b.Counts) != len(b.Bounds)+1 {
		t.Fatalf("batch_seconds has %d bounds and %d counts, want one count more than bounds", len(b.Bounds), len(b.Counts))
	}
	updated := r.job.Updated()
	if r.job.Updated() != updated {
		t.Error("two calls to Updated before a change gave two channels")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.job.Run(ctx) }()
	// Follow the job as the API's event stream does: ask for the channel,
	// then read the status, then wait, so that no change falls between.
	deadline := time.After(time.Minute)
	for r.job.Status().RecordsIn != 6 {
		select {
		case <-updated:
		case <-deadline:
			cancel()
			<-done
			t.Fatal("Updated's channel was not closed within a minute of the job running")
		}
		updated = r.job.Updated()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st = r.job.Status()
	var n uint64
	for _, c := range st.BatchSeconds.Counts {
		n += c
	}
	if n != st.Batches || n == 0 {
		t.Errorf("batch_seconds counts %d batches, the status %d", n, st.Batches)
	}
	select {
	case <-updated:
	default:
		t.Error("stopping did not close Updated's channel")
	}
}
