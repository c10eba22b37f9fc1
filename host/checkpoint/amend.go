package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/state"
)

// Amended reports what one Amend or PutCut sent.
type Amended struct {
	// Whole is true when the checkpoint was put whole: the bucket's
	// checkpoint of the group held another export that this Bucket cannot
	// send a delta against, or there was none.
	Whole bool
	// Delta is true when the checkpoint was sent as a delta against the
	// export the bucket's object holds (see Deltas in the package
	// documentation).
	Delta bool
	// Bytes is what was sent: the object's size when whole, the delta's
	// and the metadata's when a delta, else the size of the metadata.
	Bytes int64
}

// Amend makes g key group g.KeyGroup's checkpoint, as Put does, but sends
// its export only when the bucket's checkpoint of the group does not hold
// that export already. When it does (the group's state did not change
// since it was put, though its metadata may have: its floors advance with
// records that wrote nothing), Amend replaces the checkpoint's metadata,
// generation and host alone, in the object's NATS metadata, and the
// export already in the bucket is not sent again. A reader (Get, Load,
// Replica.Install) then sees the new metadata with the export it had, or
// the checkpoint as it was, never a mix: the object's content digest
// (sha256 of metadata and export) is replaced with the metadata, and a
// reader checks the amended metadata against it and against the export
// it holds (ErrCorrupt otherwise).
//
// When the export changed and the object holds an export this Bucket put
// (and indexed), Amend sends what changed, as a delta against it, when
// the delta is at most half the export's size, and the whole checkpoint
// otherwise.
//
// Amend compares exports by the SHA-256 that Put records with each
// checkpoint; a checkpoint put by a build that did not record it is
// replaced whole. Like Put, it expects a single writer of the group at a
// time (the group's owner).
func (b *Bucket) Amend(ctx context.Context, g Group) (Amended, error) {
	obj := ObjectName(g.KeyGroup)
	kg, _, err := state.ExportedKeyGroup(g.Data)
	if err != nil {
		return Amended{}, fmt.Errorf("checkpoint: amend %s in bucket %s: %w", obj, b.name, err)
	}
	if g.KeyGroup < 0 || kg != g.KeyGroup {
		return Amended{}, fmt.Errorf("checkpoint: amend %s in bucket %s: the data is an export of key group %d", obj, b.name, kg)
	}
	info, err := b.obs.GetInfo(ctx, obj)
	if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return Amended{}, fmt.Errorf("checkpoint: amend %s in bucket %s: %w", obj, b.name, err)
	}
	if err != nil {
		n, err := b.put(ctx, g)
		return Amended{Whole: true, Bytes: n}, err
	}
	if g.Host == "" {
		g.Host = b.host
	}
	export := sha256.Sum256(g.Data)
	if info.Metadata[metaExport] == hex.EncodeToString(export[:]) {
		if err := b.updateMeta(ctx, info, g, export, "", "", 0); err != nil {
			return Amended{}, err
		}
		b.amends.Add(1)
		b.amendBytes.Add(int64(len(g.Meta)))
		return Amended{Bytes: int64(len(g.Meta))}, nil
	}
	if n, ok, err := b.putDelta(ctx, info, g, export); ok || err != nil {
		return Amended{Delta: ok, Bytes: n}, err
	}
	n, err := b.put(ctx, g)
	return Amended{Whole: true, Bytes: n}, err
}

// updateMeta replaces the metadata, generation, host and epoch of the
// object info describes with g's, its content digest with that of g's
// metadata and export (whose SHA-256 is export), and its delta with the
// delta object name of NATS digest delta and size bytes ("": the one it
// has, when the export did not change, or none).
func (b *Bucket) updateMeta(ctx context.Context, info *jetstream.ObjectInfo, g Group, export [sha256.Size]byte, name, delta string, size int64) error {
	content := contentSum(g.Meta, g.Data)
	md := maps.Clone(info.Metadata)
	md[metaGeneration] = strconv.FormatUint(g.Generation, 10)
	md[metaHost] = g.Host
	md[metaEpoch] = strconv.FormatUint(g.Epoch, 10)
	md[metaContent] = hex.EncodeToString(content[:])
	md[metaExport] = hex.EncodeToString(export[:])
	md[metaAmended] = base64.StdEncoding.EncodeToString(g.Meta)
	if delta != "" {
		md[metaDelta], md[metaDeltaName], md[metaDeltaSize] = delta, name, strconv.FormatInt(size, 10)
	}
	err := b.obs.UpdateMeta(ctx, info.Name, jetstream.ObjectMeta{Name: info.Name, Description: info.Description, Headers: info.Headers, Metadata: md})
	if err != nil {
		return fmt.Errorf("checkpoint: amend %s in bucket %s: %w", info.Name, b.name, err)
	}
	b.mu.Lock()
	k := b.known[g.KeyGroup]
	b.known[g.KeyGroup] = known{content: content, base: k.base}
	b.mu.Unlock()
	return nil
}

// amended returns f with the epoch recorded in info, and the metadata,
// generation and host that Amend recorded there, the object's NATS description, if any: a copy of f
// checked against the object's content digest. f itself is unchanged.
func (b *Bucket) amended(info *jetstream.ObjectInfo, f *fetched) (*fetched, error) {
	corrupt := func(fault string) error {
		return &ObjectError{Bucket: b.name, Object: info.Name, Kind: ErrCorrupt, Fault: fault}
	}
	var epoch uint64
	if e, ok := info.Metadata[metaEpoch]; ok {
		var err error
		if epoch, err = strconv.ParseUint(e, 10, 64); err != nil {
			return nil, corrupt(fmt.Sprintf("its epoch %q", e))
		}
	}
	enc, ok := info.Metadata[metaAmended]
	if !ok {
		if f.Epoch == epoch {
			return f, nil
		}
		g := *f.Group
		g.Epoch = epoch
		c := *f
		c.Group = &g
		return &c, nil
	}
	meta, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, corrupt("its amended metadata is not base64")
	}
	gen, err := strconv.ParseUint(info.Metadata[metaGeneration], 10, 64)
	if err != nil {
		return nil, corrupt(fmt.Sprintf("its amended generation %q", info.Metadata[metaGeneration]))
	}
	sum := contentSum(meta, f.Data)
	if info.Metadata[metaContent] != hex.EncodeToString(sum[:]) {
		return nil, corrupt("its amended metadata and its export do not match its content digest")
	}
	g := *f.Group
	g.Meta, g.Generation, g.Host, g.Epoch = meta, gen, info.Metadata[metaHost], epoch
	c := *f
	c.Group = &g
	return &c, nil
}
