// Package grepsum is MorphStream's GrepSum benchmark in native Go: each
// transaction has Length operations; each writes one key with the sum of
// Reads other keys plus its own value, after Complexity rounds of busy work
// that stand for a costly function. Acyclic workloads read only keys below
// the written one, so the chains' parametric dependencies never form a cycle.
//
// Windowed GrepSum (Config.Window > 0) is MorphStream's windowed variant:
// every Period-th transaction is a window event, in which WindowRatio of
// the operations are windowed reads (txn.Op.Window) that sum every version
// of their keys written by the last Window transactions, and write nothing;
// its other operations, and the other transactions, are GrepSum's. Its
// batches run against a txn.History of at least Window transactions, which
// is committed after each batch.
package grepsum

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/internal/zipf"
)

// Config describes a generated workload.
type Config struct {
	Keys       int
	Length     int     // operations per transaction
	Reads      int     // reads per operation
	Skew       float64 // Zipf θ of the keys
	Acyclic    bool    // read only keys below the written one
	Complexity int     // rounds of busy work per operation
	Seed       uint64

	// Window, when not zero, makes the workload Windowed GrepSum: the
	// window of its windowed reads, in transactions.
	Window int
	// Period is the number of transactions from one window event to the
	// next (default Window).
	Period int
	// WindowRatio is the fraction of a window event's operations that are
	// windowed reads (default 1).
	WindowRatio float64
}

// Workload generates GrepSum batches.
type Workload struct {
	Config
	names []string
	z     *zipf.Zipf
	drawn int // transactions drawn so far
}

// New returns a workload generator.
func New(cfg Config) (*Workload, error) {
	if cfg.Keys < 2 || cfg.Length < 1 || cfg.Reads < 0 || cfg.Complexity < 0 {
		return nil, fmt.Errorf("grepsum: invalid config %+v", cfg)
	}
	if cfg.Window < 0 || cfg.Period < 0 || cfg.WindowRatio < 0 || cfg.WindowRatio > 1 {
		return nil, fmt.Errorf("grepsum: invalid window (window %d, period %d, ratio %v): want window and period at least 0, ratio in [0, 1]",
			cfg.Window, cfg.Period, cfg.WindowRatio)
	}
	if cfg.Window > 0 {
		if cfg.Period == 0 {
			cfg.Period = cfg.Window
		}
		if cfg.WindowRatio == 0 {
			cfg.WindowRatio = 1
		}
	}
	w := &Workload{Config: cfg, names: make([]string, cfg.Keys), z: zipf.New(cfg.Keys, cfg.Skew, cfg.Seed)}
	for i := range w.names {
		w.names[i] = fmt.Sprintf("%08d", i)
	}
	return w, nil
}

// Batch draws the next n transactions.
func (w *Workload) Batch(n int) []txn.Txn {
	r := w.z.Rand()
	batch := make([]txn.Txn, n)
	for i := range batch {
		ops := make([]txn.Op, w.Length)
		w.drawn++
		windowEvent := w.Window > 0 && w.drawn%w.Period == 0
		for j := range ops {
			if windowEvent && r.Float64() < w.WindowRatio {
				// A windowed read of its key and of Reads others.
				k := w.z.Next()
				op := txn.Op{Write: txn.Key{Key: w.names[k]}, Window: uint32(w.Window)}
				op.Reads = append(op.Reads, op.Write)
				for x := 0; x < w.Reads; x++ {
					op.Reads = append(op.Reads, txn.Key{Key: w.names[w.z.Next()]})
				}
				ops[j] = op
				continue
			}
			k := w.z.Next()
			if w.Acyclic && k == 0 {
				k = 1
			}
			op := txn.Op{Write: txn.Key{Key: w.names[k]}}
			for x := 0; x < w.Reads; x++ {
				rk := w.z.Next()
				if w.Acyclic {
					rk = r.IntN(k)
				}
				op.Reads = append(op.Reads, txn.Key{Key: w.names[rk]})
			}
			ops[j] = op
		}
		batch[i].Ops = ops
	}
	return batch
}

// Apply is GrepSum's function: own + sum of reads, after busy work. A
// windowed read sums every version of its windows, after busy work, and
// writes nothing.
func (w *Workload) Apply(_, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
	if o.Window > 0 {
		wr, ok := a.(txn.WindowReader)
		if !ok {
			return txn.Effect{}, fmt.Errorf("grepsum: a windowed read needs an Access that reads windows")
		}
		sum := int64(0)
		for i := range o.Reads {
			for _, v := range wr.Window(i) {
				sum += decode(v.Value.Bytes)
			}
		}
		// Values are never negative, so the work decides nothing; using
		// its result keeps it from being optimised away.
		h := busy(uint64(sum), w.Complexity)
		return txn.Effect{Keep: true, Abort: sum < 0 && h&1 == 0}, nil
	}
	own, _ := a.Own()
	sum := decode(own)
	for i := range o.Reads {
		v, _ := a.Read(i)
		sum += decode(v)
	}
	sum += int64(busy(uint64(sum), w.Complexity) & 1)
	return txn.Effect{Value: binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(sum))}, nil
}

// busy is the work that stands for a costly function.
func busy(h uint64, rounds int) uint64 {
	for i := 0; i < rounds; i++ {
		h = h*6364136223846793005 + 1442695040888963407
	}
	return h
}

func decode(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b))
}
