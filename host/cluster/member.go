package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// HostInfo describes a host, as its lease holds it.
type HostInfo struct {
	// ID names the host in the cluster: letters, digits, - and _.
	ID string `json:"id"`
	// Addr is the host's HTTP address (its API), for the others and for
	// sluice cluster status.
	Addr string `json:"addr"`
	// Started is when the host started.
	Started time.Time `json:"started"`
}

// EventKind says what happened to a member.
type EventKind int

// The kinds of membership events.
const (
	// Joined: the host's lease appeared.
	Joined EventKind = iota + 1
	// Left: the host deleted its lease (a clean leave).
	Left
	// Expired: the host stopped renewing and its lease expired.
	Expired
)

// String returns "joined", "left" or "expired".
func (k EventKind) String() string {
	switch k {
	case Joined:
		return "joined"
	case Left:
		return "left"
	case Expired:
		return "expired"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is a change of membership.
type Event struct {
	// Kind is what happened.
	Kind EventKind
	// Host is the host it happened to, as its lease last described it.
	Host HostInfo
}

// membership is the state of a joined host: its lease and its renewer.
type membership struct {
	info HostInfo
	stop chan struct{} // closed by Leave
	done chan struct{} // closed when the renewer ends
	lost chan struct{} // closed when the lease is known lost
	rev  uint64        // the lease's revision; the renewer's until done
}

// Join makes host a member: it creates host's lease, checks the pipeline
// text against the cluster's (the first host writes it), records the host
// among the cluster's known hosts, and starts a goroutine that renews the
// lease every third of the lease until Leave or until ctx is done (then the
// lease expires). A host whose id is a live member's is refused with an
// error matching ErrHostExists; a host whose pipeline text differs with a
// *PipelineMismatchError (matching ErrPipelineMismatch), and its lease is
// removed. A Cluster joins once at a time. A Join that failed without an
// answer (a NATS server lost) may be called again with the same host: a
// lease that holds host's own info (its ID and start time) is taken as
// the one the failed call created.
func (c *Cluster) Join(ctx context.Context, host HostInfo) error {
	if !nameRE.MatchString(host.ID) {
		return fmt.Errorf("cluster: %w: host id %q: use letters, digits, - and _", ErrBadConfig, host.ID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.member != nil {
		return fmt.Errorf("cluster: host %s: %w: this handle has joined as %s already", host.ID, ErrBadConfig, c.member.info.ID)
	}
	data, err := json.Marshal(host)
	if err != nil {
		return fmt.Errorf("cluster: host %s: %w", host.ID, err)
	}
	rev, err := c.leases.Create(ctx, host.ID, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		e, gerr := c.leases.Get(ctx, host.ID)
		if gerr != nil || !bytes.Equal(e.Value(), data) {
			return fmt.Errorf("cluster: host %s: %w: a live host holds its lease in bucket %s", host.ID, ErrHostExists, LeaseBucketName(c.cfg.Pipeline))
		}
		rev, err = e.Revision(), nil // created by a call that got no answer
	}
	if err != nil {
		return fmt.Errorf("cluster: creating the lease of host %s: %w", host.ID, err)
	}
	fail := func(err error) error {
		if derr := c.leases.Delete(context.WithoutCancel(ctx), host.ID, jetstream.LastRevision(rev)); derr != nil {
			c.log.Warn("cluster: removing the lease of a host that could not join", "host", host.ID, "err", derr)
		}
		return err
	}
	if err := c.checkPipeline(ctx, host.ID); err != nil {
		return fail(err)
	}
	if _, err := c.kv.Put(ctx, keyHostPrefix+host.ID, data); err != nil {
		return fail(fmt.Errorf("cluster: recording host %s in bucket %s: %w", host.ID, BucketName(c.cfg.Pipeline), err))
	}
	m := &membership{info: host, stop: make(chan struct{}), done: make(chan struct{}), lost: make(chan struct{}), rev: rev}
	c.member = m
	go c.renew(ctx, m, data)
	return nil
}

// renew renews m's lease every third of the lease until m.stop is closed
// or ctx is done. A renewal that finds the lease gone (expired, or taken
// over) closes m.lost and ends; other failures are logged and retried at
// the next tick.
func (c *Cluster) renew(ctx context.Context, m *membership, data []byte) {
	defer close(m.done)
	t := time.NewTicker(c.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, c.lease/3)
		rev, err := c.leases.Update(rctx, m.info.ID, data, m.rev)
		cancel()
		switch {
		case err == nil:
			m.rev = rev
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch) && c.ownWrite(ctx, m, data):
			// A renewal whose answer was lost (a server failing over)
			// was written: the lease is the host's, at a newer revision.
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyNotFound):
			c.log.Error("cluster: the host's lease is lost: it expired or was removed; its key groups may be given to other hosts", "host", m.info.ID, "err", err)
			close(m.lost)
			return
		case ctx.Err() != nil:
			return
		default:
			c.log.Warn("cluster: renewing the host's lease failed; retrying", "host", m.info.ID, "err", err)
		}
	}
}

// ownWrite reports whether the lease, found at another revision than the
// host last wrote, still holds the host's own description: a renewal the
// server stored but whose answer did not come back. It then takes that
// revision as the host's.
func (c *Cluster) ownWrite(ctx context.Context, m *membership, data []byte) bool {
	rctx, cancel := context.WithTimeout(ctx, c.lease/3)
	defer cancel()
	e, err := c.leases.Get(rctx, m.info.ID)
	if err != nil || e.Operation() != jetstream.KeyValuePut || !bytes.Equal(e.Value(), data) || e.Revision() < m.rev {
		return false
	}
	m.rev = e.Revision()
	return true
}

// Lost returns a channel closed when the joined host's lease is known to
// be lost (it expired before a renewal, or was removed by hand): the host
// is no longer a member and must stop serving its key groups. It returns
// nil when the handle has not joined.
func (c *Cluster) Lost() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.member == nil {
		return nil
	}
	return c.member.lost
}

