package memstore_test

import (
	"bytes"
	"fmt"
	"maps"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/memstore"
)

// TestModel runs random sequences of Puts, Deletes, Compacts and Clones
// against a Go map and requires Get, GetBatch, All and Len to agree with
// it after each step, and every value read earlier to be unchanged (the
// store never writes a record in place).
func TestModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := memstore.New()
		model := map[txn.Key]string{}
		type read struct {
			v    []byte
			want string
		}
		var reads []read
		keys := rapid.IntRange(1, 300).Draw(rt, "keys")
		key := func() txn.Key {
			return txn.Key{Table: uint32(rapid.IntRange(0, 2).Draw(rt, "table")), Key: fmt.Sprint(rapid.IntRange(0, keys).Draw(rt, "key"))}
		}
		if rapid.Bool().Draw(rt, "reserve") {
			s.Reserve(1, keys, 8)
		}
		for range rapid.IntRange(1, 400).Draw(rt, "steps") {
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0:
				k := key()
				s.Delete(k)
				delete(model, k)
			case 1:
				s.Compact()
			case 2:
				c := s.Clone()
				s.Put(txn.Key{Key: "only in the original"}, []byte("x"))
				s.Delete(txn.Key{Key: "only in the original"})
				s = c
			default:
				k := key()
				v := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(rt, "value")
				s.Put(k, v)
				model[k] = string(v)
			}
			k := key()
			v, ok, err := s.Get(k)
			want, wantOK := model[k]
			if err != nil || ok != wantOK || string(v) != want {
				rt.Fatalf("Get(%v) = %q, %v, %v; want %q, %v", k, v, ok, err, want, wantOK)
			}
			if ok {
				reads = append(reads, read{v, want})
			}
		}
		for _, r := range reads {
			if string(r.v) != r.want {
				rt.Fatalf("a value read earlier changed from %q to %q", r.want, r.v)
			}
		}
		got := map[txn.Key]string{}
		for k, v := range s.All() {
			if _, dup := got[k]; dup {
				rt.Fatalf("All yields %v twice", k)
			}
			got[k] = string(v)
		}
		if !maps.Equal(got, model) || s.Len() != len(model) {
			rt.Fatalf("All: %d keys, Len %d, want %d: %v, want %v", len(got), s.Len(), len(model), got, model)
		}
		var ks []txn.Key
		for k := range model {
			ks = append(ks, k)
		}
		for i := range 40 {
			ks = append(ks, txn.Key{Table: uint32(i % 5), Key: fmt.Sprint("absent", i)})
		}
		hs := make([]uint64, len(ks))
		for i, k := range ks {
			hs[i] = txn.KeyHash(s.Seed(), k)
		}
		out := make([]txn.Value, len(ks))
		if _, err := s.GetBatch(ks, hs, out); err != nil {
			rt.Fatal(err)
		}
		for i, k := range ks {
			want, ok := model[k]
			if out[i].Found != ok || string(out[i].Bytes) != want {
				rt.Fatalf("GetBatch: %v = %q, %v; want %q, %v", k, out[i].Bytes, out[i].Found, want, ok)
			}
		}
	})
}

// TestValuesCopied checks that Put keeps a copy of the value, and that a
// value put from the store's own value survives the arena's growth.
func TestValuesCopied(t *testing.T) {
	s := memstore.New()
	v := []byte("one")
	s.Put(txn.Key{Key: "a"}, v)
	v[0] = 'X'
	for i := range 10_000 {
		own, _, _ := s.Get(txn.Key{Key: "a"})
		s.Put(txn.Key{Key: "a"}, own)
		s.Put(txn.Key{Key: fmt.Sprint(i)}, bytes.Repeat([]byte{'v'}, 100))
	}
	if got, ok, _ := s.Get(txn.Key{Key: "a"}); !ok || string(got) != "one" {
		t.Errorf("a = %q, %v; want one", got, ok)
	}
}
