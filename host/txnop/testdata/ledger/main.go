// Command ledger is the raw transactional test guest of package txnop: no
// SDK, only //go:wasmexport, //go:wasmimport and the abi package's
// encoders. It keeps a small ledger over two tables, accounts (handle 0)
// and books (handle 1), whose values are int64 balances, 8 bytes little
// endian, under keys that are 8-digit decimal account numbers.
//
// An event's value is a kind byte and u32 little-endian fields:
//
//	'D' acct book amount          deposit: credit accounts[acct] and
//	                              books[book]; post rejects a zero amount
//	'T' src srcBook dst dstBook amount
//	                              transfer: debit books[srcBook], credit
//	                              accounts[dst] and books[dstBook], debit
//	                              accounts[src], each conditional on the
//	                              source account's balance, the debits on
//	                              their own balances too: the transfer
//	                              aborts unless accounts[src] and
//	                              books[srcBook] both hold the amount
//	'N' ptr amount mod            non-deterministic redirect over accounts:
//	                              read accounts[ptr]; its balance v names
//	                              the target account v mod mod; credit it,
//	                              or delete it when v mod 5 == 4; abort
//	                              when the target would exceed 400
//	'C' acct                      close: delete accounts[acct] when its
//	                              balance is under 10, else keep it
//
// and, to provoke failures:
//
//	'S' acct how                  read (how 0) or write (how 1) a key
//	                              outside the declaration, then write
//	'X' acct                      trap in apply
//	'L' acct                      loop forever in apply
//	'W' acct                      ApplyWrite with a value pointer outside
//	                              memory
//	'E' acct                      return StatusError from apply
//	'M'                           call txn_plan with a malformed declaration
//	'G'                           call txn_get during plan
//	'O'                           declare an operation for a later event
//	                              than the batch has
//	'Q'                           declare an operation for the previous
//	                              event
//	'P'                           trap in post
//
// Post emits one record per event: its key, and a value that spells out
// its outcome (see describe), which the tests compare with the native
// logic's; or, when the configuration contains "brief", only "committed"
// or "aborted", as Streaming Ledger's benchmark does.
package main

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
)

func main() {}

//go:wasmimport sluice emit
func emit(ptr, n uint32)

//go:wasmimport sluice reject
func reject(origin, ptr, n uint32)

//go:wasmimport sluice log
func hostLog(level int32, ptr, n uint32)

//go:wasmimport sluice txn_plan
func txnPlan(ptr, n uint32)

//go:wasmimport sluice txn_get
func txnGet(table, kp, kn, bp, bc uint32) int32

//go:wasmimport sluice txn_put
func txnPut(table, kp, kn, vp, vn uint32) int32

//go:wasmimport sluice txn_delete
func txnDelete(table, kp, kn uint32) int32

// Tables.
const (
	accounts = 0
	books    = 1
)

// Functions (OpDecl.Fn).
const (
	fnCredit = iota
	fnCreditIfFunded
	fnDebitIfFunded
	fnClose
	fnRedirect
	fnStray
	fnTrap
	fnBadPtr
	fnStatus
	fnLoop
)

const (
	oobPtr = 0xFFFF_0000 // beyond any memory a test engine allows
	limit  = 400         // a redirect aborts rather than exceed it
)

var (
	region []byte // the last region sluice_alloc handed out, valid until the next
	plan   []byte
	out    []byte
	desc   []byte
	d      abi.OpDecl
	reads  = make([]abi.TableKey, 1)
	keys   [4][8]byte
	args   [12]byte
	q      abi.ApplyRequest
	val    = make([]byte, 8)
	keyA   = make([]byte, 0, 8)
	keyB   = make([]byte, 0, 8)
	small  = make([]byte, 4) // too small for a balance: exercises txn_get's retry
	big    = make([]byte, 64)
	dec    abi.Decoder
	odec   abi.OutcomeDecoder
	sink   uint64
	brief  bool
)

func addr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

func mem(ptr, n uint32) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n) }

func logError(msg string) {
	b := []byte(msg)
	hostLog(abi.LogError, addr(b), uint32(len(b)))
}

//go:wasmexport sluice_configure
func configure(ptr, n uint32) int32 {
	brief = strings.Contains(string(mem(ptr, n)), "brief")
	return abi.StatusOK
}

//go:wasmexport sluice_abi_version
func abiVersion() int32 { return abi.Version }

// alloc keeps the region it hands out until its next call, as the
// transactional ABI asks: the host reuses a region for many apply requests.
//
//go:wasmexport sluice_alloc
func alloc(size uint32) uint32 {
	if uint32(cap(region)) < size || size == 0 {
		region = make([]byte, max(size, 1))
	}
	return addr(region)
}

