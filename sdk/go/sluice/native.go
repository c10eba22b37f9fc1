//go:build !wasip1

package sluice

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/sluicehq/sluice/sdk/go/sluice/internal/bridge"
)

// active is the guest core running a configure or process call in a native
// build, so that Log, which has no receiver, reaches the fake host of the
// harness that drives it. sluicetest runs one call at a time per process.
var active atomic.Pointer[guest]

func init() {
	bridge.NewGuest = func(h bridge.Host) bridge.Guest {
		return nativeGuest{newGuest(&registered, h)}
	}
}

// nativeGuest adapts the guest core to bridge.Guest for sluicetest.
type nativeGuest struct{ g *guest }

func (n nativeGuest) Alloc(size int32) []byte { return n.g.alloc(size) }

func (n nativeGuest) Configure(config []byte) int32 {
	prev := active.Swap(n.g)
	defer active.Store(prev)
	return n.g.configure(config)
}

func (n nativeGuest) Process(batch []byte) int32 {
	prev := active.Swap(n.g)
	defer active.Store(prev)
	return n.g.process(batch)
}

func (n nativeGuest) AggAdd(b []byte) int32     { return n.run(b, n.g.aggAdd) }
func (n nativeGuest) AggMerge(b []byte) int32   { return n.run(b, n.g.aggMerge) }
func (n nativeGuest) AggFire(b []byte) int32    { return n.run(b, n.g.aggFire) }
func (n nativeGuest) WindowFire(b []byte) int32 { return n.run(b, n.g.windowFire) }
func (n nativeGuest) Join(b []byte) int32       { return n.run(b, n.g.join) }

// run calls fn, an export of the guest core, with Log reaching its host.
func (n nativeGuest) run(b []byte, fn func([]byte) int32) int32 {
	prev := active.Swap(n.g)
	defer active.Store(prev)
	return fn(b)
}

func logTo(level Level, msg string) {
	if g := active.Load(); g != nil {
		g.host.Log(int32(level), msg)
		return
	}
	var l slog.Level
	switch level {
	case LevelDebug:
		l = slog.LevelDebug
	case LevelInfo:
		l = slog.LevelInfo
	case LevelWarn:
		l = slog.LevelWarn
	default:
		l = slog.LevelError
	}
	slog.Default().Log(context.Background(), l, msg, "source", "sluice plugin")
}
