package migrate_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
	"github.com/sluicehq/sluice/state"
)

// migrationOver returns a condition that holds once no migration is in
// progress.
func migrationOver(ctx context.Context, h *host) func() bool {
	return func() bool {
		tbl, err := h.mig.Cluster.Assignment(ctx)
		return err == nil && tbl.Migration == nil
	}
}

// TestMigrationWithReplicationLosesNothing moves half the key groups from
// host a to host b in steps of two, with every group (Replicate 1) or
// every other one (Replicate 2) replicated at b ahead of its move, while
// records arrive and both hosts checkpoint on a short period; then the
// rest at once. Every record is counted once, in its key's order.
func TestMigrationWithReplicationLosesNothing(t *testing.T) {
	for _, replicate := range []int{1, 2} {
		t.Run(fmt.Sprintf("replicate=%d", replicate), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			nc, js, in := setup(t, ctx)
			out := &outputs{byID: map[string]abi.Record{}}
			opts := hostOpts{checkpoint: 20 * time.Millisecond}
			a := startHost(t, ctx, nc, js, "a", out, true, opts)
			b := startHost(t, ctx, nc, js, "b", out, false, opts)

			keys := make([]string, 600)
			for i := range keys {
				keys[i] = "k" + strconv.Itoa(i*7%23)
			}
			publish(t, ctx, in, keys[:200], 0)
			waitFor(t, func() bool { return out.len() >= 100 })
			half := cluster.Spread(groups, []string{"a", "b"})
			knobs := cluster.Knobs{Order: cluster.OrderKeyGroup, Batch: 2, Replicate: replicate}
			if _, err := migrate.Start(ctx, a.mig.Cluster, "half", half, knobs, nil); err != nil {
				t.Fatal(err)
			}
			publish(t, ctx, in, keys[200:300], 200) // while groups move
			waitFor(t, migrationOver(ctx, a))
			publish(t, ctx, in, keys[300:400], 300)
			rest := cluster.Knobs{Order: cluster.OrderKeyGroup, Replicate: replicate}
			if _, err := migrate.Start(ctx, b.mig.Cluster, "rest", slices.Repeat([]string{"b"}, groups), rest, nil); err != nil {
				t.Fatal(err)
			}
			publish(t, ctx, in, keys[400:500], 400) // while groups move
			waitFor(t, migrationOver(ctx, a))
			publish(t, ctx, in, keys[500:], 500)
			waitFor(t, func() bool { return out.len() >= len(keys) })
			checkCounts(t, out, keys)
			if got := b.job.Groups(); len(got) != groups {
				t.Errorf("host b owns %v, want every group", got)
			}
			if mv := b.mig.Moved(); mv.Installed != groups {
				t.Errorf("host b installed %d groups, want %d: %+v", mv.Installed, groups, mv)
			}
		})
	}
}

// TestReplicationCutsBytesAtTheMove moves every key group from host a to
// host b, after a checkpointed them and with no record arriving, with
// none, half and all of the groups replicated at b. The source hands
// over floors only (every group's state is in the bucket already); the
// destination fetches, at the installs, exactly the checkpoints of the
// groups not replicated, and the replicated ones ahead of the moves, so
// the bytes fetched at the moves fall in proportion to the replicated
// share. Then records arrive again and every one is counted once.
func TestReplicationCutsBytesAtTheMove(t *testing.T) {
	// Keys that cover every key group, so that each has a checkpoint.
	var keys []string
	covered := map[int]bool{}
	for i := 0; len(covered) < groups; i++ {
		k := "k" + strconv.Itoa(i)
		covered[state.KeyGroup([]byte(k), groups)] = true
		keys = append(keys, k, k, k)
	}
	fetched := map[int]int64{}
	for _, replicate := range []int{0, 2, 1} {
		t.Run(fmt.Sprintf("replicate=%d", replicate), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			nc, js, in := setup(t, ctx)
			out := &outputs{byID: map[string]abi.Record{}}
			a := startHost(t, ctx, nc, js, "a", out, true, hostOpts{})
			b := startHost(t, ctx, nc, js, "b", out, false, hostOpts{})
			publish(t, ctx, in, keys, 0)
			waitFor(t, func() bool { return out.len() >= len(keys) })
			ck, err := a.mig.Checkpoint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ck.Groups) != groups {
				t.Fatalf("checkpoint put groups %v, want all %d", ck.Groups, groups)
			}
			infos, err := a.mig.Checkpoints.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			size := map[int]int64{}
			var total int64
			for _, in := range infos {
				size[in.KeyGroup] = in.Size
				total += in.Size
			}
			var wantFetched, wantPrefetched int64
			wantHits := 0
			for kg := range groups {
				if replicate > 0 && kg%replicate == 0 {
					wantPrefetched += size[kg]
					wantHits++
				} else {
					wantFetched += size[kg]
				}
			}

			knobs := cluster.Knobs{Order: cluster.OrderKeyGroup, Batch: 2, Replicate: replicate}
			if _, err := migrate.Start(ctx, a.mig.Cluster, "all", slices.Repeat([]string{"b"}, groups), knobs, nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, migrationOver(ctx, a))

			src, dst := a.mig.Moved(), b.mig.Moved()
			if src.Released != groups || src.Whole != 0 {
				t.Errorf("source released %d groups, %d whole; want %d, none whole (their state was checkpointed)", src.Released, src.Whole, groups)
			}
			if src.PutBytes*10 > total {
				t.Errorf("source put %d bytes at the moves for %d bytes of checkpoints; want floors only", src.PutBytes, total)
			}
			if dst.Installed != groups || dst.ReplicaHits != wantHits || dst.FetchedBytes != wantFetched {
				t.Errorf("destination installed %d groups, %d from its replica, fetching %d bytes; want %d, %d, %d bytes",
					dst.Installed, dst.ReplicaHits, dst.FetchedBytes, groups, wantHits, wantFetched)
			}
			if got := b.mig.Checkpoints.Stats().PrefetchBytes; got != wantPrefetched {
				t.Errorf("destination prefetched %d bytes, want %d (the replicated groups' checkpoints)", got, wantPrefetched)
			}
			share := 0.0
			if replicate > 0 {
				share = 1 / float64(replicate)
			}
			if ratio, want := float64(dst.FetchedBytes)/float64(total), 1-share; ratio < want-0.2 || ratio > want+0.2 {
				t.Errorf("fetched %.2f of the state at the moves with %.0f%% replicated; want %.2f±0.2", ratio, 100*share, want)
			}
			fetched[replicate] = dst.FetchedBytes

			more := append(keys[:len(keys):len(keys)], keys...)
			publish(t, ctx, in, more[len(keys):], len(keys))
			waitFor(t, func() bool { return out.len() >= len(more) })
			checkCounts(t, out, more)
		})
	}
	t.Logf("bytes fetched at the moves by replicated share: 0%%: %d, 50%%: %d, 100%%: %d", fetched[0], fetched[2], fetched[1])
}

