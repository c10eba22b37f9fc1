package window_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/window"
	"github.com/sluicehq/sluice/state"
)

// A per-key count over tumbling windows of a minute, with the built-in
// count: records are added in a batch, and the windows fire when the
// watermark passes their end.
func Example() {
	dir, _ := os.MkdirTemp("", "sluice-window-example-")
	defer os.RemoveAll(dir)
	store, err := state.Open(dir, state.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	count, _ := window.Builtin("count", "")
	op, err := window.New(window.Spec{Assigner: window.Tumbling, Size: time.Minute}, count, store.Table("clicks-per-minute"))
	if err != nil {
		fmt.Println(err)
		return
	}
	sess := store.NewSession()
	ctx := context.Background()
	at := func(s string) int64 { t, _ := time.Parse(time.DateTime, "2026-12-01 "+s); return t.UnixNano() }

	recs := []abi.Record{
		{Key: []byte("ann"), Time: at("10:00:05")},
		{Key: []byte("bob"), Time: at("10:00:30")},
		{Key: []byte("ann"), Time: at("10:00:59")},
		{Key: []byte("ann"), Time: at("10:01:10")},
	}
	late, _ := op.Add(ctx, sess, recs, window.MinWatermark, 0)
	fmt.Println("late:", len(late))

	groups := make([]int, store.KeyGroups())
	for i := range groups {
		groups[i] = i
	}
	_ = op.Advance(ctx, sess, groups, at("10:01:30"), 0, func(r window.Result) {
		fmt.Printf("%s %s %s\n", r.Key, r.Firing, time.Unix(0, r.Record.Time).UTC().Format(time.TimeOnly+".999"))
	})
	// Output:
	// late: 0
	// ann on-time 10:00:59.999
	// bob on-time 10:00:59.999
}
