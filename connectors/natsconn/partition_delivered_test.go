package natsconn

import (
	"testing"
)

// TestPartitionedSourceDelivered checks the position a host commits for a
// partitioned source: the lowest floor before anything is read, then the
// sequence of the last message taken, and the lowest floor again after
// SetGroups.
func TestPartitionedSourceDelivered(t *testing.T) {
	ctx := testCtx(t)
	nc := connect(t, startServer(t).ClientURL())
	js := partStream(t, nc, "DELIVERED", "d")
	var recs []partRecord
	for i := range 6 {
		recs = append(recs, publishGroup(t, js, "d", i%3, "v"))
	}
	src := newPartSource(t, nc, PartitionedSourceConfig{Stream: "DELIVERED", Prefix: "d", KeyGroups: 4, MaxFilters: 4})
	if err := src.OpenGroups(ctx, map[int]uint64{1: 1, 2: 2}); err != nil {
		t.Fatal(err)
	}
	if got := src.Delivered(); got != 1 {
		t.Errorf("Delivered before a read = %d, want the lowest floor 1", got)
	}
	want := above(recs, map[int]uint64{1: 1, 2: 2})
	expectRecords(ctx, t, src, want)
	if got, last := src.Delivered(), want[len(want)-1].seq; got != last {
		t.Errorf("Delivered after reading every record = %d, want %d", got, last)
	}
	if err := src.SetGroups(ctx, map[int]uint64{0: 3, 1: 6}); err != nil {
		t.Fatal(err)
	}
	if got := src.Delivered(); got != 3 {
		t.Errorf("Delivered after SetGroups = %d, want the new lowest floor 3", got)
	}
}
