package ledgerop

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicehq/sluice/plugins/internal/busy"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/txn/apps/ledger/event"
)

// Functions, by index in the operator's Funcs.
const (
	// FnCredit adds the amount to the own balance.
	FnCredit = iota
	// FnCreditIfFunded adds the amount to the own balance when the source
	// balance (declared read 0) covers it, and aborts otherwise.
	FnCreditIfFunded
	// FnDebitIfFunded subtracts the amount from the own balance when the
	// own balance covers it and so does the source balance of declared
	// read 0, if any, and aborts otherwise.
	FnDebitIfFunded
)

// argSize is the size of an operation's argument: the amount (int64) and
// the busy work in nanoseconds (uint32), little endian.
const argSize = 8 + 4

// Table handles: the workload's order (txn/apps/ledger/event), in which a
// pipeline declares the operator's tables.
const (
	accounts sluice.Table = event.Accounts
	books    sluice.Table = event.BookEntries
)

// New returns the Streaming Ledger operator. The value serves one operator
// instance (one plugin instance, or one hosttest.TxnLogic): Post reuses
// a buffer it keeps.
func New() sluice.Txn {
	o := &operator{}
	return sluice.Txn{
		Plan: plan,
		Funcs: []sluice.TxnFunc{
			FnCredit:         credit,
			FnCreditIfFunded: creditIfFunded,
			FnDebitIfFunded:  debitIfFunded,
		},
		Post: o.post,
	}
}

// operator is the state of one instance's Post.
type operator struct {
	res Result
	out []byte
}

func plan(ev sluice.Record, p *sluice.Planner) error {
	e, err := event.DecodeEvent(ev.Value)
	if err != nil {
		return nil // no operations: Post dead-letters the event
	}
	var arg [argSize]byte
	binary.LittleEndian.PutUint64(arg[:], uint64(e.Amount))
	binary.LittleEndian.PutUint32(arg[8:], e.BusyNanos)
	var k, s [event.KeyWidth]byte
	if e.Deposit {
		p.Write(accounts, event.AppendKey(k[:0], e.Account), FnCredit, arg[:])
		p.Write(books, event.AppendKey(k[:0], e.Book), FnCredit, arg[:])
		return nil
	}
	src := sluice.Key{Table: accounts, Key: event.AppendKey(s[:0], e.Account)}
	p.Write(books, event.AppendKey(k[:0], e.Book), FnDebitIfFunded, arg[:], src)
	p.Write(accounts, event.AppendKey(k[:0], e.DstAccount), FnCreditIfFunded, arg[:], src)
	p.Write(books, event.AppendKey(k[:0], e.DstBook), FnCreditIfFunded, arg[:], src)
	p.Write(accounts, src.Key, FnDebitIfFunded, arg[:])
	return nil
}

// args decodes an operation's argument and does its busy work.
func args(c *sluice.Call) (amount int64, err error) {
	a := c.Arg()
	if len(a) != argSize {
		return 0, fmt.Errorf("ledger: operation on key %q: argument of %d bytes, want %d", c.Key(), len(a), argSize)
	}
	_ = busy.Spin(binary.LittleEndian.Uint32(a[8:]))
	return int64(binary.LittleEndian.Uint64(a)), nil
}

// balance decodes a balance read from key (a missing key holds 0).
func balance(key, v []byte) (int64, error) {
	b, err := event.DecodeBalance(v)
	if err != nil {
		return 0, fmt.Errorf("ledger: key %q: %w", key, err)
	}
	return b, nil
}

// own returns the operation's own balance.
func own(c *sluice.Call) (int64, error) {
	v, _ := c.Own()
	return balance(c.Key(), v)
}

// funded reports whether the source balance covers amount: declared read 0,
// or the own balance when the operation declares no read.
func funded(c *sluice.Call, amount, ownBalance int64) (bool, error) {
	if c.Reads() == 0 {
		return ownBalance >= amount, nil
	}
	v, _ := c.Read(0)
	src, err := balance([]byte("source account"), v)
	return src >= amount, err
}

