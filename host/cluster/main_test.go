package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines, but one: nats.go's object store
// Put (the module store's) makes a JetStream context of its own per
// object and cleans it up at the end, and when the cleanup runs before
// that context's reconnect watcher has read its status channel, the
// watcher waits on a nil channel for ever
// (jetStream.resetPendingAcksOnReconnect, as of nats.go v1.55.0; package
// checkpoint's tests meet it too).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}
