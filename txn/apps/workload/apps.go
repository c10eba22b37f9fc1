package workload

import (
	"math/rand/v2"

	bidding "github.com/sluicehq/sluice/txn/apps/bidding/event"
	grepsum "github.com/sluicehq/sluice/txn/apps/grepsum/event"
	ledger "github.com/sluicehq/sluice/txn/apps/ledger/event"
	nongrepsum "github.com/sluicehq/sluice/txn/apps/nongrepsum/event"
	toll "github.com/sluicehq/sluice/txn/apps/toll/event"
)

// ledgerApp is Streaming Ledger.
type ledgerApp struct {
	base
	deposit chance
}

func (a *ledgerApp) Name() string { return StreamingLedger }

func (a *ledgerApp) Tables() []string {
	return []string{ledger.AccountsTable, ledger.BookEntriesTable}
}

// Initial gives every account and book entry ledger.InitialBalance.
func (a *ledgerApp) Initial(fn func(table int, key, value []byte) error) error {
	v := ledger.AppendBalance(nil, ledger.InitialBalance)
	return eachKey(a.n, []int{ledger.Accounts, ledger.BookEntries}, func(table int, k uint32, key []byte) error {
		return fn(table, key, v)
	})
}

// Event draws a deposit (DepositRatio) or a transfer; AbortRatio of the
// transfers carry ledger.AbortAmount, which no balance covers, and the
// others ledger.TransferAmount, which every balance does (Initial). The
// record key is the account.
func (a *ledgerApp) Event(i uint64, dst []byte) (key, value []byte) {
	r := a.rand(i)
	e := ledger.Event{BusyNanos: a.busy}
	e.Deposit = a.deposit.hit(r.Uint64())
	e.Account = a.key(&r)
	e.Book = a.key(&r)
	if e.Deposit {
		e.Amount = ledger.DepositAmount
	} else {
		e.DstAccount = a.other(&r, e.Account)
		e.DstBook = a.other(&r, e.Book)
		e.Amount = ledger.TransferAmount
		if a.abort.hit(r.Uint64()) {
			e.Amount = ledger.AbortAmount
		}
	}
	start := len(dst)
	dst = ledger.AppendKey(dst, e.Account)
	mid := len(dst)
	return record(ledger.AppendEvent(dst, &e), start, mid)
}

// grepApp is GrepSum, or NonGrepSum when ngs is set.
type grepApp struct {
	base
	ops, reads int
	multi      chance
	acyclic    bool
	ngs        bool
	nonDet     chance
}

func (a *grepApp) Name() string {
	if a.ngs {
		return NonGrepSum
	}
	return GrepSum
}

func (a *grepApp) Tables() []string { return []string{grepsum.TableName} }

// Initial gives key k the value k (grepsum.InitialValue).
func (a *grepApp) Initial(fn func(table int, key, value []byte) error) error {
	var v []byte
	return eachKey(a.n, []int{grepsum.Table}, func(table int, k uint32, key []byte) error {
		v = grepsum.AppendValue(v[:0], grepsum.InitialValue(k))
		return fn(table, key, v)
	})
}

// Event draws a transaction of TxnLength operations; the record key is
// the first operation's key.
func (a *grepApp) Event(i uint64, dst []byte) (key, value []byte) {
	r := a.rand(i)
	abort := a.abort.hit(r.Uint64())
	first := a.writeKey(&r)
	start := len(dst)
	dst = grepsum.AppendKey(dst, first)
	mid := len(dst)
	if a.ngs {
		dst = nongrepsum.AppendHeader(dst, abort, a.busy, uint32(a.n), a.ops)
	} else {
		dst = grepsum.AppendHeader(dst, abort, a.busy, a.ops)
	}
	var reads [MaxReads]uint32
	for j := range a.ops {
		w := first
		if j > 0 {
			w = a.writeKey(&r)
		}
		n := 0
		if a.multi.hit(r.Uint64()) {
			n = a.reads
		}
		for x := range n {
			reads[x] = a.readKey(&r, w)
		}
		if a.ngs {
			dst = nongrepsum.AppendOp(dst, a.nonDet.hit(r.Uint64()), w, reads[:n])
		} else {
			dst = grepsum.AppendOp(dst, w, reads[:n])
		}
	}
	return record(dst, start, mid)
}

// writeKey draws the key an operation writes; acyclic workloads never
// write key 0 (key 1 takes its draws), so that every written key has a key
// below it to read.
func (a *grepApp) writeKey(r *rand.PCG) uint32 {
	k := a.key(r)
	if a.acyclic && k == 0 {
		k = 1
	}
	return k
}

