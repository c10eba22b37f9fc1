package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/state"
)

// Each object that can have a delta (a group's, the cut) has two delta
// objects, its name and ".delta.0" or ".delta.1", written in turn: a
// writer puts the one its object's metadata does not name, so a reader
// still downloading the delta the metadata named before is not cut off by
// the next write (a download whose chunks are purged under it waits for
// them until it times out), only by the one after.
const deltaInfix = ".delta."

// deltaObject returns the name of the delta object of obj that md, obj's
// metadata, names, or "" when it names none of obj's; with next, the name
// of the one a writer puts next.
func deltaObject(obj string, md map[string]string, next bool) string {
	cur := md[metaDeltaName]
	if cur != obj+deltaInfix+"0" && cur != obj+deltaInfix+"1" {
		cur = ""
	}
	if !next {
		return cur
	}
	if cur == obj+deltaInfix+"0" {
		return obj + deltaInfix + "1"
	}
	return obj + deltaInfix + "0"
}

// isDelta reports whether an object's name is a delta object's.
func isDelta(name string) bool { return strings.Contains(name, deltaInfix) }

// metaDeltaOf is the metadata key of a delta object naming the object it
// applies to.
const metaDeltaOf = "sluice-delta-of"

// base is an export that this Bucket put whole, as the bucket holds it: a
// later checkpoint of the group can be sent as a delta against it while
// the group's object is the one put (its NATS digest is digest).
type base struct {
	index  *state.ExportIndex
	digest string
}

// newBase indexes data, the export of an object just put whose NATS
// digest is digest. An export that cannot be indexed gives no base: the
// next checkpoint of the group is put whole.
func (b *Bucket) newBase(data []byte, digest string) *base {
	x, err := state.IndexExport(data)
	if err != nil {
		b.log.Warn("a checkpoint's export could not be indexed; the group's next checkpoint is put whole", "err", err)
		return nil
	}
	return &base{index: x, digest: digest}
}

// putDelta sends g as a delta against the export of the object info
// describes, when this Bucket put that object and the delta is at most
// half of g's export: it puts the delta object, then replaces the
// object's metadata with g's and the delta's digest, which is what makes
// the delta part of the checkpoint. export is the SHA-256 of g.Data. It
// reports the bytes sent and whether it sent a delta; when it did not,
// nothing was written.
func (b *Bucket) putDelta(ctx context.Context, info *jetstream.ObjectInfo, g Group, export [sha256.Size]byte) (int64, bool, error) {
	b.mu.Lock()
	bs := b.known[g.KeyGroup].base
	b.mu.Unlock()
	if bs == nil || bs.digest != info.Digest {
		return 0, false, nil
	}
	delta, err := state.ExportDelta(bs.index, g.Data)
	if err != nil || 2*len(delta) > len(g.Data) {
		return 0, false, nil
	}
	name := deltaObject(info.Name, info.Metadata, true)
	dinfo, err := b.obs.Put(ctx, jetstream.ObjectMeta{Name: name, Metadata: map[string]string{metaDeltaOf: info.Name}}, bytes.NewReader(delta))
	if err != nil {
		return 0, false, fmt.Errorf("checkpoint: put %s in bucket %s: %w", name, b.name, err)
	}
	if err := b.updateMeta(ctx, info, g, export, name, dinfo.Digest, int64(len(delta))); err != nil {
		return 0, false, err
	}
	n := int64(len(delta) + len(g.Meta))
	b.deltas.Add(1)
	b.deltaBytes.Add(n)
	return n, true, nil
}

// errDeltaReplaced is withDelta's error for a delta object replaced
// between the reads of its object's metadata and of the delta.
var errDeltaReplaced = errors.New("its delta was replaced while it was read")

// withDelta returns the checkpoint the object info describes, whose
// envelope f holds (f read from the object now, or a copy of an earlier
// read): the envelope's export with the object's delta applied when it
// has one, and the metadata Amend recorded. A delta that f holds already
// is not fetched again. It returns the bytes it fetched.
func (b *Bucket) withDelta(ctx context.Context, info *jetstream.ObjectInfo, f *fetched) (*fetched, int64, error) {
	want := info.Metadata[metaDelta]
	if want == "" {
		if f.delta != nil {
			c := *f.Group
			c.Data = f.baseData
			f = &fetched{Group: &c, groups: f.groups, baseData: f.baseData}
		}
		out, err := b.amended(info, f)
		return out, 0, err
	}
	if f.deltaDigest == want {
		out, err := b.amended(info, f) // f.Data has the delta applied
		return out, 0, err
	}
	name := deltaObject(info.Name, info.Metadata, false)
	if name == "" {
		return nil, 0, &ObjectError{Bucket: b.name, Object: info.Name, Kind: ErrCorrupt,
			Fault: fmt.Sprintf("its metadata names the delta object %q, not one of its own", info.Metadata[metaDeltaName])}
	}
	delta, err := b.readDelta(ctx, name, want)
	n := int64(len(delta))
	if err != nil {
		return nil, n, err
	}
	data, err := state.ApplyExportDelta(f.baseData, delta)
	if err != nil {
		return nil, n, &ObjectError{Bucket: b.name, Object: name, Kind: ErrCorrupt,
			Fault: "it does not apply to " + info.Name, Cause: err}
	}
	c := *f.Group
	c.Data = data
	out, err := b.amended(info, &fetched{Group: &c, groups: f.groups, baseData: f.baseData, delta: delta, deltaDigest: want})
	return out, n, err
}

// readDelta downloads the delta object name and checks that its NATS
// digest is want, the one its object's metadata names; it fails with
// errDeltaReplaced when the delta is another (a writer replaced it since
// the metadata was read) or gone. The bytes it returns, even with an
// error, are those it downloaded.
func (b *Bucket) readDelta(ctx context.Context, name, want string) ([]byte, error) {
	delta, info, err := b.download(ctx, name)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, errDeltaReplaced
	case err != nil:
		return nil, err
	case info.Digest != want:
		return delta, errDeltaReplaced
	}
	return delta, nil
}

// deltaSize returns the size of the delta that md, an object's metadata,
// names; 0 without one.
func deltaSize(md map[string]string) int64 {
	if md[metaDelta] == "" {
		return 0
	}
	n, _ := strconv.ParseInt(md[metaDeltaSize], 10, 64)
	return n
}
