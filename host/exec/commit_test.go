package exec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/host/plugin"
)

// errCrash is what crashSink fails with.
var errCrash = errors.New("the process dies here")

// crashSink is a memSink whose Write number failAt (from 1) fails: the
// job stops there as a process that dies would, committing nothing more.
type crashSink struct {
	memSink
	failAt, writes int
}

func (s *crashSink) Write(ctx context.Context, out []connectors.Out) error {
	s.writes++
	if s.writes == s.failAt {
		return errCrash
	}
	return s.memSink.Write(ctx, out)
}

// TestCommitIntervalIsExactlyOnceAcrossACrash counts words with a
// commit interval, so that batches leave their state uncommitted, and
// stops the job at a random batch as a crash would (nothing more is
// committed, the store is closed and opened again); a second job over
// the whole input must end with the counts of a serial run, a file that
// holds every output once in order (the first job's uncommitted lines cut
// back), and an output under every id, each written the same every time.
func TestCommitIntervalIsExactlyOnceAcrossACrash(t *testing.T) {
	wc := load(t, "wordcount", plugin.KindKeyed, 0)
	rapid.Check(t, func(rt *rapid.T) {
		values := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c", "dd", "eee", "f", "g", "h"}), 1, 400).Draw(rt, "values")
		batch := rapid.IntRange(1, 32).Draw(rt, "batch")
		chunk := rapid.IntRange(1, 40).Draw(rt, "chunk")
		interval := rapid.SampledFrom([]time.Duration{time.Hour, 200 * time.Microsecond}).Draw(rt, "commit interval")
		crashAt := rapid.IntRange(1, 40).Draw(rt, "crash at write")
		par := rapid.IntRange(1, 3).Draw(rt, "parallelism")
		dir, err := os.MkdirTemp("", "sluice-commit-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		outPath := filepath.Join(dir, "out.txt")

		runOnce := func(ids connectors.Sink) error {
			store := openStore(rt, filepath.Join(dir, "state"))
			defer store.Close()
			lines, err := file.NewSink(file.SinkConfig{Path: outPath, Format: file.Lines})
			if err != nil {
				rt.Fatal(err)
			}
			defer lines.Close() // after a crash: what it buffered reaches the file
			job, err := New(context.Background(), Config{
				Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: records(values...), chunk: chunk}}},
				Operators: []Operator{{Name: "count", Kind: plugin.KindKeyed, Plugin: wc, Parallelism: par, Tables: []string{"counts"}}},
				Sinks:     []Output{{Name: "lines", Sink: lines}, {Name: "ids", Sink: ids}}, DeadLetter: &memSink{}, Store: store,
				BatchSize: batch, Linger: time.Millisecond, CommitInterval: interval,
			})
			if err != nil {
				rt.Fatal(err)
			}
			defer job.Close(context.Background())
			return job.Run(context.Background())
		}
		first := &crashSink{failAt: crashAt}
		if err := runOnce(first); err != nil && !errors.Is(err, errCrash) {
			rt.Fatal(err)
		}
		second := &memSink{}
		if err := runOnce(second); err != nil {
			rt.Fatal(err)
		}

		store := openStore(rt, filepath.Join(dir, "state"))
		defer store.Close()
		if got, want := committedCounts(rt, store, "counts"), countOracle(values); !maps.Equal(got, want) {
			rt.Fatalf("committed counts %v, want %v", got, want)
		}
		if got := store.Positions()["in"]; got != uint64(len(values)) {
			rt.Fatalf("committed position %d, want %d", got, len(values))
		}
		var want []string
		running := map[string]int{}
		for _, v := range values {
			running[v]++
			want = append(want, strconv.Itoa(running[v]))
		}
		got, err := os.ReadFile(outPath)
		if err != nil {
			rt.Fatal(err)
		}
		if w := strings.Join(want, "\n") + "\n"; string(got) != w {
			rt.Fatalf("the file holds %q, want %q", got, w)
		}
		byID := outputsByID(rt, &first.memSink, second)
		if len(byID) != len(values) {
			rt.Fatalf("%d output ids for %d records", len(byID), len(values))
		}
		clear(running)
		for i, v := range values {
			running[v]++
			o, ok := byID[fmt.Sprintf("p/in/%d/0", i+1)]
			if !ok {
				rt.Fatalf("no output for record %d", i+1)
			}
			if g, w := string(o.Record.Key)+"="+string(o.Record.Value), v+"="+strconv.Itoa(running[v]); g != w {
				rt.Fatalf("output of record %d is %s, want %s", i+1, g, w)
			}
		}
	})
}

// TestCommitIntervalDefersCommits: with full batches and an hour's
// interval nothing is committed while the job runs, and what it
// processed is committed when it stops; with a short interval the state
// left uncommitted when input stops is committed once the interval ends,
// with no further input.
func TestCommitIntervalDefersCommits(t *testing.T) {
	wc := load(t, "wordcount", plugin.KindKeyed, 0)
	var values []string
	for i := range 1000 {
		values = append(values, fmt.Sprintf("w%d", i%37))
	}
	for _, interval := range []time.Duration{time.Hour, 20 * time.Millisecond} {
		t.Run(interval.String(), func(t *testing.T) {
			store := openStore(t, t.TempDir())
			defer store.Close()
			// Chunks of a batch: every batch is full.
			src := &sliceSource{recs: records(values...), chunk: 10, block: true}
			sink := &memSink{}
			job, err := New(context.Background(), Config{
				Name: "p", Sources: []Input{{Name: "in", Source: src}},
				Operators: []Operator{{Name: "count", Kind: plugin.KindKeyed, Plugin: wc, Parallelism: 2, Tables: []string{"counts"}}},
				Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: &memSink{}, Store: store,
				BatchSize: 10, Linger: time.Hour, CommitInterval: interval,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer job.Close(context.Background())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wg sync.WaitGroup
			var runErr error
			wg.Go(func() { runErr = job.Run(ctx) })
			waitFor(t, func() bool { return len(sink.records()) == len(values) })
			if interval == time.Hour {
				if got := job.Status().Positions["in"]; got != 0 {
					t.Errorf("committed position %d while the job runs, want 0: every batch was full, and the interval is an hour", got)
				}
				if m := job.Measure(); m.Commits != 0 {
					t.Errorf("%d commits while the job runs, want 0", m.Commits)
				}
			} else {
				waitFor(t, func() bool { return job.Status().Positions["in"] == uint64(len(values)) })
			}
			cancel()
			wg.Wait()
			if runErr != nil {
				t.Fatal(runErr)
			}
			if got := store.Positions()["in"]; got != uint64(len(values)) {
				t.Errorf("committed position %d after the stop, want %d", got, len(values))
			}
			if got, want := committedCounts(t, store, "counts"), countOracle(values); !maps.Equal(got, want) {
				t.Errorf("committed counts %v, want %v", got, want)
			}
			batches, commits := counterValue(t, job.m, "sluice_batches_total"), counterValue(t, job.m, "sluice_commits_total")
			if batches != float64(len(values)/10) || commits < 1 || commits >= batches {
				t.Errorf("metrics: %v batches, %v commits; want %d batches, fewer commits but at least one", batches, commits, len(values)/10)
			}
		})
	}
}

func TestNewRefusesANegativeCommitInterval(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	_, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{}}},
		Sinks: []Output{{Name: "out", Sink: &memSink{}}}, Store: store, CommitInterval: -time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "commit interval -1s is negative") {
		t.Fatalf("New = %v, want the negative interval refused", err)
	}
}
