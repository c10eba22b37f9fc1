package bench

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/plugin"
	wasm "github.com/sluicehq/sluice/runtime"
)

// natsBench starts an embedded NATS server for a benchmark of the nats
// suite's rounds and returns its client URL and the environment.
func natsBench(b *testing.B) (*env, string) {
	b.Helper()
	ctx := context.Background()
	e := &env{dir: b.TempDir(), log: slog.New(slog.DiscardHandler), engines: map[bool]wasm.Engine{}}
	b.Cleanup(func() { _ = e.close(ctx) })
	srv, err := natsconn.StartEmbedded(ctx, natsconn.Options{Dir: filepath.Join(e.dir, "nats"), Port: -1, Logger: e.log})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Shutdown(ctx) })
	return e, srv.ClientURL()
}

// reportCPU reports the process's CPU time (user and system, every
// goroutine: the server, the publisher, the subscriber and what is
// measured) per message since cpu0, which is what a CPU-bound machine
// pays for each message whatever else runs on it, and the rate.
func reportCPU(b *testing.B, cpu0 float64, rate float64) {
	cpu := float64(processCPU().Nanoseconds()) - cpu0
	b.ReportMetric(cpu/float64(b.N), "cpu-ns/msg")
	b.ReportMetric(rate, "msgs/s")
}

// BenchmarkNATSPipeline runs the nats suite's pipeline round for b.N
// messages: core NATS source -> upper map (2 workers, batches of 1,024) ->
// core NATS sink, with the embedded server, the publisher and the
// subscriber in the process, and reports the process's CPU per message.
// The round checks every message's arrival and content.
func BenchmarkNATSPipeline(b *testing.B) {
	plugins := examplePlugins(b)
	for _, size := range []int{64, 1024} {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			e, url := natsBench(b)
			ctx := context.Background()
			p, err := e.load(ctx, "upper", plugins.Upper, plugin.KindMap, true)
			if err != nil {
				b.Fatal(err)
			}
			cfg := NATSConfig{Messages: b.N, Window: 16384, Stall: defaultStall}
			cpu0 := float64(processCPU().Nanoseconds())
			b.ResetTimer()
			rate, _, err := pipelineRound(ctx, e, url, p, size, 0, 2, pageNone, cfg)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			reportCPU(b, cpu0, rate)
		})
	}
}

// BenchmarkNATSRelay runs the nats suite's relay round for b.N messages (a
// subscription that publishes each message again), the ceiling that
// BenchmarkNATSPipeline is compared with, and reports the process's CPU
// per message.
func BenchmarkNATSRelay(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			e, url := natsBench(b)
			ctx := context.Background()
			cfg := NATSConfig{Messages: b.N, Window: 16384, Stall: defaultStall}
			cpu0 := float64(processCPU().Nanoseconds())
			b.ResetTimer()
			rate, err := relayRound(ctx, e, url, size, 0, cfg)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			reportCPU(b, cpu0, rate)
		})
	}
}