// TestReplicationCutsBytesUnderChanges is TestReplicationCutsBytesAtTheMove
// with every group changed between its checkpoint and its move, as under
// load: the source sends each group's change as a delta against its
// checkpoint, the destination reads a replicated group's delta alone at its
// move (its checkpoint was read ahead) and the others' checkpoints and
// deltas, so the bytes fetched at the moves still fall in proportion to the
// replicated share. Then every record is counted once, the changes moved
// as deltas included.
func TestReplicationCutsBytesUnderChanges(t *testing.T) {
	// 40 keys in every key group, so that one changed key is a small part
	// of its group.
	var keys []string
	perGroup := map[int]int{}
	for i := 0; len(keys) < 40*groups; i++ {
		k := "k" + strconv.Itoa(i)
		if kg := state.KeyGroup([]byte(k), groups); perGroup[kg] < 40 {
			perGroup[kg]++
			keys = append(keys, k)
		}
	}
	// One key of each group, to change it after the checkpoint.
	var changes []string
	changed := map[int]bool{}
	for _, k := range keys {
		if kg := state.KeyGroup([]byte(k), groups); !changed[kg] {
			changed[kg] = true
			changes = append(changes, k)
		}
	}
	fetched := map[int]int64{}
	for _, replicate := range []int{0, 2, 1} {
		t.Run(fmt.Sprintf("replicate=%d", replicate), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			nc, js, in := setup(t, ctx)
			out := &outputs{byID: map[string]abi.Record{}}
			a := startHost(t, ctx, nc, js, "a", out, true, hostOpts{})
			b := startHost(t, ctx, nc, js, "b", out, false, hostOpts{})
			publish(t, ctx, in, keys, 0)
			waitFor(t, func() bool { return out.len() >= len(keys) })
			if ck, err := a.mig.Checkpoint(ctx); err != nil || len(ck.Groups) != groups {
				t.Fatalf("checkpoint put groups %v (%v), want all %d", ck.Groups, err, groups)
			}
			infos, err := a.mig.Checkpoints.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for _, in := range infos {
				total += in.Size
			}
			sent := append(keys[:len(keys):len(keys)], changes...)
			publish(t, ctx, in, changes, len(keys))
			waitFor(t, func() bool { return out.len() >= len(sent) })

			knobs := cluster.Knobs{Order: cluster.OrderKeyGroup, Batch: 2, Replicate: replicate}
			if _, err := migrate.Start(ctx, a.mig.Cluster, "all", slices.Repeat([]string{"b"}, groups), knobs, nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, migrationOver(ctx, a))

			src, dst := a.mig.Moved(), b.mig.Moved()
			if src.Released != groups || src.Whole != 0 || src.Deltas != groups {
				t.Errorf("source released %d groups, %d whole, %d as deltas; want %d, none whole, all deltas", src.Released, src.Whole, src.Deltas, groups)
			}
			if src.PutBytes*5 > total {
				t.Errorf("source put %d bytes at the moves for %d bytes of checkpoints; want the changes only", src.PutBytes, total)
			}
			if dst.Installed != groups {
				t.Errorf("destination installed %d groups, want %d", dst.Installed, groups)
			}
			share := 0.0
			if replicate > 0 {
				share = 1 / float64(replicate)
			}
			if ratio, want := float64(dst.FetchedBytes)/float64(total), 1-share; ratio < want-0.2 || ratio > want+0.2 {
				t.Errorf("fetched %.2f of the state at the moves with %.0f%% replicated; want %.2f±0.2", ratio, 100*share, want)
			}
			// Every group's checkpoint was read once, at its install or
			// ahead of it, and its delta on top: more than the
			// checkpoints, and far less than twice them.
			if read := dst.FetchedBytes + b.mig.Checkpoints.Stats().PrefetchBytes; read <= total || read*10 > total*13 {
				t.Errorf("the destination read %d bytes (%d at the installs) for %d bytes of checkpoints and their deltas", read, dst.FetchedBytes, total)
			}
			fetched[replicate] = dst.FetchedBytes

			more := append(sent, keys...)
			publish(t, ctx, in, keys, len(sent))
			waitFor(t, func() bool { return out.len() >= len(more) })
			checkCounts(t, out, more)
		})
	}
	t.Logf("bytes fetched at the moves of changed groups by replicated share: 0%%: %d, 50%%: %d, 100%%: %d", fetched[0], fetched[2], fetched[1])
}
