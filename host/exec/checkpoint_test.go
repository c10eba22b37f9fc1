package exec

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
)

// TestCheckpointResumesWithNothingLostOrRepeated takes a checkpoint of a
// job's groups while records arrive, lets the job run on past it, and
// starts a second job on an empty store from the checkpoint's exports and
// floors (and the groups nobody owned from nothing): the second job
// replays what the first did after the checkpoint, with the same outputs
// under the same ids, and every record is counted once, as a serial run
// counts it.
func TestCheckpointResumesWithNothingLostOrRepeated(t *testing.T) {
	wc := load(t, "wordcount", plugin.KindKeyed, 0)
	// With an hour's commit interval the checkpoint comes while state
	// waits uncommitted: the job commits it first.
	for _, interval := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("commit interval %v", interval), func(t *testing.T) { checkpointResumes(t, wc, interval) })
	}
}

func checkpointResumes(t *testing.T, wc *plugin.Plugin, interval time.Duration) {
	const groups = 16
	keys := []string{"a", "b", "c", "dd", "eee", "f", "g", "h", "i", "j", "k", "l"}
	var values []string
	for i := range 240 {
		values = append(values, keys[i*7%len(keys)])
	}
	log := newPartLog(groups)
	first, second := &memSink{}, &memSink{}
	var mine, others []int // owned by the first job, and by nobody
	for kg := range groups {
		if kg < 12 {
			mine = append(mine, kg)
		} else {
			others = append(others, kg)
		}
	}
	a := startGroupHost(t, t.TempDir(), log, first, wc, mine, interval)
	stopped := false
	defer func() {
		if !stopped {
			a.stop(t)
		}
	}()
	log.append(values[:120]...)
	waitOutputs := func(s *memSink, n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(outputsByID(t, s)) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d outputs after 30s, want %d", len(outputsByID(t, s)), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitOutputs(first, 30)
	log.append(values[120:]...)

	ctx := context.Background()
	var states []GroupState
	err := a.job.Checkpoint(ctx, func(c GroupCheckpoint) error {
		if fmt.Sprint(c.Groups) != fmt.Sprint(mine) {
			return fmt.Errorf("checkpoint of groups %v, want %v", c.Groups, mine)
		}
		for _, kg := range c.Groups {
			data, err := c.Store.ExportKeyGroup(kg)
			if err != nil {
				return err
			}
			states = append(states, GroupState{Group: kg, Data: data, Floors: c.Floors[kg]})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The first job runs on past the checkpoint: what it counted of its
	// groups after it is made again by the second.
	mineCount := 0
	for _, v := range values {
		if state.KeyGroup([]byte(v), groups) < 12 {
			mineCount++
		}
	}
	waitOutputs(first, mineCount)
	a.stop(t)
	stopped = true

	b := startGroupHost(t, t.TempDir(), log, second, wc, []int{}, interval)
	defer b.stop(t)
	for _, kg := range others {
		states = append(states, b.job.EmptyGroup(kg))
	}
	if err := b.job.AcquireGroups(ctx, states); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(outputsByID(t, first, second)) < len(values) {
		if time.Now().After(deadline) {
			t.Fatalf("%d outputs after 30s, want %d", len(outputsByID(t, first, second)), len(values))
		}
		time.Sleep(time.Millisecond)
	}
	byID := outputsByID(t, first, second) // fails on an id made twice with other content
	running := map[string]int{}
	for i, v := range values {
		running[v]++
		o, ok := byID[fmt.Sprintf("p/in/%d/0", i+1)]
		if !ok {
			t.Fatalf("no output for record %d (%s)", i+1, v)
		}
		if got, want := string(o.Record.Key)+"="+string(o.Record.Value), v+"="+strconv.Itoa(running[v]); got != want {
			t.Fatalf("output of record %d is %s, want %s", i+1, got, want)
		}
	}
	if len(byID) != len(values) {
		t.Fatalf("%d outputs for %d records", len(byID), len(values))
	}
}

func TestCheckpointRefusedForAJobOwningEveryGroup(t *testing.T) {
	j := &Job{} // given no Config.Groups: it owns every group
	called := false
	err := j.Checkpoint(context.Background(), func(GroupCheckpoint) error { called = true; return nil })
	if !errors.Is(err, ErrGroupsRefused) || called {
		t.Errorf("Checkpoint of a job owning every group: %v (fn called: %v), want ErrGroupsRefused", err, called)
	}
}
