package state

import "testing"

// TestKeyGroupIsStable pins KeyGroup's output: the persisted layout depends
// on it, so a change here breaks every existing data directory.
func TestKeyGroupIsStable(t *testing.T) {
	for _, c := range []struct {
		key              string
		g128, g7, g65536 int
	}{
		{"", 25, 6, 59801}, // XXH64("") = 0xef46db3751d8e999
		{"a", 91, 6, 28251},
		{"user:42", 66, 4, 53698},
		{"hello world", 104, 6, 26984},
		{"\x00\xff", 125, 0, 7549},
	} {
		k := []byte(c.key)
		if got := [3]int{KeyGroup(k, 128), KeyGroup(k, 7), KeyGroup(k, 65536)}; got != [3]int{c.g128, c.g7, c.g65536} {
			t.Errorf("KeyGroup(%q) = %v, want %v", c.key, got, [3]int{c.g128, c.g7, c.g65536})
		}
	}
}

func TestKeyGroupSpreadsKeys(t *testing.T) {
	const groups, keys = 128, 128 * 1000
	var counts [groups]int
	for i := range keys {
		counts[KeyGroup(key(i), groups)]++
	}
	for kg, n := range counts {
		// Expected 1000 per group, standard deviation about 31.
		if n < 850 || n > 1150 {
			t.Errorf("key group %d got %d of %d keys", kg, n, keys)
		}
	}
}

func TestKeyGroupPanicsOnBadCount(t *testing.T) {
	for _, n := range []int{0, -1, MaxKeyGroups + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("KeyGroup with %d groups did not panic", n)
				}
			}()
			KeyGroup([]byte("k"), n)
		}()
	}
}

func TestKeyGroupDoesNotAllocate(t *testing.T) {
	k := []byte("some-key")
	if n := testing.AllocsPerRun(100, func() { KeyGroup(k, 128) }); n != 0 {
		t.Fatalf("KeyGroup allocates %v times", n)
	}
}