// readKey draws a key that an operation writing w reads: from the key
// distribution, folded below w (modulo w) when the workload is acyclic.
func (a *grepApp) readKey(r *rand.PCG, w uint32) uint32 {
	k := a.key(r)
	if a.acyclic && k >= w {
		k %= w
	}
	return k
}

// tollApp is Toll Processing.
type tollApp struct{ base }

func (a *tollApp) Name() string { return TollProcessing }

func (a *tollApp) Tables() []string { return []string{toll.SpeedsTable, toll.CountsTable} }

// Initial gives every segment zero statistics and an empty vehicle set.
func (a *tollApp) Initial(fn func(table int, key, value []byte) error) error {
	speeds := toll.AppendSpeedStats(nil, toll.SpeedStats{})
	counts := toll.AppendVehicleSet(nil, &toll.VehicleSet{})
	return eachKey(a.n, []int{toll.Speeds, toll.Counts}, func(table int, k uint32, key []byte) error {
		if table == toll.Speeds {
			return fn(table, key, speeds)
		}
		return fn(table, key, counts)
	})
}

// Event draws a position report: a segment from the key distribution, a
// vehicle uniformly, a speed uniformly in [MinSpeed, MaxSpeed], or
// InvalidSpeed for AbortRatio of the reports. The record key is the segment.
func (a *tollApp) Event(i uint64, dst []byte) (key, value []byte) {
	r := a.rand(i)
	e := toll.Event{BusyNanos: a.busy}
	e.Segment = a.key(&r)
	e.Vehicle = uint32(uniform(r.Uint64(), toll.Vehicles))
	e.Speed = toll.MinSpeed + uint32(uniform(r.Uint64(), toll.MaxSpeed-toll.MinSpeed+1))
	if a.abort.hit(r.Uint64()) {
		e.Speed = toll.InvalidSpeed
	}
	start := len(dst)
	dst = toll.AppendKey(dst, e.Segment)
	mid := len(dst)
	return record(toll.AppendEvent(dst, &e), start, mid)
}

// biddingApp is Online Bidding.
type biddingApp struct {
	base
	items int
	buy   chance
}

func (a *biddingApp) Name() string { return OnlineBidding }

func (a *biddingApp) Tables() []string { return []string{bidding.GoodsTable} }

// Initial gives every item bidding.InitialQuantity and an ask price in
// [1, MaxPrice] drawn from the seed and the item.
func (a *biddingApp) Initial(fn func(table int, key, value []byte) error) error {
	var v []byte
	return eachKey(a.n, []int{bidding.Goods}, func(table int, k uint32, key []byte) error {
		price := 1 + int64(uniform(mix(a.seed^uint64(k)), uint64(bidding.MaxPrice)))
		v = bidding.AppendGood(v[:0], bidding.Good{Price: price, Quantity: bidding.InitialQuantity})
		return fn(table, key, v)
	})
}

// Event draws a buy (BuyRatio), an alert or a top-up (half the rest each)
// over TxnLength items from the key distribution. A buy bids MaxPrice for
// one unit of each item, or 0 for AbortRatio of the buys; an alert sets a
// price in [1, MaxPrice]; a top-up adds [1, MaxTopUp]. The record key is
// the first item.
func (a *biddingApp) Event(i uint64, dst []byte) (key, value []byte) {
	r := a.rand(i)
	kind := bidding.Buy
	abort := false
	switch {
	case a.buy.hit(r.Uint64()):
		abort = a.abort.hit(r.Uint64())
	case r.Uint64()&1 == 0:
		kind = bidding.Alert
	default:
		kind = bidding.TopUp
	}
	first := a.key(&r)
	start := len(dst)
	dst = bidding.AppendKey(dst, first)
	mid := len(dst)
	dst = bidding.AppendHeader(dst, kind, a.busy, a.items)
	for j := range a.items {
		it := bidding.Item{Key: first}
		if j > 0 {
			it.Key = a.key(&r)
		}
		switch kind {
		case bidding.Buy:
			it.Quantity = 1
			if !abort {
				it.Price = bidding.MaxPrice
			}
		case bidding.Alert:
			it.Price = 1 + int64(uniform(r.Uint64(), uint64(bidding.MaxPrice)))
		case bidding.TopUp:
			it.Quantity = 1 + int64(uniform(r.Uint64(), uint64(bidding.MaxTopUp)))
		}
		dst = bidding.AppendItem(dst, it)
	}
	return record(dst, start, mid)
}

// eachKey calls fn for every key of every table, in order, with the key's
// text in a buffer that fn must not keep.
func eachKey(n uint64, tables []int, fn func(table int, k uint32, key []byte) error) error {
	var key []byte
	for _, t := range tables {
		for k := range uint32(n) {
			key = grepsum.AppendKey(key[:0], k)
			if err := fn(t, k, key); err != nil {
				return err
			}
		}
	}
	return nil
}
