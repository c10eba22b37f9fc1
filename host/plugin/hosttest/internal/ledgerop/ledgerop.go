// Package ledgerop is a small transactional operator written with the Go
// SDK, used by the SDK's tests and benchmarks both natively
// (hosttest.TxnLogic) and compiled to WebAssembly
// (testdata/txnguest), so that the two runs of one source can be compared.
//
// It keeps a ledger in three tables: accounts, books (book entries) and
// aliases (names bound to accounts). Events:
//
//   - deposit: credits an account and a book entry (two read-modify-writes);
//   - transfer: moves an amount from a source account and book entry to a
//     destination account and book entry (four read-modify-writes, each
//     conditioned on the source account's balance before the transfer,
//     the debit of the source book entry on its own balance too); the
//     transaction commits only when both source balances hold the amount,
//     and aborts otherwise;
//   - bind: binds an alias to an account;
//   - pay: credits the account an alias is bound to: a non-deterministic
//     operation over accounts, since the key it writes is a value it reads,
//     aborting when the alias is unbound;
//   - reject: no operation; its Post fails, dead-lettering it;
//   - fail: an operation whose function fails the batch;
//   - stray: an operation whose function reads a key it did not declare;
//   - lookup: a bind whose plan finds the aliases table by name
//     (sluice.TableID) rather than by its handle.
//
// Each event's output is one record with the event's key and a value that
// tells its outcome and what it read. Balances are int64, 8 bytes little
// endian; a missing balance is 0.
package ledgerop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

// Table handles: the operator's tables, in this order (Tables).
const (
	Accounts sluice.Table = iota
	Books
	Aliases
)

// Tables returns the names of the operator's tables, by handle.
func Tables() []string { return []string{"accounts", "books", "aliases"} }

// Event kinds: the first byte of an event's value.
const (
	KindDeposit  = 'D'
	KindTransfer = 'T'
	KindBind     = 'B'
	KindPay      = 'P'
	KindReject   = 'R'
	KindFail     = 'F'
	KindStray    = 'S'
	KindLookup   = 'L'
)

// Functions, by index in Op().Funcs.
const (
	fnCredit = iota
	fnCreditIfFunded
	fnDebitIfFunded
	fnBind
	fnPay
	fnFail
	fnStray
)

// eventSize is the size of an encoded event: kind, four u32 operands, an
// i64 amount.
const eventSize = 1 + 4*4 + 8

// event is a decoded event.
type event struct {
	kind       byte
	a, b, c, d uint32
	amount     int64
}

func encode(kind byte, a, b, c, d int, amount int64) []byte {
	v := make([]byte, 0, eventSize)
	v = append(v, kind)
	for _, x := range [...]int{a, b, c, d} {
		v = binary.LittleEndian.AppendUint32(v, uint32(x))
	}
	return binary.LittleEndian.AppendUint64(v, uint64(amount))
}

func decode(v []byte) (event, error) {
	if len(v) != eventSize {
		return event{}, fmt.Errorf("ledgerop: event of %d bytes, want %d", len(v), eventSize)
	}
	le := binary.LittleEndian
	return event{kind: v[0], a: le.Uint32(v[1:]), b: le.Uint32(v[5:]), c: le.Uint32(v[9:]), d: le.Uint32(v[13:]), amount: int64(le.Uint64(v[17:]))}, nil
}

func record(i int, v []byte) sluice.Record {
	return sluice.Record{Key: strconv.AppendInt([]byte("ev"), int64(i), 10), Value: v, Time: int64(i)}
}

// Deposit returns event i: a deposit of amount to account and book.
func Deposit(i, account, book int, amount int64) sluice.Record {
	return record(i, encode(KindDeposit, account, book, 0, 0, amount))
}

// Transfer returns event i: a transfer of amount from account and book to
// dstAccount and dstBook.
func Transfer(i, account, book, dstAccount, dstBook int, amount int64) sluice.Record {
	return record(i, encode(KindTransfer, account, book, dstAccount, dstBook, amount))
}

// Bind returns event i: alias is bound to account.
func Bind(i, alias, account int) sluice.Record {
	return record(i, encode(KindBind, alias, 0, account, 0, 0))
}

