package state

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"
)

// TestPendingCommitWhileWriting prepares a batch, commits it on another
// goroutine while a session writes the tables (run with -race), and
// checks after a reopen that exactly the prepared state was persisted.
func TestPendingCommitWhileWriting(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 8)
	tab := s.Table("t")
	se := s.NewSession()
	want := map[string]string{}
	for i := range 200 {
		mustPut(t, se, tab, key(i), []byte("prepared"))
		want[string(key(i))] = "prepared"
		if err := se.SetTimer(Timer{Domain: ProcessingTime, Time: int64(i), Route: key(i)}); err != nil {
			t.Fatal(err)
		}
	}
	s.SetMeta("assignment", []byte("v1"))
	p, err := s.Prepare()
	if err != nil {
		t.Fatal(err)
	}
	se.Reset()
	errc := make(chan error, 1)
	go func() { errc <- p.Commit(context.Background(), map[string]uint64{"src": 1}) }()
	// The next batch, written while the commit runs.
	for i := range 400 {
		mustPut(t, se, tab, key(i), []byte("next"))
		if i%3 == 0 {
			mustDelete(t, se, tab, key(i))
		}
		if err := se.PutKey(s.Table("new"), Key{key(i), []byte("ns"), nil}, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := se.Scan(tab, key(i), nil, func(Key, []byte) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	if err := se.PopTimers(KeyGroup(key(0), 8), ProcessingTime, 1000, func(Timer) bool { return true }); err != nil {
		t.Fatal(err)
	}
	s.SetMeta("assignment", []byte("v2"))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, 0)
	if got := scanAll(t, s, "t"); !maps.Equal(got, want) {
		t.Fatalf("persisted %d entries, want the %d prepared ones", len(got), len(want))
	}
	if got := s.Tables(); len(got) != 1 {
		t.Fatalf("tables %v: only t was prepared", got)
	}
	if v, ok := s.Meta("assignment"); !ok || string(v) != "v1" {
		t.Fatalf("meta %q %v, want v1", v, ok)
	}
	if got := s.Positions(); got["src"] != 1 {
		t.Fatalf("positions %v", got)
	}
	n := 0
	se = s.NewSession()
	for kg := range 8 {
		_ = se.Timers(kg, ProcessingTime, 1000, func(Timer) bool { n++; return true })
	}
	if n != 200 {
		t.Fatalf("%d timers persisted, want 200", n)
	}
}

// TestPendingCommitsInPrepareOrder: a pending commit waits for the ones
// prepared before it, so that the last prepared state wins whatever order
// Commit is called in.
func TestPendingCommitsInPrepareOrder(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 2)
	tab := s.Table("t")
	se := s.NewSession()
	var ps []*PendingCommit
	for i := range 3 {
		mustPut(t, se, tab, []byte("k"), []byte(fmt.Sprint(i)))
		p, err := s.Prepare()
		if err != nil {
			t.Fatal(err)
		}
		se.Reset()
		ps = append(ps, p)
	}
	// The last waits for the others; a cancelled wait can be retried.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ps[2].Commit(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("commit 3 before 1 and 2 with a cancelled context: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for _, i := range []int{2, 1} {
		wg.Go(func() { errs[i] = ps[i].Commit(context.Background(), map[string]uint64{"src": uint64(i)}) })
	}
	// Commits 2 and 3 wait for 1: give them a moment to run ahead, which
	// they must not, then let 1 go.
	time.Sleep(10 * time.Millisecond)
	if ps[1].finished() || ps[2].finished() {
		t.Fatal("a commit finished before the one prepared before it")
	}
	errs[0] = ps[0].Commit(context.Background(), map[string]uint64{"src": 0})
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("commit %d: %v", i+1, err)
		}
	}
	if err := ps[0].Commit(context.Background(), nil); err != nil {
		t.Fatalf("second Commit of a committed pending commit: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, 0)
	if got := scanAll(t, s, "t"); got["k"] != "2" {
		t.Fatalf("k = %q, want the last prepared value 2", got["k"])
	}
	if got := s.Positions()["src"]; got != 2 {
		t.Fatalf("position %d, want 2", got)
	}
}

// TestMetaCommittedWithState: metadata is staged, visible at once, written
// by the next Commit and restored by Open; nil removes it.
func TestMetaCommittedWithState(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 2)
	if _, ok := s.Meta("m"); ok {
		t.Fatal("new store has metadata")
	}
	s.SetMeta("m", []byte("1"))
	s.SetMeta("gone", []byte("x"))
	if v, ok := s.Meta("m"); !ok || string(v) != "1" {
		t.Fatalf("staged meta: %q %v", v, ok)
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	s.SetMeta("m", []byte("2")) // staged, never committed
	s.SetMeta("empty", []byte{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, 0)
	if v, ok := s.Meta("m"); !ok || string(v) != "1" {
		t.Fatalf("after reopen: %q %v, want the committed 1", v, ok)
	}
	if _, ok := s.Meta("empty"); ok {
		t.Fatal("uncommitted metadata survived a reopen")
	}
	s.SetMeta("gone", nil)
	s.SetMeta("empty", []byte{})
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, 0)
	if _, ok := s.Meta("gone"); ok {
		t.Fatal("removed metadata came back")
	}
	if v, ok := s.Meta("empty"); !ok || v == nil || len(v) != 0 {
		t.Fatalf("empty metadata: %q %v", v, ok)
	}
}
