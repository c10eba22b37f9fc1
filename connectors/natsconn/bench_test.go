package natsconn

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

var benchSizes = []int{64, 1024}

func reportRate(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkCoreRaw is the floor: the NATS client alone, publisher and
// subscriber on separate connections to an in-process server.
func BenchmarkCoreRaw(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			e := startServer(b)
			pub, sub := connect(b, e.ClientURL()), connect(b, e.ClientURL())
			var got atomic.Int64
			done := make(chan struct{})
			target := int64(b.N)
			s, err := sub.Subscribe("bench", func(*nats.Msg) {
				if got.Add(1) == target {
					close(done)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.SetPendingLimits(-1, -1); err != nil {
				b.Fatal(err)
			}
			if err := sub.Flush(); err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for range b.N {
				if err := pub.Publish("bench", payload); err != nil {
					b.Fatal(err)
				}
			}
			<-done
			b.StopTimer()
			reportRate(b, b.N)
		})
	}
}

// BenchmarkCoreSourceSink measures records through CoreSink and CoreSource.
func BenchmarkCoreSourceSink(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			e := startServer(b)
			pub, sub := connect(b, e.ClientURL()), connect(b, e.ClientURL())
			ctx := context.Background()
			src, err := NewCoreSource(sub, CoreSourceConfig{Subject: "bench", PendingMsgs: 1 << 24, PendingBytes: 1 << 32})
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			if err := src.Open(ctx, 0); err != nil {
				b.Fatal(err)
			}
			sink, err := NewCoreSink(pub, CoreSinkConfig{Subject: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			defer sink.Close()
			out := make([]connectors.Out, 256)
			for i := range out {
				out[i].Record = abi.Record{Value: make([]byte, size)}
			}
			read := make(chan error, 1)
			b.SetBytes(int64(size))
			b.ResetTimer()
			go func() {
				buf := make([]connectors.Message, 256)
				for n := 0; n < b.N; {
					k, err := src.Read(ctx, buf)
					if err != nil {
						read <- err
						return
					}
					n += k
				}
				read <- nil
			}()
			for sent := 0; sent < b.N; sent += len(out) {
				if err := sink.Write(ctx, out[:min(len(out), b.N-sent)]); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-read; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			reportRate(b, b.N)
		})
	}
}

// BenchmarkJetStreamRawPublish is the floor for BenchmarkJetStreamSink: the
// client's asynchronous publication alone, with and without message ids.
func BenchmarkJetStreamRawPublish(b *testing.B) {
	for _, ids := range []bool{false, true} {
		b.Run("ids="+strconv.FormatBool(ids), func(b *testing.B) {
			e := startServer(b)
			nc := connect(b, e.ClientURL())
			ctx := context.Background()
			js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench"}}); err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 64)
			b.ResetTimer()
			for i := range b.N {
				var opts []jetstream.PublishOpt
				if ids {
					opts = append(opts, jetstream.WithMsgID(strconv.Itoa(i)))
				}
				if _, err := js.PublishAsync("bench", payload, opts...); err != nil {
					b.Fatal(err)
				}
			}
			<-js.PublishAsyncComplete()
			b.StopTimer()
			reportRate(b, b.N)
		})
	}
}

// BenchmarkJetStreamSink measures asynchronous publication with ids to a
// file-stored stream, acknowledgements included.
func BenchmarkJetStreamSink(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			e := startServer(b)
			nc := connect(b, e.ClientURL())
			ctx := context.Background()
			sink := newJSSink(b, nc, JetStreamSinkConfig{
				Subject: "bench", Stream: "BENCH", CreateStream: &StreamSpec{Subjects: []string{"bench"}},
			})
			out := make([]connectors.Out, 256)
			for i := range out {
				out[i].Record = abi.Record{Value: make([]byte, size)}
			}
			b.SetBytes(int64(size))
			b.ResetTimer()
			for sent := 0; sent < b.N; sent += len(out) {
				batch := out[:min(len(out), b.N-sent)]
				for i := range batch {
					batch[i].ID = strconv.Itoa(sent + i)
				}
				if err := sink.Write(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			if err := sink.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			reportRate(b, b.N)
		})
	}
}

// BenchmarkJetStreamSource measures reading a backlog through the durable
// consumer with one acknowledgement per Read, as the host acknowledges one
// committed batch at a time.
func BenchmarkJetStreamSource(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			e := startServer(b)
			nc := connect(b, e.ClientURL())
			ctx := context.Background()
			js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench"}}); err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, size)
			for range b.N {
				if _, err := js.PublishAsync("bench", payload); err != nil {
					b.Fatal(err)
				}
			}
			<-js.PublishAsyncComplete()
			src := newJSSource(b, nc, JetStreamSourceConfig{Stream: "BENCH", Durable: fmt.Sprint("d", b.N)})
			if err := src.Open(ctx, 0); err != nil {
				b.Fatal(err)
			}
			buf := make([]connectors.Message, 256)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for n := 0; n < b.N; {
				k, err := src.Read(ctx, buf)
				if err != nil {
					b.Fatal(err)
				}
				n += k
				if err := src.Ack(ctx, buf[k-1].Position); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportRate(b, b.N)
		})
	}
}

// BenchmarkPartitionedSource measures reading a backlog spread over 1,024
// key groups by a source that reads a third of them, through the
// subjects of its groups (filters) or through "<prefix>.*", dropping the
// other groups (wildcard, the default at this share). The rate counts the
// records returned.
func BenchmarkPartitionedSource(b *testing.B) {
	const groups = 1024
	for _, bc := range []struct {
		name       string
		maxFilters int
	}{{"wildcard", 0}, {"filters", groups}} {
		b.Run(bc.name, func(b *testing.B) {
			e := startServer(b)
			nc := connect(b, e.ClientURL())
			ctx := context.Background()
			js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench.*"}}); err != nil {
				b.Fatal(err)
			}
			floors := map[int]uint64{}
			for kg := 0; kg < groups; kg += 3 {
				floors[kg] = 0
			}
			payload := make([]byte, 64)
			for i := range b.N * 3 {
				if _, err := js.PublishAsync("bench."+strconv.Itoa(i%groups), payload); err != nil {
					b.Fatal(err)
				}
			}
			<-js.PublishAsyncComplete()
			want := 0
			for i := range b.N * 3 {
				if _, ok := floors[i%groups]; ok {
					want++
				}
			}
			src, err := NewPartitionedSource(nc, PartitionedSourceConfig{Stream: "BENCH", Prefix: "bench", KeyGroups: groups, MaxFilters: bc.maxFilters, Logger: quiet()})
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			buf := make([]connectors.Message, 256)
			b.ResetTimer()
			if err := src.OpenGroups(ctx, floors); err != nil {
				b.Fatal(err)
			}
			for n := 0; n < want; {
				k, err := src.Read(ctx, buf)
				if err != nil {
					b.Fatal(err)
				}
				n += k
			}
			b.StopTimer()
			reportRate(b, want)
		})
	}
}