func u32(b []byte, i int) uint32 {
	if len(b) < 1+4*(i+1) {
		return 0
	}
	return binary.LittleEndian.Uint32(b[1+4*i:])
}

// key formats account number n (under 10^8) as the 8-digit decimal key,
// into dst.
func key(dst []byte, n uint32) []byte {
	dst = dst[:8]
	for i := 7; i >= 0; i-- {
		dst[i] = byte('0' + n%10)
		n /= 10
	}
	return dst
}

// arg encodes the u32 values as an operation's argument, in a buffer
// reused by the next call.
func arg(vs ...uint32) []byte {
	b := args[:0]
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

//go:wasmexport sluice_plan
func sluicePlan(ptr, n uint32) int32 {
	if err := dec.Reset(mem(ptr, n)); err != nil {
		logError("plan: " + err.Error())
		return abi.StatusError
	}
	plan = plan[:0]
	var r abi.Record
	for i := uint32(0); dec.Next(&r); i++ {
		declare(i, r.Value)
		if len(plan) > 4096 {
			flush()
		}
	}
	if err := dec.Err(); err != nil {
		logError("plan: " + err.Error())
		return abi.StatusError
	}
	flush()
	return abi.StatusOK
}

func flush() {
	if len(plan) > 0 {
		txnPlan(addr(plan), uint32(len(plan)))
	}
	plan = plan[:0]
}

// op declares an operation, reading src when it is not nil.
func op(ev, fn, table uint32, k []byte, a []byte, src []byte) {
	d = abi.OpDecl{Event: ev, Fn: fn, Table: table, Key: k, Arg: a}
	if src != nil {
		reads[0] = abi.TableKey{Table: accounts, Key: src}
		d.Reads = reads
	}
	plan = abi.AppendOpDecl(plan, &d)
}

// declare declares the operations of event ev, whose value is v. It
// allocates nothing once the plan buffer has grown.
func declare(ev uint32, v []byte) {
	if len(v) == 0 {
		return
	}
	a := func(i int) []byte { return key(keys[i][:], u32(v, i)) }
	switch v[0] {
	case 'D':
		amt := arg(u32(v, 2))
		op(ev, fnCredit, accounts, a(0), amt, nil)
		op(ev, fnCredit, books, a(1), amt, nil)
	case 'T':
		src := a(0)
		amt := arg(u32(v, 4))
		op(ev, fnDebitIfFunded, books, a(1), amt, src)
		op(ev, fnCreditIfFunded, accounts, a(2), amt, src)
		op(ev, fnCreditIfFunded, books, a(3), amt, src)
		op(ev, fnDebitIfFunded, accounts, src, amt, nil)
	case 'N':
		d = abi.OpDecl{Event: ev, Fn: fnRedirect, Flags: abi.OpFlagNonDet, Table: accounts, Arg: arg(u32(v, 0), u32(v, 1), u32(v, 2))}
		plan = abi.AppendOpDecl(plan, &d)
	case 'C':
		op(ev, fnClose, accounts, a(0), nil, nil)
	case 'S':
		op(ev, fnStray, accounts, a(0), arg(u32(v, 1)), nil)
	case 'X':
		op(ev, fnTrap, accounts, a(0), nil, nil)
	case 'W':
		op(ev, fnBadPtr, accounts, a(0), nil, nil)
	case 'E':
		op(ev, fnStatus, accounts, a(0), nil, nil)
	case 'L':
		op(ev, fnLoop, accounts, a(0), nil, nil)
	case 'M':
		flush()
		bad := []byte{1, 2, 3}
		txnPlan(addr(bad), 3)
	case 'G':
		k := a(0)
		txnGet(accounts, addr(k), uint32(len(k)), addr(big), uint32(len(big)))
	case 'O':
		op(1<<20, fnCredit, accounts, a(0), arg(1), nil)
	case 'Q':
		op(ev, fnCredit, accounts, a(0), arg(1), nil)
		op(ev-1, fnCredit, accounts, a(0), arg(1), nil)
	}
}

func balance(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b))
}

// write sets the request's result slot to the 8-byte balance v.
func write(req []byte, v int64) int32 {
	binary.LittleEndian.PutUint64(val, uint64(v))
	binary.LittleEndian.PutUint32(req, addr(val))
	binary.LittleEndian.PutUint32(req[4:], 8)
	return abi.ApplyWrite
}

