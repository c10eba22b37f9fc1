package state

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user-%07d", i))
	}
	return keys
}

func BenchmarkKeyGroup(b *testing.B) {
	k := []byte("user-0012345")
	b.ReportAllocs()
	for b.Loop() {
		KeyGroup(k, DefaultKeyGroups)
	}
}

// BenchmarkGroupGet reads existing keys of one group holding 100k entries.
func BenchmarkGroupGet(b *testing.B) {
	s := openBench(b, Options{KeyGroups: 1})
	g := s.Table("t").Group(0)
	keys := benchKeys(100_000)
	for _, k := range keys {
		g.Put(k, []byte("12345678"))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := g.Get(keys[i]); !ok {
			b.Fatal("missing")
		}
		if i++; i == len(keys) {
			i = 0
		}
	}
}

// BenchmarkSessionPut overwrites existing keys through a Session (key group
// routing, undo log), resetting the log every 1,000 writes as the executor
// does at each barrier.
func BenchmarkSessionPut(b *testing.B) {
	s := openBench(b, Options{})
	tab := s.Table("t")
	se := s.NewSession()
	keys := benchKeys(100_000)
	val := []byte("12345678")
	for _, k := range keys {
		_ = se.Put(tab, k, val)
	}
	se.Reset()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = se.Put(tab, keys[i], val)
		if i++; i == len(keys) {
			i = 0
		}
		if i%1000 == 0 {
			se.Reset()
		}
	}
}

// BenchmarkSessionRollback measures writing 100 keys and rolling them back.
func BenchmarkSessionRollback(b *testing.B) {
	s := openBench(b, Options{})
	tab := s.Table("t")
	se := s.NewSession()
	keys := benchKeys(100)
	for _, k := range keys {
		_ = se.Put(tab, k, []byte("12345678"))
	}
	se.Reset()
	val := []byte("abcdefgh")
	b.ReportAllocs()
	for b.Loop() {
		sp := se.Savepoint()
		for _, k := range keys {
			_ = se.Put(tab, k, val)
		}
		se.RollbackTo(sp)
	}
}

// BenchmarkKeyedCounting is keyed counting with Pebble commits: each record
// reads its key's 8-byte counter through a Session and writes it back
// incremented; a batch is 1,000 records followed by one Commit; keys cycle
// through 1M distinct keys. One iteration is one batch, so -benchtime=1000x
// writes each of the 1M keys once. It reports records per second overall
// and the cost of one Commit.
func BenchmarkKeyedCounting(b *testing.B) {
	for _, sync := range []bool{false, true} {
		b.Run(fmt.Sprintf("sync=%v", sync), func(b *testing.B) {
			const batch, space = 1000, 1_000_000
			keys := benchKeys(space)
			s := openBench(b, Options{Sync: sync})
			tab := s.Table("counts")
			se := s.NewSession()
			var buf [8]byte
			var commit time.Duration
			next := 0
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				for range batch {
					k := keys[next]
					if next++; next == space {
						next = 0
					}
					v, _, _ := se.Get(tab, k)
					n := uint64(0)
					if len(v) == 8 {
						n = binary.LittleEndian.Uint64(v)
					}
					binary.LittleEndian.PutUint64(buf[:], n+1)
					_ = se.Put(tab, k, buf[:])
				}
				c := time.Now()
				if err := s.Commit(map[string]uint64{"src": uint64(next)}); err != nil {
					b.Fatal(err)
				}
				commit += time.Since(c)
				se.Reset()
			}
			elapsed := time.Since(start)
			b.ReportMetric(float64(b.N*batch)/elapsed.Seconds(), "writes/s")
			b.ReportMetric(float64(commit.Microseconds())/float64(b.N), "commit-µs/batch")
		})
	}
}

// BenchmarkPebbleBatches is the floor BenchmarkKeyedCounting is read
// against: Pebble alone, batches of 1,000 8-byte values written without
// fsync.
func BenchmarkPebbleBatches(b *testing.B) {
	const batch, space = 1000, 1_000_000
	keys := benchKeys(space)
	db, err := pebble.Open(b.TempDir(), &pebble.Options{Logger: pebbleLogger{quietOptions(0).Logger, newHealth("bench", quietOptions(0).Logger)}})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	val := []byte("12345678")
	next := 0
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		bt := db.NewBatch()
		for range batch {
			_ = bt.Set(keys[next], val, nil)
			if next++; next == space {
				next = 0
			}
		}
		if err := bt.Commit(pebble.NoSync); err != nil {
			b.Fatal(err)
		}
		_ = bt.Close()
	}
	b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "writes/s")
}

