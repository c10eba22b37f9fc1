package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/state"
)

// Replica keeps, in memory, a copy of the latest checkpoint of each of a
// set of key groups (Spacker's replication): a host that may take those
// groups over fetches their checkpoints ahead of time, so that the move
// of a group that did not change since fetches nothing, and the move of
// one that did fetches that group alone.
//
// Refresh brings the copies up to date on request; Run does so as
// checkpoints are put, until its context ends. Install is the hand-over:
// it imports a group from its copy if the copy is the bucket's latest,
// and fetches it otherwise. The bytes each fetches are counted in the
// Bucket's Stats (PrefetchBytes for Refresh and Run, GetBytes for
// Install). Its methods are safe for concurrent use.
type Replica struct {
	b *Bucket

	mu     sync.Mutex
	groups map[int]bool
	copies map[int]replicaCopy
}

// replicaCopy is a replica's copy of a group's checkpoint.
type replicaCopy struct {
	f      *fetched
	digest string // the NATS digest of the object it was read from
}

// NewReplica returns a Replica of groups, holding no copies yet.
func (b *Bucket) NewReplica(groups []int) *Replica {
	r := &Replica{b: b, copies: map[int]replicaCopy{}}
	r.SetGroups(groups)
	return r
}

// SetGroups changes the set of groups replicated, dropping the copies of
// groups no longer in it; Refresh fetches those added.
func (r *Replica) SetGroups(groups []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.groups = make(map[int]bool, len(groups))
	for _, kg := range groups {
		r.groups[kg] = true
	}
	maps.DeleteFunc(r.copies, func(kg int, _ replicaCopy) bool { return !r.groups[kg] })
}

// Groups returns the groups replicated, in order.
func (r *Replica) Groups() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.groups))
}

// Refresh fetches the checkpoint of every replicated group whose copy is
// missing or older than the bucket's, and returns the bytes it fetched. A
// group without a checkpoint has no copy.
func (r *Replica) Refresh(ctx context.Context) (int64, error) {
	var total int64
	for _, kg := range r.Groups() {
		n, err := r.refresh(ctx, kg, nil)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// refresh brings kg's copy up to date with the object info describes, or
// with the bucket's latest when info is nil: when the copy is of the same
// object, only a delta put since is fetched.
func (r *Replica) refresh(ctx context.Context, kg int, info *jetstream.ObjectInfo) (int64, error) {
	if info == nil {
		var err error
		info, err = r.b.obs.GetInfo(ctx, ObjectName(kg))
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			r.mu.Lock()
			delete(r.copies, kg)
			r.mu.Unlock()
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("checkpoint: replica of %s in bucket %s: %w", ObjectName(kg), r.b.name, err)
		}
	}
	r.mu.Lock()
	c, ok := r.copies[kg]
	r.mu.Unlock()
	if ok && c.digest == info.Digest {
		if d := info.Metadata[metaDelta]; d == "" || d == c.f.deltaDigest {
			return 0, nil
		}
		f, n, err := r.b.withDelta(ctx, info, c.f)
		r.b.prefetches.Add(1)
		r.b.prefetchBytes.Add(n)
		if errors.Is(err, errDeltaReplaced) {
			return n, nil // the writer has put another since: its update follows
		}
		if err != nil {
			return n, err
		}
		r.keep(kg, f, c.digest)
		return n, nil
	}
	f, got, n, err := r.b.fetch(ctx, kg)
	if err != nil {
		return n, err
	}
	r.b.prefetches.Add(1)
	r.b.prefetchBytes.Add(n)
	r.keep(kg, f, got)
	return n, nil
}

// keep stores f as kg's copy if kg is replicated.
func (r *Replica) keep(kg int, f *fetched, digest string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.groups[kg] {
		r.copies[kg] = replicaCopy{f: f, digest: digest}
	}
}

// Run keeps the copies up to date until ctx ends: it watches the bucket
// and fetches each replicated group's checkpoint (or delta) when one is
// put. A checkpoint it cannot fetch is logged and left to the install,
// which finds the copy older than the bucket's. It returns ctx's error,
// or an error when the watch itself ends.
func (r *Replica) Run(ctx context.Context) error {
	w, err := r.b.obs.Watch(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("checkpoint: watch bucket %s: %w", r.b.name, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case o, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("checkpoint: watch bucket %s: the watch ended", r.b.name)
			}
			if o == nil { // the end of the initial values
				continue
			}
			kg, err := strconv.Atoi(o.Metadata[metaGroup])
			if err != nil || ObjectName(kg) != o.Name {
				continue // not a checkpoint
			}
			r.mu.Lock()
			want := r.groups[kg]
			r.mu.Unlock()
			if !want {
				continue
			}
			if _, err := r.refresh(ctx, kg, o); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				// The copy stays as it was, older than the bucket's: an
				// install finds it so (by the digests) and fetches.
				r.b.log.Warn("a replicated group's checkpoint could not be fetched ahead of its move; the move fetches it", "key_group", kg, "err", err)
			}
		}
	}
}

