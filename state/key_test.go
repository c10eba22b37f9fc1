package state

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestKeyEncodingOrder checks that the key encoding round-trips and that
// byte order of encodings is (route, namespace, user) order.
func TestKeyEncodingOrder(t *testing.T) {
	part := rapid.SliceOfN(rapid.SampledFrom([]byte{0x00, 0x01, 0xff, 'a'}), 0, 4)
	rapid.Check(t, func(rt *rapid.T) {
		a := Key{part.Draw(rt, "ar"), part.Draw(rt, "an"), part.Draw(rt, "au")}
		b := Key{part.Draw(rt, "br"), part.Draw(rt, "bn"), part.Draw(rt, "bu")}
		ea := appendKey(nil, a.Route, a.Namespace, a.User)
		eb := appendKey(nil, b.Route, b.Namespace, b.User)
		for _, c := range []struct {
			k   Key
			enc []byte
		}{{a, ea}, {b, eb}} {
			d, err := decodeKey(c.enc)
			if err != nil {
				rt.Fatal(err)
			}
			if !bytes.Equal(d.Route, c.k.Route) || !bytes.Equal(d.Namespace, c.k.Namespace) || !bytes.Equal(d.User, c.k.User) {
				rt.Fatalf("decode(encode(%v)) = %v", c.k, d)
			}
		}
		want := cmp.Or(bytes.Compare(a.Route, b.Route), bytes.Compare(a.Namespace, b.Namespace), bytes.Compare(a.User, b.User))
		if got := bytes.Compare(ea, eb); got != want {
			rt.Fatalf("compare(%v, %v): encodings %d, keys %d", a, b, got, want)
		}
	})
}

