package checkpoint

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/sluicehq/sluice/state"
)

// Shipped reports what one Ship put.
type Shipped struct {
	Groups []int // the key groups put, in the order given
	Bytes  int64 // the size of the objects put
}

// Ship puts the checkpoint of each of groups whose state changed since
// this Bucket last put or loaded it, with meta(kg) as its metadata, and
// reports what it put. A group whose generation in st is the one last put
// costs nothing; one whose generation moved is exported, and put unless
// its export and metadata are those the bucket already holds (an import
// of the bucket's own checkpoint, or a write that changed nothing). The
// first Ship of a Bucket reads what the bucket holds with List, so that a
// restarted host does not put again what it put before.
//
// Call Ship at a batch boundary, after the Commit that follows the
// groups' last writes and while no writer of them runs:
// state.Store.ExportKeyGroup exports committed state only and refuses a
// group with uncommitted changes (state.ErrUncommitted), and a group whose
// generation moves during its export is refused too. meta is called once
// per group that is exported. Ship stops at the first failure; the groups
// put before it are in the Shipped it returns.
func (b *Bucket) Ship(ctx context.Context, st *state.Store, groups []int, meta func(kg int) []byte) (Shipped, error) {
	var out Shipped
	for _, kg := range groups {
		if kg < 0 || kg >= st.KeyGroups() {
			return out, fmt.Errorf("checkpoint: ship key group %d to bucket %s: out of range 0..%d", kg, b.name, st.KeyGroups()-1)
		}
	}
	if err := b.recover(ctx); err != nil {
		return out, err
	}
	for _, kg := range groups {
		gen := st.Generation(kg)
		b.mu.Lock()
		k, ok := b.known[kg]
		b.mu.Unlock()
		if ok && k.genKnown && k.gen == gen {
			continue
		}
		data, err := st.ExportKeyGroup(kg)
		if err != nil {
			return out, fmt.Errorf("checkpoint: ship key group %d to bucket %s: %w", kg, b.name, err)
		}
		if now := st.Generation(kg); now != gen {
			return out, fmt.Errorf("checkpoint: ship key group %d to bucket %s: its generation moved from %d to %d during the export (ship at a batch boundary)",
				kg, b.name, gen, now)
		}
		var m []byte
		if meta != nil {
			m = meta(kg)
		}
		content := contentSum(m, data)
		if ok && k.content == content {
			b.remember(kg, content, gen)
			continue
		}
		g := Group{KeyGroup: kg, Generation: gen, Meta: m, Data: data}
		var n int64
		if k.base != nil {
			// This Bucket put the group's object: send what changed.
			am, aerr := b.Amend(ctx, g)
			n, err = am.Bytes, aerr
		} else {
			n, err = b.put(ctx, g)
		}
		if err != nil {
			return out, err
		}
		b.remember(kg, content, gen)
		out.Groups = append(out.Groups, kg)
		out.Bytes += n
	}
	if len(out.Groups) > 0 {
		b.log.Debug("checkpoints shipped", "groups", len(out.Groups), "bytes", out.Bytes)
	}
	return out, nil
}

// remember records that the bucket holds content for kg, exported at
// generation gen of this process's store.
func (b *Bucket) remember(kg int, content [sha256.Size]byte, gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.known[kg] = known{content: content, gen: gen, genKnown: true, base: b.known[kg].base}
}

// recover fills what the Bucket knows of the bucket from List, once.
func (b *Bucket) recover(ctx context.Context) error {
	b.mu.Lock()
	done := b.recovered
	b.mu.Unlock()
	if done {
		return nil
	}
	infos, err := b.List(ctx)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, in := range infos {
		if _, ok := b.known[in.KeyGroup]; !ok {
			b.known[in.KeyGroup] = known{content: in.content}
		}
	}
	b.recovered = true
	return nil
}

// Forget drops what the Bucket remembers of groups' checkpoints, so that
// the next Ship of them exports and compares them again. A host calls it
// for the groups it hands over: another host may replace their
// checkpoints before they come back.
func (b *Bucket) Forget(groups ...int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, kg := range groups {
		delete(b.known, kg)
	}
}
