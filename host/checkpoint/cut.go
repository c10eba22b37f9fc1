package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/state"
)

// CutObject is the name of the object that holds a pipeline's cut: every
// key group's checkpoint exported at one batch boundary (see PutCut).
const CutObject = "cut"

// The envelope of a cut, version 1. Integers are big-endian; uvarint is
// encoding/binary's.
//
//	"SLUICECT"          magic, 8 bytes
//	u8  version (1)
//	u32 key group count, n
//	n times: uvarint len, a key group's envelope (see encode), in key group order
//	u32 CRC-32 (Castagnoli) of everything before
const (
	cutMagic   = "SLUICECT"
	cutVersion = 1
)

// PutCut writes groups, the checkpoint of every key group of the pipeline
// exported at one batch boundary, as the pipeline's cut (CutObject),
// replacing the previous cut, and reports what it sent: the cut whole
// (Amended.Whole), or a delta against the cut this Bucket put whole
// (Amended.Delta; see Cuts in the package documentation). The
// replacement is atomic: a reader sees the previous cut or this one whole,
// never a mixture, which per-group objects cannot promise (a writer that
// stops between two puts leaves groups from two boundaries). A pipeline
// whose state is not partitioned by its input's key groups (a
// transactional operator's, whose transaction routed by one group's key
// writes keys of others) needs that: its groups are consistent with each
// other only at one boundary, and a failover must load them all from one.
//
// groups must hold each key group once, exports of stores of one key
// group count equal to their number; epoch is the plugin versions epoch
// the writer runs (Group.Epoch); the groups' Host, when empty, is the
// Bucket's. The groups' Epoch fields are ignored.
func (b *Bucket) PutCut(ctx context.Context, epoch uint64, groups []Group) (Amended, error) {
	fail := func(format string, args ...any) (Amended, error) {
		return Amended{}, fmt.Errorf("checkpoint: put %s in bucket %s: %s", CutObject, b.name, fmt.Sprintf(format, args...))
	}
	if len(groups) == 0 {
		return fail("no key groups")
	}
	sorted := slices.Clone(groups)
	slices.SortFunc(sorted, func(x, y Group) int { return x.KeyGroup - y.KeyGroup })
	out := append([]byte(cutMagic), cutVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(sorted)))
	for i, g := range sorted {
		kg, n, err := state.ExportedKeyGroup(g.Data)
		if err != nil {
			return fail("key group %d: %v", g.KeyGroup, err)
		}
		if kg != g.KeyGroup || kg != i || n != len(sorted) {
			return fail("a cut holds key groups 0 to %d, each once, exported from stores of %d key groups; entry %d is an export of key group %d of %d, given as key group %d",
				len(sorted)-1, len(sorted), i, kg, n, g.KeyGroup)
		}
		if g.Host == "" {
			g.Host = b.host
		}
		env := encode(g)
		out = binary.AppendUvarint(out, uint64(len(env)))
		out = append(out, env...)
	}
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
	if n, ok, err := b.putCutDelta(ctx, epoch, sorted, len(out)); ok || err != nil {
		return Amended{Delta: ok, Bytes: n}, err
	}
	info, err := b.obs.Put(ctx, jetstream.ObjectMeta{
		Name: CutObject,
		Metadata: map[string]string{
			metaGroups: strconv.Itoa(len(sorted)),
			metaHost:   b.host,
			metaEpoch:  strconv.FormatUint(epoch, 10),
		},
	}, bytes.NewReader(out))
	if err != nil {
		return Amended{}, fmt.Errorf("checkpoint: put %s in bucket %s: %w", CutObject, b.name, err)
	}
	b.puts.Add(1)
	b.putBytes.Add(int64(len(out)))
	// What the next cut is sent as a delta against.
	base := &cutBase{digest: info.Digest, size: len(out), groups: make([]*state.ExportIndex, len(sorted))}
	for i, g := range sorted {
		if base.groups[i], err = state.IndexExport(g.Data); err != nil {
			base = nil // checked above; the next cut is put whole
			break
		}
	}
	b.mu.Lock()
	b.cut = base
	b.mu.Unlock()
	return Amended{Whole: true, Bytes: int64(len(out))}, nil
}

// cutBase is the cut a Bucket put whole, while the bucket holds it: the
// next cut can be sent as a delta against it.
type cutBase struct {
	digest string               // the cut object's NATS digest
	size   int                  // its size
	groups []*state.ExportIndex // each group's export, indexed
}

// The delta of a cut, version 1: each group's checkpoint as a delta
// against the cut object's. Integers are big-endian; uvarint is
// encoding/binary's.
//
//	"SLUICECD"          magic, 8 bytes
//	u8  version (1)
//	u32 key group count, n
//	n times, in key group order:
//	  u64 generation
//	  uvarint len, host
//	  uvarint len, metadata
//	  uvarint len, the export's delta (state.ExportDelta)
//	u32 CRC-32 (Castagnoli) of everything before
const (
	cutDeltaMagic   = "SLUICECD"
	cutDeltaVersion = 1
)

