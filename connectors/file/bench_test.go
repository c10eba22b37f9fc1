package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

const benchRecords = 100_000

func benchOut() []connectors.Out {
	out := make([]connectors.Out, 256)
	for i := range out {
		out[i].Record = abi.Record{
			Key:   fmt.Appendf(nil, "user-%d", i%50),
			Value: fmt.Appendf(nil, "the quick brown fox jumps over the lazy dog %d", i),
			Time:  1_700_000_000_000_000_000 + int64(i),
		}
	}
	return out
}

// BenchmarkSinkJSONL measures encoding and buffered writing; the fsync of
// Flush is outside the loop.
func BenchmarkSinkJSONL(b *testing.B) {
	sink, err := NewSink(SinkConfig{Path: filepath.Join(b.TempDir(), "out.jsonl")})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	out := benchOut()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; sent += len(out) {
		if err := sink.Write(ctx, out[:min(len(out), b.N-sent)]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkSource measures reading and decoding a file of 100,000 records
// per iteration.
func BenchmarkSource(b *testing.B) {
	for _, format := range []Format{JSONL, Lines} {
		b.Run(string(format), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "in")
			sink, err := NewSink(SinkConfig{Path: path, Format: format})
			if err != nil {
				b.Fatal(err)
			}
			out := benchOut()
			for sent := 0; sent < benchRecords; sent += len(out) {
				if err := sink.Write(context.Background(), out); err != nil {
					b.Fatal(err)
				}
			}
			if err := sink.Close(); err != nil {
				b.Fatal(err)
			}
			buf := make([]connectors.Message, 256)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			total := 0
			for range b.N {
				src, err := NewSource(SourceConfig{Path: path, Format: format})
				if err != nil {
					b.Fatal(err)
				}
				if err := src.Open(ctx, 0); err != nil {
					b.Fatal(err)
				}
				for {
					n, err := src.Read(ctx, buf)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					total += n
				}
				src.Close()
			}
			b.StopTimer()
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkSourceJSON measures reading plain JSON lines and taking their
// key and time from members.
func BenchmarkSourceJSON(b *testing.B) {
	var lines []byte
	for i := range benchRecords {
		lines = fmt.Appendf(lines, `{"user":{"id":"user-%d","plan":"free"},"ts":%d,"msg":"the quick brown fox jumps over the lazy dog %d"}`+"\n", i%50, 1_700_000_000_000+i, i)
	}
	path := filepath.Join(b.TempDir(), "in.json")
	if err := os.WriteFile(path, lines, 0o644); err != nil {
		b.Fatal(err)
	}
	buf := make([]connectors.Message, 256)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	total := 0
	for range b.N {
		src, err := NewSource(SourceConfig{Path: path, Format: JSON, KeyField: "/user/id", TimeField: "ts"})
		if err != nil {
			b.Fatal(err)
		}
		if err := src.Open(ctx, 0); err != nil {
			b.Fatal(err)
		}
		for {
			n, err := src.Read(ctx, buf)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range buf[:n] {
				if m.Err != nil {
					b.Fatal(m.Err)
				}
			}
			total += n
		}
		src.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
}