// Install imports key group kg's latest checkpoint into st, as Bucket.Load
// does, and returns its metadata and the bytes fetched: none when the
// replica's copy is the bucket's latest checkpoint (Stats.ReplicaHits),
// the group's object otherwise (Stats.GetBytes). A missing, damaged or
// foreign checkpoint is refused as Load refuses it, st unchanged.
func (r *Replica) Install(ctx context.Context, st *state.Store, kg int) ([]byte, int64, error) {
	if kg < 0 || kg >= st.KeyGroups() {
		return nil, 0, fmt.Errorf("checkpoint: install key group %d from bucket %s: out of range 0..%d", kg, r.b.name, st.KeyGroups()-1)
	}
	f, n, err := r.latest(ctx, kg)
	if err != nil {
		return nil, n, err
	}
	if err := r.b.install(st, f); err != nil {
		return nil, n, err
	}
	return bytes.Clone(f.Meta), n, nil
}

// Get returns key group kg's latest checkpoint, as Bucket.Get does, and
// the bytes fetched: none when the replica's copy is the bucket's latest
// checkpoint (Stats.ReplicaHits), the group's object otherwise
// (Stats.GetBytes). It is Install for a caller that imports the group
// itself (a job, at a batch boundary). A checkpoint whose metadata alone
// was replaced since the copy was fetched (Bucket.Amend) is served from
// the copy with the new metadata.
func (r *Replica) Get(ctx context.Context, kg int) (*Group, int64, error) {
	f, n, err := r.latest(ctx, kg)
	if err != nil {
		return nil, n, err
	}
	g := *f.Group
	g.Meta, g.Data = bytes.Clone(g.Meta), bytes.Clone(g.Data)
	return &g, n, nil
}

// latest returns kg's latest checkpoint, from the copy when it is current,
// and the bytes fetched.
func (r *Replica) latest(ctx context.Context, kg int) (*fetched, int64, error) {
	obj := ObjectName(kg)
	info, err := r.b.obs.GetInfo(ctx, obj)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, 0, &ObjectError{Bucket: r.b.name, Object: obj, Fault: "not found", Kind: ErrNotFound, Cause: err}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint: install %s from bucket %s: %w", obj, r.b.name, err)
	}
	r.mu.Lock()
	c, ok := r.copies[kg]
	r.mu.Unlock()
	if ok && c.digest == info.Digest {
		f, n, err := r.b.withDelta(ctx, info, c.f)
		switch {
		case err == nil && n == 0:
			r.b.replicaHits.Add(1)
			return f, 0, nil
		case err == nil:
			r.b.gets.Add(1)
			r.b.getBytes.Add(n)
			r.keep(kg, f, c.digest)
			return f, n, nil
		case !errors.Is(err, errDeltaReplaced):
			return nil, n, err
		}
		// A checkpoint was put meanwhile: fetch it.
	}
	f, digest, n, err := r.b.fetch(ctx, kg)
	if err != nil {
		return nil, n, err
	}
	r.b.gets.Add(1)
	r.b.getBytes.Add(n)
	r.keep(kg, f, digest)
	return f, n, nil
}
