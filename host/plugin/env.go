package plugin

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

// The deterministic guest environment of each call (runtime.CallEnv): the
// time the guest's WASI clock reads and the seed of the random stream its
// random_get reads, set before every consuming call and the sluice_alloc
// call that prepares it.
//
//   - sluice_process: the first record of the call (in[lo]): its time, and
//     a seed from its identity. When the host runs a failed batch's records
//     again one at a time, each call's first record is the record itself,
//     so a record's environment is the same whichever batch it came in.
//   - sluice_plan and sluice_post: the first event of the call.
//   - sluice_apply: the operation's event (see SetEvents) and the
//     operation's index within it, so an operation executed again after an
//     abort, on any worker, draws the same bytes.
//   - _initialize and sluice_configure: the zero CallEnv (the Unix epoch,
//     seed zero), as no event is involved.
//
// A record's identity is a 128-bit hash of its time, key, value and
// headers, in order: the same record read again after a recovery has the
// same identity, and so has a record equal to it in every field. A source
// that must tell such records apart gives them a header that differs (its
// position, a message id).

// Domains separate the streams of the exports that may see the same event
// first.
const (
	domainProcess uint64 = iota + 1
	domainPlan
	domainApply
	domainPost
	domainAggAdd
	domainAggMerge
	domainAggFire
	domainWindowFire
	domainJoin
)

// callEnvs makes the CallEnvs of one Instance's calls. It hashes in a
// buffer of its own, allocating nothing once the buffer has grown, and
// caches the identities of the events given to SetEvents, which the
// applies of a batch need again and again.
type callEnvs struct {
	scratch []byte // the encoding identity hashes

	// events are the transactional batch's events, from SetEvents; ids
	// caches their identities: ids[t] is valid when its gen is gen.
	events []abi.Record
	ids    []cachedID
	gen    uint32

	// t and op are the operation of the last apply CallEnv, whose seed
	// Seed computes when the guest first reads random bytes.
	t, op int
}

var _ runtime.Seeder = (*callEnvs)(nil)

// maxScratch bounds the buffer callEnvs keeps: a record with larger keys
// and headers hashes in a buffer of its own.
const maxScratch = 64 << 10

type cachedID struct {
	gen uint32
	id  [2]uint64
}

// identity hashes r into its 128-bit identity. The record is encoded
// after a tag byte, each field length-prefixed (no two records that differ
// make the same encoding, but for a 64-bit collision of their values'
// hashes), with its value's hash in place of its value; the two words hash
// the encoding under tags 0 and 1. A large value is read once, and
// xxhash's one-shot function, several times faster than its streaming
// Digest on a few dozen bytes, does every hash.
func (c *callEnvs) identity(r *abi.Record) [2]uint64 {
	le := binary.LittleEndian
	b := append(c.scratch[:0], 0)
	b = le.AppendUint64(b, uint64(r.Time))
	b = appendBytes(b, r.Key)
	b = le.AppendUint64(b, uint64(len(r.Headers)))
	for k := range r.Headers {
		b = appendBytes(b, r.Headers[k].Name)
		b = appendBytes(b, r.Headers[k].Value)
	}
	b = le.AppendUint64(b, uint64(len(r.Value)))
	b = le.AppendUint64(b, xxhash.Sum64(r.Value))
	if cap(b) <= maxScratch {
		c.scratch = b
	}
	h0 := xxhash.Sum64(b)
	b[0] = 1
	return [2]uint64{h0, xxhash.Sum64(b)}
}

// appendBytes appends v with its length before it.
func appendBytes(b, v []byte) []byte {
	return append(binary.LittleEndian.AppendUint64(b, uint64(len(v))), v...)
}

// record returns the CallEnv of a call of domain whose first record is r.
func (c *callEnvs) record(domain uint64, r *abi.Record) runtime.CallEnv {
	return runtime.CallEnv{Time: r.Time, Seed: seed(c.identity(r), domain, 0)}
}

// setEvents keeps events for apply and forgets the identities cached for
// the previous batch.
func (c *callEnvs) setEvents(events []abi.Record) {
	c.events = events
	c.gen++
	if c.gen == 0 { // wrapped: entries of gen 0 could pass as valid
		clear(c.ids)
		c.gen = 1
	}
	if cap(c.ids) < len(events) {
		c.ids = make([]cachedID, len(events))
	}
	c.ids = c.ids[:len(events)]
}

// apply returns the CallEnv of operation op of event t of the batch. An
// event SetEvents did not give has no time and no identity: the clock
// reads the epoch and the seed comes from t and op alone. The seed is
// computed (Seed) only if the guest reads random bytes: most operations
// read none, and hashing each event's identity, on every worker that
// applies one of its operations, was most of an apply's environment cost.
func (c *callEnvs) apply(t, op int) runtime.CallEnv {
	c.t, c.op = t, op
	if t < 0 || t >= len(c.events) {
		return runtime.CallEnv{Seeder: c}
	}
	return runtime.CallEnv{Time: c.events[t].Time, Seeder: c}
}

// Seed returns the seed of the last apply CallEnv: of its event's identity
// and its operation.
func (c *callEnvs) Seed() [2]uint64 {
	t, op := c.t, c.op
	if t < 0 || t >= len(c.events) {
		return seed([2]uint64{uint64(t), 0}, domainApply, uint64(op))
	}
	e := &c.ids[t]
	if e.gen != c.gen {
		e.id, e.gen = c.identity(&c.events[t]), c.gen
	}
	return seed(e.id, domainApply, uint64(op))
}

// seed mixes an identity with a domain and an operation index into the
// seed of a random stream.
func seed(id [2]uint64, domain, op uint64) [2]uint64 {
	const k0, k1 = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f
	return [2]uint64{
		mix64(id[0] ^ domain*k0 ^ mix64(op+k1)),
		mix64(id[1] ^ domain*k1 ^ mix64(op+k0)),
	}
}

// mix64 is SplitMix64's finaliser, a bijection that spreads every input
// bit over the output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// SetEvents gives a transactional instance the events of the batch whose
// operations ApplyOp runs next, numbered as ApplyOp's event argument
// numbers them (the whole batch, as txn numbers its transactions). The
// instance keeps the slice, not a copy, until the next SetEvents: the
// caller must not change the events meanwhile. SetEvents(nil) forgets them.
//
// During the apply of operation op of event t, the guest's clock then reads
// events[t].Time and its random stream is seeded from events[t]'s identity
// and op, so every execution of the operation (after an abort, on another
// worker, after a recovery that cuts the batch differently) sees the same
// clock and draws the same bytes. Without SetEvents the clock reads the
// Unix epoch and the stream is seeded from t and op: the same within a
// batch, not across batches cut differently.
//
// Each worker's instance needs the events: call SetEvents on every
// instance that applies operations of the batch, before the scheduler runs.
// It costs a few stores; identities are hashed on first use and cached for
// the batch.
func (i *Instance) SetEvents(events []abi.Record) { i.envs.setEvents(events) }