// get reads a key of accounts through txn_get, first into a buffer too
// small for a balance, as a guest that does not know a value's size does.
func get(k []byte) (int64, bool, int32) {
	n := txnGet(accounts, addr(k), uint32(len(k)), addr(small), uint32(len(small)))
	switch {
	case n == abi.StatusNotFound:
		return 0, false, abi.StatusOK
	case n < 0:
		return 0, false, n
	case int(n) <= len(small):
		return balance(small[:n]), true, abi.StatusOK
	}
	if int(n) > len(big) {
		big = make([]byte, n)
	}
	m := txnGet(accounts, addr(k), uint32(len(k)), addr(big), uint32(len(big)))
	if m < 0 {
		return 0, false, m
	}
	return balance(big[:m]), true, abi.StatusOK
}

// decodeRequest decodes an apply request of at most one read into q by
// fixed offsets, and reports whether it could. abi.DecodeApplyRequest
// decodes every request and says why one is malformed, but costs about a
// microsecond per call in a Go guest, five times this.
func decodeRequest(b []byte) bool {
	le := binary.LittleEndian
	field := func(p int) ([]byte, int, bool) {
		if len(b)-p < 4 {
			return nil, p, false
		}
		n := int(le.Uint32(b[p:]))
		if n > len(b)-p-4 {
			return nil, p, false
		}
		return b[p+4 : p+4+n : p+4+n], p + 4 + n, true
	}
	if len(b) < 32 {
		return false
	}
	q.Fn, q.Event, q.Op = le.Uint32(b[8:]), le.Uint32(b[12:]), le.Uint32(b[16:])
	f := le.Uint32(b[20:])
	q.Flags, q.Own.Found, q.Table = f&abi.OpFlagNonDet, f&2 != 0, le.Uint32(b[24:])
	var ok bool
	p := 28
	if q.Key, p, ok = field(p); !ok {
		return false
	}
	if q.Own.Bytes, p, ok = field(p); !ok || len(b)-p < 4 {
		return false
	}
	nr := le.Uint32(b[p:])
	p += 4
	q.Reads = q.Reads[:0]
	if nr > 1 {
		return false
	}
	if nr == 1 {
		var rv abi.ReadValue
		if len(b)-p < 4 {
			return false
		}
		rv.Table = le.Uint32(b[p:])
		if rv.Key, p, ok = field(p + 4); !ok || len(b)-p < 4 || le.Uint32(b[p:]) > 1 {
			return false
		}
		rv.Found = le.Uint32(b[p:]) == 1
		if rv.Bytes, p, ok = field(p + 4); !ok {
			return false
		}
		q.Reads = append(q.Reads, rv)
	}
	q.Arg, p, ok = field(p)
	return ok && p == len(b)
}

//go:wasmexport sluice_apply
func sluiceApply(ptr, n uint32) int32 {
	req := mem(ptr, n)
	if !decodeRequest(req) {
		if err := abi.DecodeApplyRequest(req, &q); err != nil {
			logError("apply: " + err.Error())
			return abi.StatusError
		}
	}
	amt := int64(0)
	if len(q.Arg) >= 4 {
		amt = int64(binary.LittleEndian.Uint32(q.Arg))
	}
	own := balance(q.Own.Bytes)
	switch q.Fn {
	case fnCredit:
		return write(req, own+amt)
	case fnCreditIfFunded, fnDebitIfFunded:
		src := own
		if len(q.Reads) > 0 {
			src = balance(q.Reads[0].Bytes)
		}
		if src < amt || (q.Fn == fnDebitIfFunded && own < amt) {
			return abi.ApplyAbort
		}
		if q.Fn == fnCreditIfFunded {
			return write(req, own+amt)
		}
		return write(req, own-amt)
	case fnClose:
		switch {
		case !q.Own.Found || own >= 10:
			return abi.ApplyKeep
		}
		return abi.ApplyDelete
	case fnRedirect:
		return redirect()
	case fnStray:
		k := []byte("stray")
		if amt == 0 {
			txnGet(books, addr(k), uint32(len(k)), addr(big), uint32(len(big)))
		} else {
			txnPut(accounts, addr(k), uint32(len(k)), addr(val), 8)
		}
		// The refusal is ignored on purpose: the host fails the operation
		// anyway.
		return write(req, own)
	case fnTrap:
		p := (*uint64)(unsafe.Pointer(uintptr(oobPtr)))
		sink += *p
		return abi.ApplyKeep
	case fnBadPtr:
		binary.LittleEndian.PutUint32(req, oobPtr)
		binary.LittleEndian.PutUint32(req[4:], 8)
		return abi.ApplyWrite
	case fnStatus:
		logError("status requested by event " + strconv.Itoa(int(q.Event)))
		return abi.StatusError
	case fnLoop:
		for {
			sink++
		}
	}
	logError("unknown function " + strconv.Itoa(int(q.Fn)))
	return abi.StatusError
}

