package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/connectors/generator"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
)

// KeyedResult holds the keyed suite's figures: medians over the rounds,
// and the rounds themselves.
type KeyedResult struct {
	Records     uint64 `json:"records"`
	Keys        uint64 `json:"keys"`
	Parallelism int    `json:"parallelism"`
	BatchSize   int    `json:"batch_size"`
	Rounds      int    `json:"rounds"`
	// CallTimeout says whether the operator ran on an engine with the
	// default call timeout.
	CallTimeout bool `json:"call_timeout"`
	// Rate is records per second through exec.Job.Run, from start to the
	// last commit.
	Rate float64 `json:"records_per_second"`
	// CommitUs is the mean time of one state commit (state.Stats: total
	// commit duration / commits) in microseconds.
	CommitUs float64 `json:"commit_us"`
	// Commits is the number of commits (one per batch) and
	// EntriesPerCommit the mean number of state entries each wrote.
	Commits          uint64  `json:"commits"`
	EntriesPerCommit float64 `json:"entries_per_commit"`
	// CommitShare is the fraction of the run spent committing.
	CommitShare float64 `json:"commit_share"`

	RateRounds     []float64 `json:"rounds_records_per_second"`
	CommitUsRounds []float64 `json:"rounds_commit_us"`
}

// tableCounts is the wordcount operator's state table.
const tableCounts = "counts"

func runKeyed(ctx context.Context, e *env, code []byte, cfg KeyedConfig) (*KeyedResult, error) {
	if cfg.Records == 0 || cfg.Keys == 0 || cfg.Rounds <= 0 {
		return nil, fmt.Errorf("bench: keyed suite: records, keys and rounds must be set (got %+v)", cfg)
	}
	par := parallelism(cfg.Parallelism)
	e.step("keyed: compiling the wordcount plugin (%s)", timeoutWords(!e.noTimeout))
	p, err := e.load(ctx, "wordcount", code, plugin.KindKeyed, !e.noTimeout)
	if err != nil {
		return nil, err
	}
	res := &KeyedResult{Records: cfg.Records, Keys: cfg.Keys, Parallelism: par, BatchSize: pipeline.DefaultBatchSize, Rounds: cfg.Rounds, CallTimeout: !e.noTimeout}
	var commits, entries []float64
	var shares []float64
	for r := range cfg.Rounds {
		e.step("keyed: round %d/%d: generator (%d records, %d keys) -> wordcount (%d workers) -> discard, Pebble commits",
			r+1, cfg.Rounds, cfg.Records, cfg.Keys, par)
		rr, err := keyedRound(ctx, e, p, r, par, cfg)
		if err != nil {
			return nil, err
		}
		res.RateRounds = append(res.RateRounds, rr.rate)
		res.CommitUsRounds = append(res.CommitUsRounds, rr.commitUs)
		commits = append(commits, float64(rr.commits))
		entries = append(entries, rr.entriesPerCommit)
		shares = append(shares, rr.share)
	}
	res.Rate, res.CommitUs = median(res.RateRounds), median(res.CommitUsRounds)
	res.Commits, res.EntriesPerCommit, res.CommitShare = uint64(median(commits)), median(entries), median(shares)
	return res, nil
}

type keyedRoundResult struct {
	rate, commitUs, entriesPerCommit, share float64
	commits                                 uint64
}

func keyedRound(ctx context.Context, e *env, p *plugin.Plugin, round, par int, cfg KeyedConfig) (res keyedRoundResult, err error) {
	gen, err := generator.New(generator.Config{Mode: generator.Sequence, Count: cfg.Records, Keys: cfg.Keys, Seed: 1, Name: "sequence"})
	if err != nil {
		return res, fmt.Errorf("bench: %w", err)
	}
	defer gen.Close()
	store, err := state.Open(filepath.Join(e.dir, "keyed-state", strconv.Itoa(round)),
		state.Options{KeyGroups: pipeline.DefaultKeyGroups, Logger: e.log})
	if err != nil {
		return res, fmt.Errorf("bench: %w", err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("bench: %w", cerr)
		}
	}()
	sink := &discardSink{name: "discard"}
	dead := &discardSink{name: "dead-letters"}
	job, err := exec.New(ctx, exec.Config{
		Name:       "bench-keyed",
		Sources:    []exec.Input{{Name: "sequence", Source: gen}},
		Operators:  []exec.Operator{{Name: "count", Kind: plugin.KindKeyed, Plugin: p, Parallelism: par, Tables: []string{tableCounts}}},
		Sinks:      []exec.Output{{Name: "discard", Sink: sink}},
		DeadLetter: dead,
		Store:      store,
		BatchSize:  pipeline.DefaultBatchSize,
		Linger:     pipeline.DefaultLinger,
		Logger:     e.log,
	})
	if err != nil {
		return res, fmt.Errorf("bench: %w", err)
	}
	start := time.Now()
	if err := job.Run(ctx); err != nil {
		return res, fmt.Errorf("bench: keyed pipeline: %w", err)
	}
	elapsed := time.Since(start)

	// Check the outcome before reporting any figure: one output per input,
	// none dead, and committed counts that add up to the records.
	st := job.Status()
	if sink.records != cfg.Records || st.RecordsIn != cfg.Records || st.Dead != 0 || dead.records != 0 {
		return res, fmt.Errorf("bench: keyed pipeline: %d records generated, %d read, %d written, %d dead-lettered",
			cfg.Records, st.RecordsIn, sink.records, st.Dead)
	}
	var keys, sum uint64
	err = store.Scan(tableCounts, func(_, value []byte) error {
		n, err := strconv.ParseUint(string(value), 10, 64)
		if err != nil {
			return fmt.Errorf("committed count %q: %w", value, err)
		}
		keys++
		sum += n
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("bench: keyed pipeline: reading the committed counts: %w", err)
	}
	if wantKeys := min(cfg.Keys, cfg.Records); keys != wantKeys || sum != cfg.Records {
		return res, fmt.Errorf("bench: keyed pipeline: committed %d keys whose counts sum to %d; want %d keys summing to %d",
			keys, sum, wantKeys, cfg.Records)
	}

	stats := store.Stats().Total
	if stats.Commits == 0 {
		return res, fmt.Errorf("bench: keyed pipeline: no commit recorded")
	}
	return keyedRoundResult{
		rate:             float64(cfg.Records) / elapsed.Seconds(),
		commitUs:         float64(stats.Duration.Nanoseconds()) / 1e3 / float64(stats.Commits),
		entriesPerCommit: float64(stats.Entries) / float64(stats.Commits),
		share:            stats.Duration.Seconds() / elapsed.Seconds(),
		commits:          stats.Commits,
	}, nil
}
