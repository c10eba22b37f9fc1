package biddingop

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicehq/sluice/plugins/internal/busy"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/txn/apps/bidding/event"
)

// Functions, by index in the operator's Funcs.
const (
	// FnBuy buys an item if its price and quantity allow, else aborts.
	FnBuy = iota
	// FnAlert sets an item's ask price.
	FnAlert
	// FnTopUp adds to an item's quantity.
	FnTopUp
)

// goods is the handle of the operator's one table.
const goods sluice.Table = event.Goods

// argSize is the size of an operation's argument: the item's price and
// quantity (int64) and the busy work in nanoseconds (uint32), little
// endian.
const argSize = 8 + 8 + 4

// New returns the Online Bidding operator. The value serves one operator
// instance (one plugin instance, or one hosttest.TxnLogic): Plan and Post
// reuse buffers it keeps.
func New() sluice.Txn {
	o := &operator{}
	return sluice.Txn{
		Plan:  o.plan,
		Funcs: []sluice.TxnFunc{FnBuy: buy, FnAlert: alert, FnTopUp: topUp},
		Post:  o.post,
	}
}

// operator is the state of one instance's Plan and Post, which run one at
// a time.
type operator struct {
	ev  event.Event
	out []byte
}

// fnOf returns the function of the operations of an event of kind k.
func fnOf(k event.Kind) int {
	switch k {
	case event.Alert:
		return FnAlert
	case event.TopUp:
		return FnTopUp
	}
	return FnBuy
}

func (o *operator) plan(ev sluice.Record, p *sluice.Planner) error {
	if err := event.DecodeEventInto(&o.ev, ev.Value); err != nil {
		return nil // no operations: Post dead-letters the event
	}
	fn := fnOf(o.ev.Kind)
	var arg [argSize]byte
	binary.LittleEndian.PutUint32(arg[16:], o.ev.BusyNanos)
	var k [event.KeyWidth]byte
	for _, it := range o.ev.Items {
		binary.LittleEndian.PutUint64(arg[:], uint64(it.Price))
		binary.LittleEndian.PutUint64(arg[8:], uint64(it.Quantity))
		p.Write(goods, event.AppendKey(k[:0], it.Key), fn, arg[:])
	}
	return nil
}

// item decodes an operation's argument, does its busy work, and decodes
// the item's value.
func item(c *sluice.Call) (it event.Item, g event.Good, err error) {
	a := c.Arg()
	if len(a) != argSize {
		return it, g, fmt.Errorf("bidding: operation on item %q: argument of %d bytes, want %d", c.Key(), len(a), argSize)
	}
	it.Price, it.Quantity = int64(binary.LittleEndian.Uint64(a)), int64(binary.LittleEndian.Uint64(a[8:]))
	_ = busy.Spin(binary.LittleEndian.Uint32(a[16:]))
	own, _ := c.Own()
	if g, err = event.DecodeGood(own); err != nil {
		return it, g, fmt.Errorf("bidding: item %q: %w", c.Key(), err)
	}
	return it, g, nil
}

// put returns the Effect writing g.
func put(c *sluice.Call, g event.Good) sluice.Effect {
	return sluice.Write(event.AppendGood(c.Scratch(16)[:0], g))
}

func buy(c *sluice.Call) sluice.Effect {
	it, g, err := item(c)
	switch {
	case err != nil:
		return sluice.Fail(err)
	case g.Price > it.Price || g.Quantity < it.Quantity:
		return sluice.Abort()
	}
	g.Quantity -= it.Quantity
	return put(c, g)
}

func alert(c *sluice.Call) sluice.Effect {
	it, g, err := item(c)
	if err != nil {
		return sluice.Fail(err)
	}
	g.Price = it.Price
	return put(c, g)
}

func topUp(c *sluice.Call) sluice.Effect {
	it, g, err := item(c)
	if err != nil {
		return sluice.Fail(err)
	}
	q := g.Quantity + it.Quantity
	if q < g.Quantity {
		return sluice.Abort() // the quantity would overflow
	}
	g.Quantity = q
	return put(c, g)
}

// post emits the event's Result: for a committed buy, what it paid at the
// ask prices its operations read.
func (o *operator) post(ev sluice.Record, oc *sluice.Outcome, out *sluice.Emitter) error {
	if err := event.DecodeEventInto(&o.ev, ev.Value); err != nil {
		return err
	}
	r := Result{Kind: o.ev.Kind, Committed: oc.Committed}
	if oc.Committed && o.ev.Kind == event.Buy {
		if len(oc.Ops) != len(o.ev.Items) {
			return fmt.Errorf("bidding: outcome of %d operations for an event of %d items", len(oc.Ops), len(o.ev.Items))
		}
		for m := range oc.Ops {
			g, err := event.DecodeGood(oc.Ops[m].Own.Bytes)
			if err != nil {
				return err
			}
			r.Paid += g.Price * o.ev.Items[m].Quantity
		}
	}
	o.out = AppendResult(o.out[:0], &r)
	out.Emit(sluice.Record{Key: ev.Key, Value: o.out, Time: ev.Time})
	return nil
}
