package abi

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// group is a decoded group, its records copied.
type group struct {
	head    Record
	members []Record
}

func encodeGroups(gs ...group) []byte {
	b := AppendBatchHeader(nil, uint32(len(gs)))
	for i := range gs {
		b = AppendGroup(b, &gs[i].head, gs[i].members)
	}
	return b
}

// decodeGroups decodes every group of batch, reading each group's members
// whole when all is set, and only the first member otherwise (the
// decoder skips the rest).
func decodeGroups(batch []byte, all bool) ([]group, error) {
	d, err := NewGroupDecoder(batch)
	if err != nil {
		return nil, err
	}
	var out []group
	var h, r Record
	for members, ok := d.Next(&h); ok; members, ok = d.Next(&h) {
		g := group{head: h}
		g.head.Headers = append([]Header(nil), h.Headers...)
		for members.Next(&r) {
			c := r
			c.Headers = append([]Header(nil), r.Headers...)
			g.members = append(g.members, c)
			if !all {
				break
			}
		}
		out = append(out, g)
	}
	return out, d.Err()
}

func sampleGroups() []group {
	return []group{
		{head: Record{Origin: 0, Key: []byte("a"), Time: 9, Value: []byte{1, 0, 0, 0, 0, 0, 0, 0}},
			members: []Record{{Origin: 0, Key: []byte("a"), Value: []byte("x")}, {Origin: 1, Key: []byte("a"), Time: 9}}},
		{head: Record{Origin: 1, Key: []byte("b"), Headers: []Header{{Name: []byte(HeaderFiring), Value: []byte(FiringLate)}}}},
		{head: Record{Origin: 2}, members: []Record{{Origin: 2, Headers: []Header{{Name: []byte("h"), Value: []byte("v")}}}}},
	}
}

func TestGroupRoundTrip(t *testing.T) {
	gs := sampleGroups()
	b := encodeGroups(gs...)
	n := BatchHeaderSize
	for i := range gs {
		n += GroupSize(&gs[i].head, gs[i].members)
	}
	if n != len(b) {
		t.Fatalf("GroupSize sums to %d, encoding is %d bytes", n, len(b))
	}
	got, err := decodeGroups(b, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(gs) {
		t.Fatalf("decoded %d groups, want %d", len(got), len(gs))
	}
	for i := range gs {
		if !equalRecords([]Record{got[i].head}, []Record{gs[i].head}) || !equalRecords(got[i].members, gs[i].members) {
			t.Errorf("group %d: decoded %+v, want %+v", i, got[i], gs[i])
		}
	}
	// Members left unread are skipped.
	partial, err := decodeGroups(b, false)
	if err != nil || len(partial) != len(gs) || !bytes.Equal(partial[2].members[0].Headers[0].Value, []byte("v")) {
		t.Fatalf("reading one member per group: %+v, %v", partial, err)
	}
	if again := encodeGroups(got...); !bytes.Equal(again, b) {
		t.Fatalf("re-encoded to %x, want %x", again, b)
	}
}

func TestWindowTime(t *testing.T) {
	b := AppendWindowTime(nil, -5)
	if v, ok := WindowTime(b); !ok || v != -5 {
		t.Fatalf("WindowTime(%x) = %d, %v", b, v, ok)
	}
	if _, ok := WindowTime(b[:7]); ok {
		t.Fatal("WindowTime accepted 7 bytes")
	}
}

func TestGroupDecoderRefuses(t *testing.T) {
	good := encodeGroups(sampleGroups()...)
	for _, tc := range []struct {
		name  string
		batch []byte
		want  string
	}{
		{"short", []byte{1, 0}, "group batch header at byte 0: batch is 2 bytes"},
		{"count", []byte{9, 0, 0, 0}, "count 9 does not fit"},
		{"trailing", append(bytes.Clone(good), 0), "1 trailing bytes after the last of 3 groups"},
		{"truncated", good[:len(good)-1], "member 0 of group 2"},
		{"head", encodeGroups(group{head: Record{Input: 1}}), "head of group 0"},
		{"members count", append(encodeBatch(Record{Key: []byte("abcd")}), 0, 0), "member count of group 0 at byte 40: truncated"},
		{"members too many", append(encodeBatch(Record{}), 5, 0, 0, 0), "member count 5 does not fit"},
		{"member", encodeGroups(group{head: Record{}, members: []Record{{}, {Input: 2}}}), "member 1 of group 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, all := range []bool{true, false} {
				_, err := decodeGroups(tc.batch, all)
				var ge *GroupDecodeError
				if !errors.As(err, &ge) || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("all %v: error %v, want a *GroupDecodeError containing %q", all, err, tc.want)
				}
			}
		})
	}
}

// FuzzGroupDecoder: the group decoder never panics, and any group batch it
// accepts re-encodes to the same bytes; reading every member or only some
// accepts the same batches.
func FuzzGroupDecoder(f *testing.F) {
	f.Add(encodeGroups(sampleGroups()...))
	f.Add(encodeGroups())
	f.Add(encodeGroups(group{}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, batch []byte) {
		gs, err := decodeGroups(batch, true)
		_, perr := decodeGroups(batch, false)
		if (err == nil) != (perr == nil) {
			t.Fatalf("reading all members: %v; reading one: %v", err, perr)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if again := encodeGroups(gs...); !bytes.Equal(again, batch) {
			t.Fatalf("accepted %x but re-encodes to %x", batch, again)
		}
	})
}
