package exec

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn"
)

// TestTransactionalNotOwnedReadFailsBatch: a transaction that reads a key
// of a group its session does not own fails the batch with
// state.ErrNotOwned; the key is never read as absent (which would make
// "copy src dst" delete dst) and the state is left as it was.
func TestTransactionalNotOwnedReadFailsBatch(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	groups := store.KeyGroups()
	src, dst := "src", ""
	for i := 0; dst == ""; i++ {
		if k := fmt.Sprintf("dst%d", i); state.KeyGroup([]byte(k), groups) != state.KeyGroup([]byte(src), groups) {
			dst = k
		}
	}
	accounts := store.Table("accounts")
	store.Table("stats")
	sess := store.NewSession()
	for _, k := range []string{src, dst} {
		if err := sess.Put(accounts, []byte(k), []byte("7")); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Commit(nil); err != nil {
		t.Fatal(err)
	}
	before := committedState(t, store)

	op := bankOperator(t, "bank", "dfs-op-eager", 2, 8, true)
	m := NewMetrics()
	ts, err := newTxnStage(&op, store, m)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.close(context.Background())
	notSrc := state.KeyGroup([]byte(src), groups)
	ts.sess.SetOwned(func(kg int) bool { return kg != notSrc })
	recs := bankRecords([]string{"copy " + src + " " + dst})
	_, _, err = ts.run(context.Background(), recs)
	if !errors.Is(err, state.ErrNotOwned) {
		t.Fatalf("batch reading a key group the session does not own: %v, want state.ErrNotOwned", err)
	}
	ts.sess.Reset()
	if got := committedState(t, store); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("state %v after the failed batch, want %v", got, before)
	}
}

// TestTableViewGetErrors: tableView.Get returns the session's error and
// refuses a table the operator does not have.
func TestTableViewGetErrors(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	sess := store.NewSession()
	sess.SetOwned(func(int) bool { return false })
	v := tableView{sess: sess, tables: []*state.Table{store.Table("accounts")}}
	if _, ok, err := v.Get(txn.Key{Key: "a"}); !errors.Is(err, state.ErrNotOwned) || ok {
		t.Errorf("Get of a key group not owned: found %v, error %v; want state.ErrNotOwned", ok, err)
	}
	sess.SetOwned(nil)
	if _, ok, err := v.Get(txn.Key{Key: "a"}); err != nil || ok {
		t.Errorf("Get of an absent key: found %v, error %v", ok, err)
	}
	bad := txn.Key{Table: 3, Key: "a"}
	if _, _, err := v.Get(bad); err == nil {
		t.Error("Get of table 3 of an operator with 1 table: no error")
	}
}
