package txn_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/txn"
)

// A transfer that aborts when the source balance is too low, next to one
// that succeeds, run on two workers with non-structured exploration.
func Example() {
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	alice, bob := txn.Key{Key: "alice"}, txn.Key{Key: "bob"}
	store := txn.MapStore{alice: []byte("10"), bob: []byte("0")}
	amounts := []int{30, 7} // transaction i moves amounts[i] from alice to bob
	transfer := []txn.Op{
		{Write: bob, Reads: []txn.Key{alice}, Fn: 1}, // credit, if alice can pay
		{Write: alice, Fn: 0},                        // debit, if alice can pay
	}
	batch := []txn.Txn{{Ops: transfer}, {Ops: transfer}}
	apply := func(t, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
		own, _ := a.Own()
		bal, _ := strconv.Atoi(string(own))
		src := bal
		if o.Fn == 1 {
			v, _ := a.Read(0)
			src, _ = strconv.Atoi(string(v))
		}
		if src < amounts[t] {
			return txn.Effect{Abort: true}, nil
		}
		if o.Fn == 1 {
			return txn.Effect{Value: []byte(strconv.Itoa(bal + amounts[t]))}, nil
		}
		return txn.Effect{Value: []byte(strconv.Itoa(bal - amounts[t]))}, nil
	}
	st, _ := txn.ParseStrategy("ns-op-eager")
	res, err := s.Run(context.Background(), st, batch, store, apply)
	if err != nil {
		panic(err)
	}
	fmt.Println("committed:", res.Committed)
	for _, c := range res.Changes {
		fmt.Printf("%s = %s\n", c.Key.Key, c.Value)
	}
	// Output:
	// committed: [false true]
	// bob = 7
	// alice = 3
}
