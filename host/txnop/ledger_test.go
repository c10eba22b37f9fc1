package txnop_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/txn"
)

// The test ledger: the native Go twin of the guest in testdata/ledger,
// whose doc comment specifies the events and their operations.

// Tables.
const (
	accounts uint32 = 0
	books    uint32 = 1
)

// Functions (txn.Op.Fn), numbered as the guest numbers them.
const (
	fnCredit uint32 = iota
	fnCreditIfFunded
	fnDebitIfFunded
	fnClose
	fnRedirect
)

// limit is the balance a redirect aborts rather than exceed.
const limit = 400

// event encodes an event of kind with its u32 fields.
func event(kind byte, fields ...uint32) []byte {
	b := []byte{kind}
	for _, f := range fields {
		b = binary.LittleEndian.AppendUint32(b, f)
	}
	return b
}

func deposit(acct, book, amount uint32) []byte { return event('D', acct, book, amount) }

func transfer(src, srcBook, dst, dstBook, amount uint32) []byte {
	return event('T', src, srcBook, dst, dstBook, amount)
}

func redirect(ptr, amount, mod uint32) []byte { return event('N', ptr, amount, mod) }

func closing(acct uint32) []byte { return event('C', acct) }

// records makes the batch of events, event i keyed "e<i>" at time i.
func records(values ...[]byte) []abi.Record {
	rs := make([]abi.Record, len(values))
	for i, v := range values {
		rs[i] = abi.Record{Time: int64(i), Key: fmt.Appendf(nil, "e%d", i), Value: v}
	}
	return rs
}

func field(v []byte, i int) uint32 {
	if len(v) < 1+4*(i+1) {
		return 0
	}
	return binary.LittleEndian.Uint32(v[1+4*i:])
}

// appendKey appends account number n as the 8-digit decimal key.
func appendKey(dst []byte, n uint32) []byte {
	s := strconv.AppendUint(nil, uint64(n), 10)
	for i := len(s); i < 8; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

func key(table, n uint32) txn.Key {
	return txn.Key{Table: table, Key: string(appendKey(nil, n))}
}

func enc(v int64) []byte { return binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(v)) }

func balance(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b))
}

func modulo(v, m int64) int64 { return ((v % m) + m) % m }

// nativeLedger is the guest's logic in Go. Events of the kinds that only
// provoke failures in the guest are empty transactions here.
type nativeLedger struct {
	// brief makes Post emit only "committed" or "aborted", as the guest
	// configured with "brief" does.
	brief    bool
	key, arg []byte // scratch of Plan
}

var _ txnop.Logic = (*nativeLedger)(nil)

func (l *nativeLedger) k(p *txnop.Plan, table, n uint32) txn.Key {
	l.key = appendKey(l.key[:0], n)
	return p.Key(table, l.key)
}

func (l *nativeLedger) args(p *txnop.Plan, vs ...uint32) []byte {
	l.arg = l.arg[:0]
	for _, v := range vs {
		l.arg = binary.LittleEndian.AppendUint32(l.arg, v)
	}
	return p.Bytes(l.arg)
}

func (l *nativeLedger) Plan(_ context.Context, events []abi.Record, p *txnop.Plan) error {
	for i := range events {
		v := events[i].Value
		var ops []txn.Op
		kind := byte(0)
		if len(v) > 0 {
			kind = v[0]
		}
		switch kind {
		case 'D':
			amt := l.args(p, field(v, 2))
			ops = p.Ops(2)
			ops[0] = txn.Op{Write: l.k(p, accounts, field(v, 0)), Fn: fnCredit, Arg: amt}
			ops[1] = txn.Op{Write: l.k(p, books, field(v, 1)), Fn: fnCredit, Arg: amt}
		case 'T':
			amt := l.args(p, field(v, 4))
			reads := p.Keys(1)
			reads[0] = l.k(p, accounts, field(v, 0))
			ops = p.Ops(4)
			ops[0] = txn.Op{Write: l.k(p, books, field(v, 1)), Reads: reads, Fn: fnDebitIfFunded, Arg: amt}
			ops[1] = txn.Op{Write: l.k(p, accounts, field(v, 2)), Reads: reads, Fn: fnCreditIfFunded, Arg: amt}
			ops[2] = txn.Op{Write: l.k(p, books, field(v, 3)), Reads: reads, Fn: fnCreditIfFunded, Arg: amt}
			ops[3] = txn.Op{Write: reads[0], Fn: fnDebitIfFunded, Arg: amt}
		case 'N':
			ops = p.Ops(1)
			ops[0] = txn.Op{NonDet: true, Table: accounts, Fn: fnRedirect, Arg: l.args(p, field(v, 0), field(v, 1), field(v, 2))}
		case 'C':
			ops = p.Ops(1)
			ops[0] = txn.Op{Write: l.k(p, accounts, field(v, 0)), Fn: fnClose}
		}
		p.Txns = append(p.Txns, txn.Txn{Ops: ops})
	}
	return nil
}