// Leave stops renewing the lease and deletes it, so the other hosts see
// the host leave at once instead of after the lease. A lease already lost
// is left as it is. Leave fails with ErrNotJoined on a handle that has not
// joined. The host stays among the cluster's known hosts.
func (c *Cluster) Leave(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.member
	if m == nil {
		return fmt.Errorf("cluster: leave: %w", ErrNotJoined)
	}
	c.member = nil
	close(m.stop)
	<-m.done
	err := c.leases.Delete(ctx, m.info.ID, jetstream.LastRevision(m.rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		// The lease expired, or another process took the id since.
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: deleting the lease of host %s: %w", m.info.ID, err)
	}
	return nil
}

// Members returns the live hosts (those whose lease has not expired),
// sorted by id.
func (c *Cluster) Members(ctx context.Context) ([]HostInfo, error) {
	es, err := entries(ctx, c.js, c.leases, ">")
	if err != nil {
		return nil, fmt.Errorf("cluster: listing leases in bucket %s: %w", LeaseBucketName(c.cfg.Pipeline), err)
	}
	out := make([]HostInfo, 0, len(es))
	for _, e := range es {
		out = append(out, c.hostInfo(e))
	}
	slices.SortFunc(out, func(a, b HostInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// hostInfo decodes a lease; a lease written by something else still
// names its host by its key.
func (c *Cluster) hostInfo(e jetstream.KeyValueEntry) HostInfo {
	var h HostInfo
	if err := json.Unmarshal(e.Value(), &h); err != nil || h.ID != e.Key() {
		c.log.Warn("cluster: a lease that is not a host's description", "bucket", LeaseBucketName(c.cfg.Pipeline), "key", e.Key())
		return HostInfo{ID: e.Key()}
	}
	return h
}

// Watch delivers membership changes on the returned channel until ctx is
// done, when the channel is closed: first a Joined event for each live
// host, then one event per change (a host joined, left, or its lease
// expired). Renewals are not events. The channel is also closed, with a
// warning logged, if the watch itself ends (the connection was closed).
// The caller must read the channel until it is closed or end ctx.
func (c *Cluster) Watch(ctx context.Context) (<-chan Event, error) {
	w, err := c.leases.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: watching bucket %s: %w", LeaseBucketName(c.cfg.Pipeline), err)
	}
	out := make(chan Event)
	go func() {
		defer close(out)
		defer stopWatcher(w)
		live := make(map[string]HostInfo)
		leases := make(map[string]seenLease)
		expiry := time.NewTimer(time.Hour)
		defer expiry.Stop()
		send := func(ev Event) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for {
			c.nextExpiry(expiry, leases)
			var e jetstream.KeyValueEntry
			select {
			case u, ok := <-w.Updates():
				if !ok {
					c.log.Warn("cluster: the membership watch ended", "bucket", LeaseBucketName(c.cfg.Pipeline))
					return
				}
				e = u
			case <-expiry.C:
				c.expire(ctx, leases)
				continue
			case <-ctx.Done():
				return
			}
			if e == nil { // the end of the initial values
				continue
			}
			id := e.Key()
			h, ok := live[id]
			var ev Event
			switch e.Operation() {
			case jetstream.KeyValuePut:
				live[id] = c.hostInfo(e)
				leases[id] = seenLease{rev: e.Revision(), at: time.Now()}
				if ok {
					continue // a renewal
				}
				ev = Event{Kind: Joined, Host: live[id]}
			case jetstream.KeyValueDelete:
				delete(leases, id)
				if !ok {
					continue
				}
				delete(live, id)
				ev = Event{Kind: Left, Host: h}
			case jetstream.KeyValuePurge: // the marker of an expired lease (the server's, or a watcher's: expire)
				delete(leases, id)
				if !ok {
					continue
				}
				delete(live, id)
				ev = Event{Kind: Expired, Host: h}
			}
			if !send(ev) {
				return
			}
		}
	}()
	return out, nil
}

// seenLease is a live lease as a watch last saw it: its revision, and when
// the watch received it.
type seenLease struct {
	rev uint64
	at  time.Time
}

// nextExpiry sets t to fire when the first of leases has gone a whole
// lease without a renewal.
func (c *Cluster) nextExpiry(t *time.Timer, leases map[string]seenLease) {
	first := time.Time{}
	for _, l := range leases {
		if first.IsZero() || l.at.Before(first) {
			first = l.at
		}
	}
	if first.IsZero() {
		t.Reset(time.Hour)
		return
	}
	t.Reset(max(time.Until(first.Add(c.lease)), 0))
}

// expire purges the leases that have gone a whole lease without a renewal
// since the watch saw them, each at the revision it saw: the purge fails,
// changing nothing, if the host renewed meanwhile. The server expires such
// a lease too, but only when its periodic check of the bucket's ages finds
// it (up to a few hundred milliseconds late), and every watcher then sees
// the purge as the lease's expiry; a watcher that cannot purge (no server
// answers) tries again a quarter lease later.
func (c *Cluster) expire(ctx context.Context, leases map[string]seenLease) {
	now := time.Now()
	for id, l := range leases {
		if now.Sub(l.at) < c.lease {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, c.lease/4)
		err := c.leases.Purge(pctx, id, jetstream.LastRevision(l.rev))
		cancel()
		if err != nil {
			c.log.Debug("cluster: a lease gone a whole lease without a renewal was not purged", "host", id, "revision", l.rev, "err", err)
		}
		// Its purge, or its renewal, comes through the watch; until then,
		// a quarter lease before trying again.
		l.at = now.Add(c.lease/4 - c.lease)
		leases[id] = l
	}
}