// Lookup returns event i: a bind whose plan resolves the aliases table by
// name.
func Lookup(i, alias, account int) sluice.Record {
	return record(i, encode(KindLookup, alias, 0, account, 0, 0))
}

// Pay returns event i: amount credited to the account alias is bound to.
func Pay(i, alias int, amount int64) sluice.Record {
	return record(i, encode(KindPay, alias, 0, 0, 0, amount))
}

// Other returns event i of one of the kinds without operands (KindReject,
// KindFail, KindStray), or of an unknown kind (whose Plan fails).
func Other(i int, kind byte) sluice.Record { return record(i, encode(kind, 0, 0, 0, 0, 0)) }

// AccountKey, BookKey and AliasKey return the key of account, book entry
// or alias i.
func AccountKey(i int) []byte { return key('a', uint32(i)) }

// BookKey returns the key of book entry i.
func BookKey(i int) []byte { return key('b', uint32(i)) }

// AliasKey returns the key of alias i.
func AliasKey(i int) []byte { return key('x', uint32(i)) }

func key(prefix byte, i uint32) []byte { return appendKey(nil, prefix, i) }

// appendKey appends a key: the prefix and i in four decimal digits (more
// when i is larger).
func appendKey(dst []byte, prefix byte, i uint32) []byte {
	dst = append(dst, prefix)
	for d := uint32(1000); d > i && d > 1; d /= 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendUint(dst, uint64(i), 10)
}

// Encode encodes a balance.
func Encode(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// Decode decodes a balance; a missing or short value is 0.
func Decode(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b))
}

// Op returns the operator.
func Op() sluice.Txn {
	return sluice.Txn{
		Plan: plan,
		Funcs: []sluice.TxnFunc{
			fnCredit:         credit,
			fnCreditIfFunded: creditIfFunded,
			fnDebitIfFunded:  debitIfFunded,
			fnBind:           bind,
			fnPay:            pay,
			fnFail:           func(*sluice.Call) sluice.Effect { return sluice.Fail(errFail) },
			fnStray:          stray,
		},
		Post: post,
	}
}

var errFail = errors.New("failed on purpose")

// BenchOp returns the operator with a Post that emits one small record per
// event (its key, and whether it committed), for benchmarks: Op's Post
// spells out everything an event read, for tests, at a cost that would
// hide the SDK's.
func BenchOp() sluice.Txn {
	op := Op()
	op.Post = func(ev sluice.Record, o *sluice.Outcome, out *sluice.Emitter) error {
		v := committed
		if !o.Committed {
			v = aborted
		}
		out.Emit(sluice.Record{Key: ev.Key, Value: v, Time: ev.Time})
		return nil
	}
	return op
}

var committed, aborted = []byte("committed"), []byte("aborted")

func plan(ev sluice.Record, p *sluice.Planner) error {
	e, err := decode(ev.Value)
	if err != nil {
		return err
	}
	amount := ev.Value[17:] // the argument of money operations
	var k1, k2 [12]byte
	switch e.kind {
	case KindDeposit:
		p.Write(Accounts, appendKey(k1[:0], 'a', e.a), fnCredit, amount)
		p.Write(Books, appendKey(k1[:0], 'b', e.b), fnCredit, amount)
	case KindTransfer:
		src := sluice.Key{Table: Accounts, Key: appendKey(k2[:0], 'a', e.a)}
		p.Write(Books, appendKey(k1[:0], 'b', e.b), fnDebitIfFunded, amount, src)
		p.Write(Accounts, appendKey(k1[:0], 'a', e.c), fnCreditIfFunded, amount, src)
		p.Write(Books, appendKey(k1[:0], 'b', e.d), fnCreditIfFunded, amount, src)
		p.Write(Accounts, src.Key, fnDebitIfFunded, amount)
	case KindBind:
		p.Write(Aliases, appendKey(k1[:0], 'x', e.a), fnBind, appendKey(k2[:0], 'a', e.c))
	case KindPay:
		p.NonDet(Accounts, fnPay, amount, sluice.Key{Table: Aliases, Key: appendKey(k1[:0], 'x', e.a)})
	case KindLookup:
		aliases, err := sluice.TableID("aliases")
		if err != nil {
			return err
		}
		p.Write(aliases, appendKey(k1[:0], 'x', e.a), fnBind, appendKey(k2[:0], 'a', e.c))
	case KindReject:
	case KindFail:
		p.Write(Accounts, appendKey(k1[:0], 'a', 0), fnFail, nil)
	case KindStray:
		p.Write(Accounts, appendKey(k1[:0], 'a', 0), fnStray, nil)
	default:
		return fmt.Errorf("ledgerop: unknown event kind %q", e.kind)
	}
	return nil
}