// TestNamespacedKeysFollowTheRoute: keys of one routing key in different
// namespaces live in the routing key's group and are owned or refused
// together.
func TestNamespacedKeysFollowTheRoute(t *testing.T) {
	s := openTest(t, t.TempDir(), 16)
	tab := s.Table("t")
	route := []byte("user-7")
	kg := KeyGroup(route, 16)
	k1 := Key{Route: route, Namespace: []byte("ns1"), User: []byte("u1")}
	k2 := Key{Route: route, Namespace: []byte("ns2"), User: []byte("u2")}
	// Not the route's group when hashed as a whole.
	for _, k := range []Key{k1, k2} {
		if KeyGroup(appendKey(nil, k.Route, k.Namespace, k.User), 16) == kg && KeyGroup(k.User, 16) == kg {
			t.Fatalf("test keys must hash elsewhere than their route")
		}
	}
	se := s.NewSession()
	se.SetOwned(func(g int) bool { return g == kg })
	for i, k := range []Key{k1, k2} {
		if err := se.PutKey(tab, k, []byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	if tab.Group(kg).Len() != 2 {
		t.Fatalf("route's group holds %d entries, want 2", tab.Group(kg).Len())
	}
	for i, k := range []Key{k1, k2} {
		v, ok, err := se.GetKey(tab, k)
		if err != nil || !ok || string(v) != string(rune('a'+i)) {
			t.Fatalf("GetKey(%v) = %q %v %v", k, v, ok, err)
		}
	}
	if _, ok, _ := se.Get(tab, route); ok {
		t.Fatal("the plain key of the route has a value")
	}

	other := s.NewSession()
	other.SetOwned(func(g int) bool { return g != kg })
	for _, k := range []Key{k1, k2} {
		var nerr *NotOwnedError
		if _, _, err := other.GetKey(tab, k); !errors.As(err, &nerr) || nerr.KeyGroup != kg {
			t.Fatalf("GetKey(%v) by a non-owner: %v", k, err)
		}
		if err := other.PutKey(tab, k, nil); !errors.Is(err, ErrNotOwned) {
			t.Fatalf("PutKey(%v) by a non-owner: %v", k, err)
		}
		if err := other.DeleteKey(tab, k); !errors.Is(err, ErrNotOwned) {
			t.Fatalf("DeleteKey(%v) by a non-owner: %v", k, err)
		}
	}
	if err := other.Scan(tab, route, nil, func(Key, []byte) bool { return true }); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("Scan by a non-owner: %v", err)
	}
	// The plain key and Key{Route: k} are one key.
	mustPut(t, se, tab, route, []byte("plain"))
	if v, ok, _ := se.GetKey(tab, Key{Route: route}); !ok || string(v) != "plain" {
		t.Fatalf("GetKey of the plain key: %q %v", v, ok)
	}
}

// scanKey is a key of the scan model, in tuple order.
type scanKey struct{ route, ns, user string }

func (a scanKey) compare(b scanKey) int {
	return cmp.Or(cmp.Compare(a.route, b.route), cmp.Compare(a.ns, b.ns), cmp.Compare(a.user, b.user))
}

// TestScanMatchesModel runs random puts, deletes, savepoints, rollbacks and
// commits of namespaced and plain keys against a map, checking Scan of
// random routes and namespaces against the map sorted, GetKey, and at the
// end what Commit persisted.
func TestScanMatchesModel(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	routes := []string{"r1", "r2", "", "\x00", "r\x00x"}
	spaces := []string{"", "ns", "ns\x00", "a"}
	users := []string{"", "u1", "u2", "\x00\xff"}
	cases := 0
	rapid.Check(t, func(rt *rapid.T) {
		cases++
		tab := s.Table(fmt.Sprint("scan-", cases))
		se := s.NewSession()
		cur := map[scanKey]string{}
		type savepoint struct {
			sp  int
			cur map[scanKey]string
		}
		var sps []savepoint
		drawKey := func(rt *rapid.T) scanKey {
			return scanKey{rapid.SampledFrom(routes).Draw(rt, "route"), rapid.SampledFrom(spaces).Draw(rt, "ns"),
				rapid.SampledFrom(users).Draw(rt, "user")}
		}
		key := func(k scanKey) Key { return Key{[]byte(k.route), []byte(k.ns), []byte(k.user)} }
		rt.Repeat(map[string]func(*rapid.T){
			"put": func(rt *rapid.T) {
				k := drawKey(rt)
				v := rapid.StringN(0, 6, -1).Draw(rt, "value")
				if err := se.PutKey(tab, key(k), []byte(v)); err != nil {
					rt.Fatal(err)
				}
				cur[k] = v
			},
			"delete": func(rt *rapid.T) {
				k := drawKey(rt)
				if err := se.DeleteKey(tab, key(k)); err != nil {
					rt.Fatal(err)
				}
				delete(cur, k)
			},
			"savepoint": func(rt *rapid.T) {
				sps = append(sps, savepoint{se.Savepoint(), maps.Clone(cur)})
			},
			"rollback": func(rt *rapid.T) {
				if len(sps) == 0 {
					rt.Skip("no savepoint")
				}
				i := rapid.IntRange(0, len(sps)-1).Draw(rt, "savepoint")
				se.RollbackTo(sps[i].sp)
				cur = maps.Clone(sps[i].cur)
				sps = sps[:i+1]
			},
			"commit": func(rt *rapid.T) {
				if err := s.Commit(nil); err != nil {
					rt.Fatal(err)
				}
				se.Reset()
				sps = nil
			},
			"get": func(rt *rapid.T) {
				k := drawKey(rt)
				v, ok, err := se.GetKey(tab, key(k))
				want, wantOK := cur[k]
				if err != nil || ok != wantOK || string(v) != want {
					rt.Fatalf("GetKey(%q) = %q %v %v, want %q %v", k, v, ok, err, want, wantOK)
				}
			},
			"scan": func(rt *rapid.T) {
				route := rapid.SampledFrom(routes).Draw(rt, "route")
				ns := rapid.SampledFrom(spaces).Draw(rt, "ns")
				var want []string
				for _, k := range slices.SortedFunc(maps.Keys(cur), scanKey.compare) {
					if k.route == route && (ns == "" || k.ns == ns) {
						want = append(want, fmt.Sprintf("%q/%q=%q", k.ns, k.user, cur[k]))
					}
				}
				var got []string
				err := se.Scan(tab, []byte(route), []byte(ns), func(k Key, v []byte) bool {
					if string(k.Route) != route {
						rt.Fatalf("scan of %q visited route %q", route, k.Route)
					}
					got = append(got, fmt.Sprintf("%q/%q=%q", k.Namespace, k.User, v))
					return true
				})
				if err != nil {
					rt.Fatal(err)
				}
				if !slices.Equal(got, want) {
					rt.Fatalf("Scan(%q, %q):\n got %q\nwant %q", route, ns, got, want)
				}
			},
		})
		if err := s.Commit(nil); err != nil {
			rt.Fatal(err)
		}
		got := map[scanKey]string{}
		var prev *scanKey
		err := s.ScanKeys(tab.Name(), func(k Key, v []byte) error {
			sk := scanKey{string(k.Route), string(k.Namespace), string(k.User)}
			if prev != nil && prev.compare(sk) >= 0 {
				return fmt.Errorf("ScanKeys order: %q after %q", sk, *prev)
			}
			prev = &sk
			got[sk] = string(v)
			return nil
		})
		if err != nil {
			rt.Fatal(err)
		}
		if !maps.Equal(got, cur) {
			rt.Fatalf("committed %v, want %v", got, cur)
		}
	})
}
