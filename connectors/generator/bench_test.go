package generator

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/connectors"
)

func BenchmarkRead(b *testing.B) {
	for _, cfg := range []Config{
		{Mode: Words, Seed: 1},
		{Mode: Sequence, Keys: 1000},
		{Mode: Bytes, Size: 64},
		{Mode: Bytes, Size: 1024},
		{Mode: Txn, Workload: defaults(b, "sl")},
		{Mode: Txn, Workload: defaults(b, "gs")},
		{Mode: Txn, Workload: defaults(b, "ob")},
	} {
		name := string(cfg.Mode)
		if cfg.Mode == Txn {
			name += "-" + cfg.Workload.Name()
		}
		if cfg.Mode == Bytes {
			name += map[int]string{64: "-64B", 1024: "-1KiB"}[cfg.Size]
		}
		b.Run(name, func(b *testing.B) {
			g, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := g.Open(ctx, 0); err != nil {
				b.Fatal(err)
			}
			buf := make([]connectors.Message, 256)
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; {
				k, err := g.Read(ctx, buf[:min(len(buf), b.N-n)])
				if err != nil {
					b.Fatal(err)
				}
				n += k
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