// put returns the Effect that writes balance v, built in c's scratch.
func put(c *sluice.Call, v int64) sluice.Effect {
	b := c.Scratch(8)
	binary.LittleEndian.PutUint64(b, uint64(v))
	return sluice.Write(b)
}

func credit(c *sluice.Call) sluice.Effect {
	own, _ := c.Own()
	return put(c, Decode(own)+Decode(c.Arg()))
}

// funded reports whether the source balance covers the amount: the
// declared read's, or the own key's without one. A debit also needs its
// own balance to cover it (debitIfFunded).
func funded(c *sluice.Call) bool {
	src, _ := c.Own()
	if c.Reads() > 0 {
		src, _ = c.Read(0)
	}
	return Decode(src) >= Decode(c.Arg())
}

func creditIfFunded(c *sluice.Call) sluice.Effect {
	if !funded(c) {
		return sluice.Abort()
	}
	return credit(c)
}

func debitIfFunded(c *sluice.Call) sluice.Effect {
	own, _ := c.Own()
	if !funded(c) || Decode(own) < Decode(c.Arg()) {
		return sluice.Abort()
	}
	return put(c, Decode(own)-Decode(c.Arg()))
}

func bind(c *sluice.Call) sluice.Effect { return sluice.Write(c.Arg()) }

// pay credits the account the declared alias is bound to.
func pay(c *sluice.Call) sluice.Effect {
	account, ok := c.Read(0)
	if !ok {
		return sluice.Abort() // unbound alias
	}
	v, _, err := c.Get(c.Table(), account)
	if err != nil {
		return sluice.Fail(err)
	}
	b := c.Scratch(8)
	binary.LittleEndian.PutUint64(b, uint64(Decode(v)+Decode(c.Arg())))
	if err := c.Put(c.Table(), account, b); err != nil {
		return sluice.Fail(err)
	}
	return sluice.Keep()
}

// stray reads a key of another table it did not declare.
func stray(c *sluice.Call) sluice.Effect {
	if _, _, err := c.Get(Books, []byte("undeclared")); err != nil {
		return sluice.Fail(err)
	}
	return sluice.Keep()
}

func post(ev sluice.Record, o *sluice.Outcome, out *sluice.Emitter) error {
	if ev.Value[0] == KindReject {
		return errors.New("rejected on purpose")
	}
	v := append(make([]byte, 0, 64), ev.Value[0], ' ')
	if o.Committed {
		v = append(v, "committed"...)
	} else {
		v = append(v, "aborted"...)
	}
	for m, op := range o.Ops {
		v = fmt.Appendf(v, " op%d", m)
		if !op.Executed {
			v = append(v, "=skipped"...)
			continue
		}
		v = fmt.Appendf(v, " own=%s", show(op.Own))
		for _, r := range op.Reads {
			v = fmt.Appendf(v, " read=%s", show(r))
		}
		for _, g := range op.Gets {
			v = fmt.Appendf(v, " get=%d/%s:%s", g.Table, g.Key, show(g.Value))
		}
	}
	out.Emit(sluice.Record{Key: ev.Key, Value: v, Time: ev.Time})
	return nil
}

// show renders a value read: a balance, an alias's account, or "-".
func show(v sluice.Value) string {
	switch {
	case !v.Found:
		return "-"
	case len(v.Bytes) == 8:
		return strconv.FormatInt(Decode(v.Bytes), 10)
	}
	return string(v.Bytes)
}
