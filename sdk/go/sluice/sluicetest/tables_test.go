package sluicetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// dump renders every table's contents in a stable order.
func dump(st *Tables) string {
	var b strings.Builder
	for i, m := range st.data {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(&b, "%s/%s=%s ", st.names[i], k, m[k])
		}
	}
	return b.String()
}

func TestTablesUndo(t *testing.T) {
	st := NewTables()
	st.Declare("a")
	st.Declare("b")
	st.Set("a", "k", []byte("0"))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sp := st.Savepoint()
	key := []byte("k")
	must(st.Put(0, key, []byte("1")))
	key[0] = 'x' // Put copied the key
	must(st.Put(1, []byte("k"), []byte("b1")))
	inner := st.Savepoint()
	must(st.Delete(0, []byte("k")))
	must(st.Put(0, []byte("new"), []byte("n")))
	must(st.Put(0, []byte("new"), []byte("n2")))
	must(st.Delete(1, []byte("absent")))
	if got, want := dump(st), "a/new=n2 b/k=b1 "; got != want {
		t.Fatalf("after writes: %q, want %q", got, want)
	}
	st.RollbackTo(inner)
	if got, want := dump(st), "a/k=1 b/k=b1 "; got != want {
		t.Errorf("after RollbackTo(inner): %q, want %q", got, want)
	}
	st.RollbackTo(sp)
	if got, want := dump(st), "a/k=0 "; got != want {
		t.Errorf("after RollbackTo(sp): %q, want %q", got, want)
	}
	must(st.Put(0, []byte("k"), []byte("2")))
	st.Commit()
	if st.Savepoint() != 0 {
		t.Error("commit left undo entries")
	}
	st.RollbackTo(0)
	if v, ok, err := st.Get(0, []byte("k")); err != nil || !ok || string(v) != "2" {
		t.Errorf("committed value: %q %v %v", v, ok, err)
	}
	if id, ok := st.TableID("b"); !ok || id != 1 {
		t.Errorf("TableID(b) = %d %v", id, ok)
	}
	if _, ok := st.TableID("c"); ok {
		t.Error("TableID(c) found")
	}
	if _, _, err := st.Get(2, key); err == nil || !strings.Contains(err.Error(), "table handle 2 is not declared") {
		t.Errorf("Get on handle 2: %v", err)
	}
	if err := NewTables().Put(0, key, key); !errors.Is(err, errNoTables) {
		t.Errorf("Put without tables: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("RollbackTo past the log did not panic")
		}
	}()
	st.RollbackTo(5)
}
