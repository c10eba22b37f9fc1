package join

import (
	"context"
	"sync"
	"testing"
)

// benchWindow is the window the Go benchmarks join: 1/10 of the study's
// default (1,280,000 unique keys per side), generated once.
var benchWindow = sync.OnceValues(func() ([]Tuple, []Tuple) {
	r, s, err := Micro{RateR: 1280, RateS: 1280, Window: 1000, Dupe: 1, Seed: 1}.Generate()
	if err != nil {
		panic(err)
	}
	return r, s
})

// BenchmarkKernels joins the window with each algorithm on 2 workers:
// lazy ones through Join, eager ones fed in calls of 4,096 tuples as fast
// as they take them. The metric tuples/s is the inputs over the time.
func BenchmarkKernels(b *testing.B) {
	r, s := benchWindow()
	for _, a := range Algorithms() {
		b.Run(a.Name, func(b *testing.B) {
			k, err := New(a.Name, Options{Workers: 2, Expected: len(r)})
			if err != nil {
				b.Fatal(err)
			}
			var c counter
			ctx := context.Background()
			for b.Loop() {
				if l, ok := k.(Lazy); ok {
					if err := l.Join(ctx, r, s, c.emit); err != nil {
						b.Fatal(err)
					}
					continue
				}
				feed(b, ctx, k, r, s, 4096, c.emit)
			}
			b.ReportMetric(float64(len(r)+len(s))*float64(b.N)/b.Elapsed().Seconds(), "tuples/s")
		})
	}
}
