package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrModuleNotFound is matched, with errors.Is, by the error of a module
// the cluster's module store does not hold.
var ErrModuleNotFound = errors.New("module not in the cluster's module store")

// ModuleBucketName returns the name of the JetStream object store that
// holds the modules swapped into pipeline's operators, by SHA-256.
func ModuleBucketName(pipeline string) string { return "sluice-modules-" + pipeline }

// Modules is the pipeline's module store: every module a swap recorded,
// named by its SHA-256, so that every host can fetch the module the
// versions record names.
type Modules struct {
	name      string
	obs       jetstream.ObjectStore
	readAgain []time.Duration // Get's pauses before reading again (readAgain)
}

// OpenModules creates the pipeline's module store if it does not exist,
// or binds to it.
func OpenModules(ctx context.Context, js jetstream.JetStream, pipeline string, replicas int) (*Modules, error) {
	if replicas == 0 {
		replicas = 1
	}
	name := ModuleBucketName(pipeline)
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: name, Replicas: replicas,
		Description: "sluice cluster of pipeline " + pipeline + ": modules swapped in, by SHA-256"})
	if errors.Is(err, jetstream.ErrBucketExists) {
		obs, err = js.ObjectStore(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: module store %s: %w", name, err)
	}
	return &Modules{name: name, obs: obs, readAgain: readAgain()}, nil
}

// Put stores module under its SHA-256, which it returns; a module stored
// already is not sent again.
func (m *Modules) Put(ctx context.Context, module []byte) (string, error) {
	sum := sha256.Sum256(module)
	hash := hex.EncodeToString(sum[:])
	if _, err := m.obs.GetInfo(ctx, hash); err == nil {
		return hash, nil
	}
	if _, err := m.obs.Put(ctx, jetstream.ObjectMeta{Name: hash}, bytes.NewReader(module)); err != nil {
		return "", fmt.Errorf("cluster: module store %s: put %s: %w", m.name, hash, err)
	}
	return hash, nil
}

// readAgain is how long Get waits, by default, before each of its reads
// after the first of a module that came back short (its chunks do not
// match the object's digest), not found, or not whole within readStall.
// A short read has been seen just after a NATS server of the cluster came
// back, while another host read the same module whole in the same second:
// our reading is that the read was served from the returning server's
// copy before it caught up (an ephemeral consumer placed there delivers
// what it holds; the object's metadata can be read from any copy). A
// module the versions record names was put before it was recorded, so it
// is there to be read.
func readAgain() []time.Duration {
	return []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second}
}

// readStall bounds one read of a module: a read whose object is replaced
// meanwhile (its chunks purged by a Put of the same module, made again by
// a host that did not see it) waits for chunks that never come.
const readStall = 30 * time.Second

// Get returns the module whose SHA-256 is hash, checked against it. A
// module the store does not hold, after the reads again of readAgain, is
// an error matching ErrModuleNotFound.
func (m *Modules) Get(ctx context.Context, hash string) ([]byte, error) {
	data, err := m.read(ctx, hash)
	for _, pause := range m.readAgain {
		stalled := errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
		if !stalled && !errors.Is(err, jetstream.ErrDigestMismatch) && !errors.Is(err, jetstream.ErrObjectNotFound) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: module store %s: get %s: %w (stopped trying: %w)", m.name, hash, err, ctx.Err())
		case <-time.After(pause):
		}
		data, err = m.read(ctx, hash)
	}
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("cluster: module store %s: %s: %w", m.name, hash, ErrModuleNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: module store %s: get %s: %w", m.name, hash, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hash {
		return nil, fmt.Errorf("cluster: module store %s: object %s holds a module whose SHA-256 is %x", m.name, hash, sum)
	}
	return data, nil
}

// read is one read of Get, bounded by readStall.
func (m *Modules) read(ctx context.Context, hash string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, readStall)
	defer cancel()
	return m.obs.GetBytes(ctx, hash)
}
