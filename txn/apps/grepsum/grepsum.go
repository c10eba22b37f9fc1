// Package grepsum is MorphStream's GrepSum benchmark in native Go: each
// transaction has Length operations; each writes one key with the sum of
// Reads other keys plus its own value, after Complexity rounds of busy work
// that stand for a costly function. Acyclic workloads read only keys below
// the written one, so the chains' parametric dependencies never form a cycle.
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
}

// Workload generates GrepSum batches.
type Workload struct {
	Config
	names []string
	z     *zipf.Zipf
}

// New returns a workload generator.
func New(cfg Config) (*Workload, error) {
	if cfg.Keys < 2 || cfg.Length < 1 || cfg.Reads < 0 || cfg.Complexity < 0 {
		return nil, fmt.Errorf("grepsum: invalid config %+v", cfg)
	}
	w := &Workload{Config: cfg, names: make([]string, cfg.Keys), z: zipf.New(cfg.Keys, cfg.Skew, cfg.Seed)}
	for i := range w.names {
		w.names[i] = fmt.Sprintf("%08d", i)
	}
	return w, nil
}

// Batch draws n transactions.
func (w *Workload) Batch(n int) []txn.Txn {
	r := w.z.Rand()
	batch := make([]txn.Txn, n)
	for i := range batch {
		ops := make([]txn.Op, w.Length)
		for j := range ops {
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

// Apply is GrepSum's function: own + sum of reads, after busy work.
func (w *Workload) Apply(_, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
	own, _ := a.Own()
	sum := decode(own)
	for i := range o.Reads {
		v, _ := a.Read(i)
		sum += decode(v)
	}
	h := uint64(sum)
	for i := 0; i < w.Complexity; i++ {
		h = h*6364136223846793005 + 1442695040888963407
	}
	sum += int64(h & 1)
	return txn.Effect{Value: binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(sum))}, nil
}

func decode(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b))
}