// BenchmarkOpen measures recovery: opening a data directory of 1M
// committed 8-byte entries and loading them into memory.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(dir, quietOptions(0))
	if err != nil {
		b.Fatal(err)
	}
	tab := s.Table("t")
	se := s.NewSession()
	for i, k := range benchKeys(1_000_000) {
		_ = se.Put(tab, k, []byte("12345678"))
		if i%10_000 == 0 {
			if err := s.Commit(nil); err != nil {
				b.Fatal(err)
			}
			se.Reset()
		}
	}
	if err := s.Commit(nil); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(dir, quietOptions(0))
		if err != nil {
			b.Fatal(err)
		}
		if n := s.Table("t").Len(); n != 1_000_000 {
			b.Fatalf("loaded %d entries", n)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func openBench(b *testing.B, opts Options) *Store {
	b.Helper()
	opts.Logger = quietOptions(0).Logger
	s, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkCommitRandomKeys is the commit of a transactional batch: 8,000
// writes to keys drawn at random from 1M (as a skewed workload's keys come,
// in no order) followed by one Commit. It reports the cost of the Commit
// alone.
func BenchmarkCommitRandomKeys(b *testing.B) {
	const batch, space = 8000, 1_000_000
	keys := benchKeys(space)
	s := openBench(b, Options{})
	tab := s.Table("accounts")
	se := s.NewSession()
	rng := rand.New(rand.NewPCG(1, 2))
	val := []byte("12345678")
	// Fill the memtable first, so that inserts land among many keys.
	for i := range space {
		_ = se.Put(tab, keys[i], val)
		if i%100_000 == 99_999 {
			if err := s.Commit(nil); err != nil {
				b.Fatal(err)
			}
			se.Reset()
		}
	}
	var commit time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for range batch {
			_ = se.Put(tab, keys[rng.IntN(space)], val)
		}
		c := time.Now()
		if err := s.Commit(nil); err != nil {
			b.Fatal(err)
		}
		commit += time.Since(c)
		se.Reset()
	}
	b.ReportMetric(float64(commit.Microseconds())/float64(b.N), "commit-µs/batch")
}

// BenchmarkTransactionalCommits is the commit path of a transactional
// pipeline, Streaming Ledger's shape: 230,400 keys (two tables of
// 115,200), batches of 32,000 updates to random keys (Group.Update, as a
// transactional operator applies its change set) each prepared and
// committed. Besides the time per batch it reports the process's CPU time
// per batch (getrusage), which includes the work Pebble does on its own
// goroutines (memtable flushes and compactions) that competes with the
// next batches for the cores.
func BenchmarkTransactionalCommits(b *testing.B) {
	const perTable, batch = 115_200, 32_000
	keys := benchKeys(perTable)
	s := openBench(b, Options{KeyGroups: DefaultKeyGroups})
	tabs := []*Table{s.Table("accounts"), s.Table("assets")}
	var val [8]byte
	for _, t := range tabs {
		for _, k := range keys {
			t.Group(KeyGroup(k, t.KeyGroups())).Put(k, val[:])
		}
	}
	if err := s.Commit(nil); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var prepare, commit time.Duration
	n := uint64(0)
	cpu0 := cpuTime()
	for b.Loop() {
		for range batch {
			t, k := tabs[rng.IntN(2)], keys[rng.IntN(perTable)]
			n++
			binary.BigEndian.PutUint64(val[:], n)
			t.Group(KeyGroup(k, t.KeyGroups())).Update(k, val[:])
		}
		t0 := time.Now()
		p, err := s.Prepare()
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := p.Commit(b.Context(), nil); err != nil {
			b.Fatal(err)
		}
		prepare, commit = prepare+t1.Sub(t0), commit+time.Since(t1)
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(prepare.Seconds()*1e3/float64(b.N), "prepare-ms")
	b.ReportMetric(commit.Seconds()*1e3/float64(b.N), "commit-ms")
	b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms")
}

// BenchmarkSessionGetRandom reads keys drawn at random through a Session
// (key group routing, the group's index, the entry), as a transactional
// operator's plan loads a batch's keys: 115,200, 1,152,000 and 11,520,000
// keys over the default 128 key groups, the sizes of `sluice bench txn
// --key-sweep` for Streaming Ledger's tables; one key at a time (Get) and
// 1,024 at a time (GetAll, as the plan loads a worker's keys). Beyond the
// caches a read costs its cache misses: the index word, the entry, the
// key's bytes.
func BenchmarkSessionGetRandom(b *testing.B) {
	for _, n := range []int{115_200, 1_152_000, 11_520_000} {
		s := openBench(b, Options{})
		tab := s.Table("accounts")
		se := s.NewSession()
		keys := benchKeys(n)
		for _, k := range keys {
			if err := se.Put(tab, k, []byte("12345678")); err != nil {
				b.Fatal(err)
			}
		}
		se.Reset()
		order := rand.New(rand.NewPCG(1, 2)).Perm(n)
		b.Run(fmt.Sprintf("Get/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok, err := se.Get(tab, keys[order[i]]); !ok || err != nil {
					b.Fatal("missing", err)
				}
				if i++; i == n {
					i = 0
				}
			}
		})
		b.Run(fmt.Sprintf("GetAll/%d", n), func(b *testing.B) {
			const run = 1024
			ls := make([]Lookup, run)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				for j := range ls {
					ls[j] = Lookup{Table: tab, Key: keys[order[(i+j)%n]]}
				}
				if _, err := se.GetAll(ls); err != nil || !ls[run-1].Found {
					b.Fatal("missing", err)
				}
				i = (i + run) % n
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*run), "ns/key")
		})
	}
}