func redirect() int32 {
	if len(q.Arg) < 12 {
		logError("redirect: short argument")
		return abi.StatusError
	}
	ptr := binary.LittleEndian.Uint32(q.Arg)
	amt := int64(binary.LittleEndian.Uint32(q.Arg[4:]))
	mod := int64(binary.LittleEndian.Uint32(q.Arg[8:]))
	keyA = key(keyA, ptr)
	v, _, st := get(keyA)
	if st != abi.StatusOK {
		return abi.StatusError
	}
	target := uint32(((v % mod) + mod) % mod)
	keyB = key(keyB, target)
	if ((v%5)+5)%5 == 4 {
		if txnDelete(accounts, addr(keyB), uint32(len(keyB))) != abi.StatusOK {
			return abi.StatusError
		}
		return abi.ApplyKeep
	}
	bal, _, st := get(keyB)
	if st != abi.StatusOK {
		return abi.StatusError
	}
	if bal+amt > limit {
		return abi.ApplyAbort
	}
	binary.LittleEndian.PutUint64(val, uint64(bal+amt))
	if txnPut(accounts, addr(keyB), uint32(len(keyB)), addr(val), 8) != abi.StatusOK {
		return abi.StatusError
	}
	return abi.ApplyKeep
}

//go:wasmexport sluice_post
func sluicePost(ep, en, op, on uint32) int32 {
	if err := dec.Reset(mem(ep, en)); err != nil {
		logError("post: " + err.Error())
		return abi.StatusError
	}
	nev, err := odec.Reset(mem(op, on))
	if err != nil || nev != dec.Count() {
		logError("post: outcomes do not match the events")
		return abi.StatusError
	}
	out = abi.AppendBatchHeader(out[:0], uint32(nev))
	var r abi.Record
	var e abi.EventOutcome
	for i := uint32(0); dec.Next(&r) && odec.Next(&e); i++ {
		if len(r.Value) > 0 && r.Value[0] == 'P' {
			p := (*uint64)(unsafe.Pointer(uintptr(oobPtr)))
			sink += *p
		}
		if len(r.Value) > 0 && r.Value[0] == 'D' && u32(r.Value, 2) == 0 {
			msg := []byte("zero amount")
			reject(i, addr(msg), uint32(len(msg)))
		}
		o := abi.Record{Origin: i, Time: r.Time, Key: r.Key}
		switch {
		case !brief:
			o.Value = describe(r.Value, &e)
		case e.Committed:
			o.Value = committed
		default:
			o.Value = aborted
		}
		out = abi.AppendRecord(out, &o)
	}
	if err := dec.Err(); err != nil {
		logError("post: " + err.Error())
		return abi.StatusError
	}
	if err := odec.Err(); err != nil {
		logError("post: " + err.Error())
		return abi.StatusError
	}
	emit(addr(out), uint32(len(out)))
	return abi.StatusOK
}

// describe spells out an event's outcome:
//
//	K committed|aborted, then per operation " op<m>:" and "-" when it did
//	not run, else "own=V", " r=V" per read and " g<table>/<key>=V" per get
//
// where K is the event's kind and V a balance or "none".
func describe(ev []byte, e *abi.EventOutcome) []byte {
	b := desc[:0]
	if len(ev) > 0 {
		b = append(b, ev[0])
	}
	if e.Committed {
		b = append(b, " committed"...)
	} else {
		b = append(b, " aborted"...)
	}
	for m := range e.Ops {
		o := &e.Ops[m]
		b = append(b, " op"...)
		b = strconv.AppendInt(b, int64(m), 10)
		b = append(b, ':')
		if !o.Executed {
			b = append(b, '-')
			continue
		}
		b = append(b, "own="...)
		b = value(b, o.Own)
		for _, r := range o.Reads {
			b = append(b, " r="...)
			b = value(b, r)
		}
		for _, g := range o.Gets {
			b = append(b, " g"...)
			b = strconv.AppendUint(b, uint64(g.Table), 10)
			b = append(b, '/')
			b = append(b, g.Key...)
			b = append(b, '=')
			b = value(b, g.Value)
		}
	}
	desc = b
	return b
}

var (
	committed = []byte("committed")
	aborted   = []byte("aborted")
)

func value(b []byte, v abi.Value) []byte {
	if !v.Found {
		return append(b, "none"...)
	}
	return strconv.AppendInt(b, balance(v.Bytes), 10)
}