// putCutDelta sends groups (sorted, checked) as a delta against the cut
// this Bucket put whole, when the bucket still holds that cut and the
// delta is at most half its size (whole, the cut would be size bytes): it
// puts the delta object, then replaces the cut object's metadata with the
// epoch, the host and the delta's digest, which makes the delta part of
// the cut. It reports the bytes sent and whether it sent a delta; when it
// did not, nothing was written.
func (b *Bucket) putCutDelta(ctx context.Context, epoch uint64, groups []Group, size int) (int64, bool, error) {
	b.mu.Lock()
	base := b.cut
	b.mu.Unlock()
	if base == nil || len(base.groups) != len(groups) {
		return 0, false, nil
	}
	info, err := b.obs.GetInfo(ctx, CutObject)
	if err != nil || info.Digest != base.digest {
		return 0, false, nil // put whole: the bucket's cut is not the one indexed
	}
	out := append([]byte(cutDeltaMagic), cutDeltaVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(groups)))
	for i, g := range groups {
		d, err := state.ExportDelta(base.groups[i], g.Data)
		if err != nil {
			return 0, false, nil
		}
		if g.Host == "" {
			g.Host = b.host
		}
		out = binary.BigEndian.AppendUint64(out, g.Generation)
		for _, f := range [][]byte{[]byte(g.Host), g.Meta, d} {
			out = binary.AppendUvarint(out, uint64(len(f)))
			out = append(out, f...)
		}
		if 2*len(out) > size {
			return 0, false, nil
		}
	}
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
	name := deltaObject(CutObject, info.Metadata, true)
	dinfo, err := b.obs.Put(ctx, jetstream.ObjectMeta{Name: name, Metadata: map[string]string{metaDeltaOf: CutObject}}, bytes.NewReader(out))
	if err != nil {
		return 0, false, fmt.Errorf("checkpoint: put %s in bucket %s: %w", name, b.name, err)
	}
	md := maps.Clone(info.Metadata)
	md[metaHost] = b.host
	md[metaEpoch] = strconv.FormatUint(epoch, 10)
	md[metaDelta], md[metaDeltaName], md[metaDeltaSize] = dinfo.Digest, name, strconv.Itoa(len(out))
	err = b.obs.UpdateMeta(ctx, CutObject, jetstream.ObjectMeta{Name: CutObject, Description: info.Description, Headers: info.Headers, Metadata: md})
	if err != nil {
		return 0, false, fmt.Errorf("checkpoint: put %s in bucket %s: %w", CutObject, b.name, err)
	}
	b.deltas.Add(1)
	b.deltaBytes.Add(int64(len(out)))
	return int64(len(out)), true, nil
}

// applyCutDelta applies delta, a cut's delta, to gs, the cut object's
// groups, in place.
func applyCutDelta(gs []*Group, delta []byte) error {
	head := len(cutDeltaMagic) + 1 + 4
	if len(delta) < head+4 || string(delta[:len(cutDeltaMagic)]) != cutDeltaMagic {
		return errors.New("not a cut delta")
	}
	body, sum := delta[:len(delta)-4], binary.BigEndian.Uint32(delta[len(delta)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return errors.New("checksum mismatch: the delta is damaged")
	}
	if v := body[len(cutDeltaMagic)]; v != cutDeltaVersion {
		return fmt.Errorf("cut delta version %d; this build reads version %d", v, cutDeltaVersion)
	}
	if n := int(binary.BigEndian.Uint32(body[len(cutDeltaMagic)+1:])); n != len(gs) {
		return fmt.Errorf("the delta holds %d key groups, the cut %d", n, len(gs))
	}
	r := body[head:]
	for i, g := range gs {
		if len(r) < 8 {
			return fmt.Errorf("truncated at key group %d", i)
		}
		gen := binary.BigEndian.Uint64(r)
		r = r[8:]
		var fields [3][]byte
		for j := range fields {
			n, w := binary.Uvarint(r)
			if w <= 0 || n > uint64(len(r)-w) {
				return fmt.Errorf("truncated at key group %d", i)
			}
			fields[j], r = r[w:w+int(n)], r[w+int(n):]
		}
		data, err := state.ApplyExportDelta(g.Data, fields[2])
		if err != nil {
			return fmt.Errorf("key group %d: %w", i, err)
		}
		g.Generation, g.Host, g.Meta, g.Data = gen, string(fields[0]), fields[1], data
	}
	if len(r) != 0 {
		return fmt.Errorf("%d bytes after the last key group", len(r))
	}
	return nil
}

// HasCut reports whether the bucket holds a cut, without downloading it.
func (b *Bucket) HasCut(ctx context.Context) (bool, error) {
	_, ok, err := b.CutInfo(ctx)
	return ok, err
}

// CutInfo describes the bucket's cut without downloading it: KeyGroups is
// its number of groups, Host its writer, Size the object's and its delta's,
// Time the object's; the other fields are zero. It reports false when the bucket holds none.
func (b *Bucket) CutInfo(ctx context.Context) (Info, bool, error) {
	o, err := b.obs.GetInfo(ctx, CutObject)
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound):
		return Info{}, false, nil
	case err != nil:
		return Info{}, false, fmt.Errorf("checkpoint: bucket %s: %s: %w", b.name, CutObject, err)
	}
	groups, err := strconv.Atoi(o.Metadata[metaGroups])
	if err != nil {
		return Info{}, false, &ObjectError{Bucket: b.name, Object: CutObject, Kind: ErrForeign, Fault: fmt.Sprintf("key group count %q", o.Metadata[metaGroups])}
	}
	return Info{KeyGroups: groups, Host: o.Metadata[metaHost], Size: int64(o.Size) + deltaSize(o.Metadata), Time: o.ModTime}, true, nil
}