// put returns the Effect writing balance v, or an Abort when the
// arithmetic that produced it overflowed.
func put(c *sluice.Call, v int64, overflow bool) sluice.Effect {
	if overflow {
		return sluice.Abort()
	}
	b := c.Scratch(8)
	binary.LittleEndian.PutUint64(b, uint64(v))
	return sluice.Write(b)
}

// add returns a+b and whether it overflowed.
func add(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) != (b > 0)
}

// sub returns a-b and whether it overflowed.
func sub(a, b int64) (int64, bool) {
	d := a - b
	return d, (d < a) != (b > 0)
}

func credit(c *sluice.Call) sluice.Effect {
	amount, err := args(c)
	if err != nil {
		return sluice.Fail(err)
	}
	b, err := own(c)
	if err != nil {
		return sluice.Fail(err)
	}
	v, over := add(b, amount)
	return put(c, v, over)
}

func creditIfFunded(c *sluice.Call) sluice.Effect { return ifFunded(c, add, false) }

func debitIfFunded(c *sluice.Call) sluice.Effect { return ifFunded(c, sub, true) }

// ifFunded applies op to the own balance and the amount when the source
// balance covers the amount, and for a debit the own balance too, and
// aborts the transfer otherwise.
func ifFunded(c *sluice.Call, op func(balance, amount int64) (int64, bool), debit bool) sluice.Effect {
	amount, err := args(c)
	if err != nil {
		return sluice.Fail(err)
	}
	b, err := own(c)
	if err != nil {
		return sluice.Fail(err)
	}
	ok, err := funded(c, amount, b)
	switch {
	case err != nil:
		return sluice.Fail(err)
	case !ok, debit && b < amount:
		return sluice.Abort()
	}
	v, over := op(b, amount)
	return put(c, v, over)
}

// post emits the event's Result.
func (o *operator) post(ev sluice.Record, oc *sluice.Outcome, out *sluice.Emitter) error {
	e, err := event.DecodeEvent(ev.Value)
	if err != nil {
		return err
	}
	r := &o.res
	r.Deposit, r.Committed, r.Balances = e.Deposit, oc.Committed, r.Balances[:0]
	// What the event read before it changed anything: a deposit its two
	// own keys; a transfer the source account (read 0 of its first
	// operation), then the own keys of its first three operations.
	var vals [4]sluice.Value
	var read [4]bool
	n := 2
	if e.Deposit {
		vals[0], read[0] = own0(oc, 0)
		vals[1], read[1] = own0(oc, 1)
	} else {
		n = 4
		vals[0], read[0] = read0(oc, 0)
		for m := range 3 {
			vals[m+1], read[m+1] = own0(oc, m)
		}
	}
	for i := range n {
		b := Balance{Read: read[i]}
		if read[i] {
			if b.Value, err = event.DecodeBalance(vals[i].Bytes); err != nil {
				return err
			}
		}
		r.Balances = append(r.Balances, b)
	}
	o.out = AppendResult(o.out[:0], r)
	out.Emit(sluice.Record{Key: ev.Key, Value: o.out, Time: ev.Time})
	return nil
}

// own0 returns what operation m read of its own key, and whether it ran.
func own0(oc *sluice.Outcome, m int) (sluice.Value, bool) {
	if m >= len(oc.Ops) || !oc.Ops[m].Executed {
		return sluice.Value{}, false
	}
	return oc.Ops[m].Own, true
}

// read0 returns what operation m read of its declared read 0, and whether
// it ran.
func read0(oc *sluice.Outcome, m int) (sluice.Value, bool) {
	if m >= len(oc.Ops) || !oc.Ops[m].Executed || len(oc.Ops[m].Reads) == 0 {
		return sluice.Value{}, false
	}
	return oc.Ops[m].Reads[0], true
}
