package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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
// replacing the previous cut, and returns the object's size. The
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
func (b *Bucket) PutCut(ctx context.Context, epoch uint64, groups []Group) (int64, error) {
	fail := func(format string, args ...any) (int64, error) {
		return 0, fmt.Errorf("checkpoint: put %s in bucket %s: %s", CutObject, b.name, fmt.Sprintf(format, args...))
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
	_, err := b.obs.Put(ctx, jetstream.ObjectMeta{
		Name: CutObject,
		Metadata: map[string]string{
			metaGroups: strconv.Itoa(len(sorted)),
			metaHost:   b.host,
			metaEpoch:  strconv.FormatUint(epoch, 10),
		},
	}, bytes.NewReader(out))
	if err != nil {
		return 0, fmt.Errorf("checkpoint: put %s in bucket %s: %w", CutObject, b.name, err)
	}
	b.puts.Add(1)
	b.putBytes.Add(int64(len(out)))
	return int64(len(out)), nil
}

// HasCut reports whether the bucket holds a cut, without downloading it.
func (b *Bucket) HasCut(ctx context.Context) (bool, error) {
	_, ok, err := b.CutInfo(ctx)
	return ok, err
}

// CutInfo describes the bucket's cut without downloading it: KeyGroups is
// its number of groups, Host its writer, Size and Time the object's; the
// other fields are zero. It reports false when the bucket holds none.
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
	return Info{KeyGroups: groups, Host: o.Metadata[metaHost], Size: int64(o.Size), Time: o.ModTime}, true, nil
}

// GetCut fetches and checks the pipeline's cut (see PutCut) and returns
// its groups in key group order, each with the cut's epoch. A missing cut
// is an error matching ErrNotFound; a damaged one, or one of another key
// group count than groups, an ObjectError matching ErrCorrupt or
// ErrForeign, naming the bucket, the object and the fault.
func (b *Bucket) GetCut(ctx context.Context, groups int) ([]*Group, error) {
	env, info, err := b.download(ctx, CutObject)
	if err != nil {
		return nil, err
	}
	refuse := func(kind error, format string, args ...any) error {
		return &ObjectError{Bucket: b.name, Object: CutObject, Kind: kind, Fault: fmt.Sprintf(format, args...)}
	}
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
	b.gets.Add(1)
	b.getBytes.Add(int64(len(env)))
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