// GetCut fetches and checks the pipeline's cut (see PutCut) and returns
// its groups in key group order, each with the cut's epoch. A missing cut
// is an error matching ErrNotFound; a damaged one, or one of another key
// group count than groups, an ObjectError matching ErrCorrupt or
// ErrForeign, naming the bucket, the object and the fault.
func (b *Bucket) GetCut(ctx context.Context, groups int) ([]*Group, error) {
	for try := 0; ; try++ {
		gs, err := b.getCut(ctx, groups)
		if errors.Is(err, errDeltaReplaced) && try < maxDeltaRaces {
			continue // a cut was put meanwhile: read it
		}
		if errors.Is(err, errDeltaReplaced) {
			return nil, &ObjectError{Bucket: b.name, Object: CutObject, Kind: ErrCorrupt, Fault: err.Error()}
		}
		return gs, err
	}
}

// getCut is one read of GetCut; it fails with errDeltaReplaced when the
// cut's delta was replaced while it was read.
func (b *Bucket) getCut(ctx context.Context, groups int) ([]*Group, error) {
	env, info, err := b.download(ctx, CutObject)
	if err != nil {
		return nil, err
	}
	refuse := func(kind error, format string, args ...any) error {
		return &ObjectError{Bucket: b.name, Object: CutObject, Kind: kind, Fault: fmt.Sprintf(format, args...)}
	}
	n := int64(len(env))
	var epoch uint64
	if e, ok := info.Metadata[metaEpoch]; ok {
		if epoch, err = strconv.ParseUint(e, 10, 64); err != nil {
			return nil, refuse(ErrCorrupt, "its epoch %q", e)
		}
	}
	gs, err := decodeCut(env)
	if err != nil {
		return nil, refuse(ErrCorrupt, "%v", err)
	}
	if len(gs) != groups {
		return nil, refuse(ErrForeign, "it holds %d key groups; the pipeline has %d", len(gs), groups)
	}
	if want := info.Metadata[metaDelta]; want != "" {
		name := deltaObject(CutObject, info.Metadata, false)
		if name == "" {
			return nil, refuse(ErrCorrupt, "its metadata names the delta object %q, not one of its own", info.Metadata[metaDeltaName])
		}
		delta, err := b.readDelta(ctx, name, want)
		if err != nil {
			return nil, err
		}
		if err := applyCutDelta(gs, delta); err != nil {
			return nil, &ObjectError{Bucket: b.name, Object: name, Kind: ErrCorrupt, Fault: "it does not apply to " + CutObject, Cause: err}
		}
		n += int64(len(delta))
	}
	b.gets.Add(1)
	b.getBytes.Add(n)
	for _, g := range gs {
		g.Epoch = epoch
	}
	return gs, nil
}

// decodeCut checks and decodes a cut's envelope and the groups' own.
func decodeCut(env []byte) ([]*Group, error) {
	head := len(cutMagic) + 1 + 4
	if len(env) < head+4 || string(env[:len(cutMagic)]) != cutMagic {
		return nil, errors.New("not a cut envelope")
	}
	body, sum := env[:len(env)-4], binary.BigEndian.Uint32(env[len(env)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errors.New("checksum mismatch: the envelope is damaged")
	}
	if v := body[len(cutMagic)]; v != cutVersion {
		return nil, fmt.Errorf("cut envelope version %d; this build reads version %d", v, cutVersion)
	}
	n := int(binary.BigEndian.Uint32(body[len(cutMagic)+1:]))
	r := body[head:]
	gs := make([]*Group, 0, min(n, state.MaxKeyGroups))
	for i := range n {
		size, w := binary.Uvarint(r)
		if w <= 0 || size > uint64(len(r)-w) {
			return nil, fmt.Errorf("truncated at key group %d", i)
		}
		f, err := decode(r[w : w+int(size)])
		if err != nil {
			return nil, fmt.Errorf("key group %d: %w", i, err)
		}
		if f.KeyGroup != i || f.groups != n {
			return nil, fmt.Errorf("entry %d holds key group %d of %d; a cut holds key groups 0 to %d in order", i, f.KeyGroup, f.groups, n-1)
		}
		gs = append(gs, f.Group)
		r = r[w+int(size):]
	}
	if len(r) != 0 {
		return nil, fmt.Errorf("%d bytes after the last key group", len(r))
	}
	return gs, nil
}