func (l *nativeLedger) Apply(_ context.Context, _, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
	amt := int64(0)
	if len(o.Arg) >= 4 {
		amt = int64(binary.LittleEndian.Uint32(o.Arg))
	}
	ownB, found := a.Own()
	own := balance(ownB)
	switch o.Fn {
	case fnCredit:
		return txn.Effect{Value: enc(own + amt)}, nil
	case fnCreditIfFunded, fnDebitIfFunded:
		src := own
		if len(o.Reads) > 0 {
			v, _ := a.Read(0)
			src = balance(v)
		}
		if src < amt || (o.Fn == fnDebitIfFunded && own < amt) {
			return txn.Effect{Abort: true}, nil
		}
		if o.Fn == fnCreditIfFunded {
			return txn.Effect{Value: enc(own + amt)}, nil
		}
		return txn.Effect{Value: enc(own - amt)}, nil
	case fnClose:
		if !found || own >= 10 {
			return txn.Effect{Keep: true}, nil
		}
		return txn.Effect{Delete: true}, nil
	case fnRedirect:
		return redirectApply(o.Arg, a)
	}
	return txn.Effect{}, fmt.Errorf("native ledger: unknown function %d", o.Fn)
}

func redirectApply(arg []byte, a txn.Access) (txn.Effect, error) {
	le := binary.LittleEndian
	ptr, amt, mod := le.Uint32(arg), int64(le.Uint32(arg[4:])), int64(le.Uint32(arg[8:]))
	b, _, err := a.Get(key(accounts, ptr))
	if err != nil {
		return txn.Effect{}, err
	}
	v := balance(b)
	target := key(accounts, uint32(modulo(v, mod)))
	if modulo(v, 5) == 4 {
		return txn.Effect{Keep: true}, a.Delete(target)
	}
	tb, _, err := a.Get(target)
	if err != nil {
		return txn.Effect{}, err
	}
	if balance(tb)+amt > limit {
		return txn.Effect{Abort: true}, nil
	}
	return txn.Effect{Keep: true}, a.Put(target, enc(balance(tb)+amt))
}

func (l *nativeLedger) Post(_ context.Context, events []abi.Record, p *txnop.Plan, res *txn.Result, out *plugin.Output) error {
	l.post(events, 0, len(events), p, res, out)
	return nil
}

// post posts events lo to hi-1 of the batch.
func (l *nativeLedger) post(events []abi.Record, lo, hi int, p *txnop.Plan, res *txn.Result, out *plugin.Output) {
	for t := lo; t < hi; t++ {
		r := &events[t]
		if len(r.Value) > 0 && r.Value[0] == 'D' && field(r.Value, 2) == 0 {
			out.Rejects = append(out.Rejects, plugin.Reject{Index: t, Err: &plugin.RecordError{
				Plugin: "native", Export: "post", Index: t, Reason: "zero amount", Err: plugin.ErrRejected,
			}})
			continue
		}
		o := abi.Record{Origin: uint32(t), Time: r.Time, Key: r.Key}
		switch {
		case !l.brief:
			o.Value = describe(r.Value, t, &p.Txns[t], res)
		case res.Committed[t]:
			o.Value = []byte("committed")
		default:
			o.Value = []byte("aborted")
		}
		out.Records = append(out.Records, o)
	}
}

func (l *nativeLedger) Close(context.Context) error { return nil }

// partLedger is the native ledger as a txnop.PartLogic: one nativeLedger
// (with its scratch) per worker.
type partLedger struct {
	nativeLedger
	ws []*nativeLedger
}

var _ txnop.PartLogic = (*partLedger)(nil)

func newPartLedger(workers int) *partLedger {
	l := &partLedger{}
	for range workers {
		l.ws = append(l.ws, &nativeLedger{})
	}
	return l
}

func (l *partLedger) PlanPart(ctx context.Context, w int, events []abi.Record, _ int, p *txnop.Plan) error {
	return l.ws[w].Plan(ctx, events, p)
}

func (l *partLedger) PostPart(_ context.Context, w int, events []abi.Record, lo, hi int, p *txnop.Plan, res *txn.Result, out *plugin.Output) error {
	l.ws[w].post(events, lo, hi, p, res, out)
	return nil
}

// describe spells out event t's outcome as the guest does.
func describe(ev []byte, t int, tx *txn.Txn, res *txn.Result) []byte {
	var b []byte
	if len(ev) > 0 {
		b = append(b, ev[0])
	}
	if res.Committed[t] {
		b = append(b, " committed"...)
	} else {
		b = append(b, " aborted"...)
	}
	for m := range tx.Ops {
		o := res.Observed(t, m)
		b = fmt.Appendf(b, " op%d:", m)
		if !o.Executed {
			b = append(b, '-')
			continue
		}
		b = append(b, "own="...)
		b = appendValue(b, o.Own)
		for _, r := range o.Reads {
			b = append(b, " r="...)
			b = appendValue(b, r)
		}
		for _, g := range o.Gets {
			b = fmt.Appendf(b, " g%d/%s=", g.Key.Table, g.Key.Key)
			b = appendValue(b, g.Value)
		}
	}
	return b
}

func appendValue(b []byte, v txn.Value) []byte {
	if !v.Found {
		return append(b, "none"...)
	}
	return strconv.AppendInt(b, balance(v.Bytes), 10)
}
