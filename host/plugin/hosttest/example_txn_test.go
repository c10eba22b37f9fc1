package hosttest_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/txn"
)

// Functions of Transfers, by index in Funcs.
const (
	fnCredit = iota
	fnDebit
)

// Transfers is the transactional operator of the SDK's README: an event
// "from to amount" moves amount from one account to another, if the source
// account holds it. Balances are uint64, 8 bytes little endian, in the
// operator's first table.
var Transfers = sluice.Txn{
	Plan: func(ev sluice.Record, p *sluice.Planner) error {
		f := bytes.Fields(ev.Value)
		if len(f) != 3 {
			return nil // no operations: Post dead-letters the event
		}
		amount, err := strconv.ParseUint(string(f[2]), 10, 64)
		if err != nil {
			return nil
		}
		var arg [8]byte
		binary.LittleEndian.PutUint64(arg[:], amount)
		from := sluice.Key{Table: sluice.DefaultTable, Key: f[0]}
		// The credit reads the source balance as it is before the debit.
		p.Write(sluice.DefaultTable, f[1], fnCredit, arg[:], from)
		p.Write(sluice.DefaultTable, f[0], fnDebit, arg[:])
		return nil
	},
	Funcs: []sluice.TxnFunc{
		fnCredit: func(c *sluice.Call) sluice.Effect {
			amount := binary.LittleEndian.Uint64(c.Arg())
			if balance(c.Read(0)) < amount {
				return sluice.Abort() // undoes the whole transfer
			}
			return put(c, balance(c.Own())+amount)
		},
		fnDebit: func(c *sluice.Call) sluice.Effect {
			amount := binary.LittleEndian.Uint64(c.Arg())
			b := balance(c.Own())
			if b < amount {
				return sluice.Abort()
			}
			return put(c, b-amount)
		},
	},
	Post: func(ev sluice.Record, o *sluice.Outcome, out *sluice.Emitter) error {
		switch {
		case len(o.Ops) == 0:
			return errors.New("malformed transfer") // dead-letters the event
		case o.Committed:
			out.Emit(sluice.Record{Key: ev.Key, Value: []byte("done"), Time: ev.Time})
		default:
			out.Emit(sluice.Record{Key: ev.Key, Value: []byte("refused"), Time: ev.Time})
		}
		return nil
	},
}

func balance(v []byte, ok bool) uint64 {
	if !ok || len(v) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(v)
}

// put writes v, built in the call's reusable buffer: no allocation.
func put(c *sluice.Call, v uint64) sluice.Effect {
	b := c.Scratch(8)
	binary.LittleEndian.PutUint64(b, v)
	return sluice.Write(b)
}

// A transactional operator runs natively on the host's scheduler, with two
// workers here; the same test could load the compiled plugin with
// LoadTxnWasm instead.
func ExampleTxnLogic() {
	ctx := context.Background()
	tables := []string{"accounts"}
	st, err := txn.ParseStrategy("ns-op-lazy")
	if err != nil {
		panic(err)
	}
	op, err := txnop.New(txnop.Config{Name: "transfers", Tables: tables, Strategy: st, Workers: 2,
		Logic: hosttest.TxnLogic(Transfers, tables)})
	if err != nil {
		panic(err)
	}
	defer op.Close(ctx)
	store := txn.MapStore{{Table: 0, Key: "alice"}: binary.LittleEndian.AppendUint64(nil, 50)}
	var out plugin.Output
	res, err := op.Process(ctx, []abi.Record{
		{Key: []byte("t1"), Value: []byte("alice bob 30")},
		{Key: []byte("t2"), Value: []byte("alice carol 30")}, // 20 left: refused
		{Key: []byte("t3"), Value: []byte("bob")},
	}, store, &out)
	if err != nil {
		panic(err)
	}
	fmt.Println("committed:", res.Committed)
	for _, c := range res.Changes {
		fmt.Printf("%s = %d\n", c.Key.Key, binary.LittleEndian.Uint64(c.Value))
	}
	for _, r := range out.Records {
		fmt.Printf("event %d: %s %s\n", r.Origin, r.Key, r.Value)
	}
	for _, r := range out.Rejects {
		fmt.Printf("event %d rejected: %v\n", r.Index, r.Err)
	}
	// Output:
	// committed: [true false true]
	// bob = 30
	// alice = 20
	// event 0: t1 done
	// event 1: t2 refused
	// event 2 rejected: plugin "native": input record 2 rejected by the operator: malformed transfer
}
