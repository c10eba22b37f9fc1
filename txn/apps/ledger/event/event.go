package event

import (
	"github.com/sluicehq/sluice/txn/apps/internal/wire"
)

// Tag is the first byte of every Streaming Ledger event (format v1).
const Tag byte = 'L'

// Table indices and names, in the order the workload declares them.
const (
	Accounts         = 0
	BookEntries      = 1
	AccountsTable    = "accounts"
	BookEntriesTable = "book_entries"
)

// Amounts and balances, after MorphStream's SL generator and initializer,
// but for the starting balance.
const (
	// InitialBalance is every account's and book entry's starting balance:
	// 10^10. MorphStream starts at 10^6, which a hot key runs out of
	// within a run (at Zipf 2.0 the hottest account and book entry lose
	// about 17 an event net of what they receive: some 60,000 events),
	// after which transfers abort on funds besides those drawn to abort.
	// From 10^10 no balance falls below TransferAmount within 10^8 events,
	// so the transfers that abort are exactly those drawn to abort; and
	// 10^8 keys (the most the codec takes) still sum within an int64.
	InitialBalance int64 = 10_000_000_000
	// DepositAmount is the amount of a deposit.
	DepositAmount int64 = 10
	// TransferAmount is the amount of a transfer that may commit.
	TransferAmount int64 = 100
	// AbortAmount is the amount of a transfer drawn to abort: no balance
	// reaches it (2^62), so its condition fails.
	AbortAmount int64 = 1 << 62
)

// KeyWidth is the number of decimal digits of a key.
const KeyWidth = wire.KeyWidth

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = wire.ErrMalformed

// FieldError is the error a decoder returns: it names the field at fault.
type FieldError = wire.FieldError

// Event is a deposit or a transfer.
type Event struct {
	// Deposit is true for a deposit, false for a transfer.
	Deposit bool
	// Account and Book are credited by a deposit and debited by a transfer.
	Account, Book uint32
	// DstAccount and DstBook are credited by a transfer; a deposit has
	// none and the codec does not carry them.
	DstAccount, DstBook uint32
	// Amount is the amount moved, at least 0.
	Amount int64
	// BusyNanos is the busy work each operation does, in nanoseconds.
	BusyNanos uint32
}

const flagDeposit = 1

// AppendEvent appends the encoding of e to dst. A deposit's DstAccount and
// DstBook are not encoded. A negative Amount is encoded as 0.
func AppendEvent(dst []byte, e *Event) []byte {
	flags := byte(0)
	if e.Deposit {
		flags |= flagDeposit
	}
	dst = append(dst, Tag, flags)
	dst = wire.AppendUvarint(dst, uint64(e.Account))
	dst = wire.AppendUvarint(dst, uint64(e.Book))
	if !e.Deposit {
		dst = wire.AppendUvarint(dst, uint64(e.DstAccount))
		dst = wire.AppendUvarint(dst, uint64(e.DstBook))
	}
	dst = wire.AppendUvarint(dst, uint64(max(e.Amount, 0)))
	return wire.AppendUvarint(dst, uint64(e.BusyNanos))
}

const format = "ledger event"

// DecodeEvent decodes an event written by AppendEvent. A malformed input
// fails with a *FieldError naming the field.
func DecodeEvent(b []byte) (Event, error) {
	var e Event
	r := wire.NewReader(format, b)
	r.Tag(Tag, "a Streaming Ledger event")
	flags := r.Byte("flags")
	if flags&^flagDeposit != 0 {
		r.FailAt("flags", 1, "unknown flag bits")
	}
	e.Deposit = flags&flagDeposit != 0
	e.Account = r.Uvarint32("account", wire.MaxKeys-1)
	e.Book = r.Uvarint32("book", wire.MaxKeys-1)
	if !e.Deposit {
		e.DstAccount = r.Uvarint32("dst account", wire.MaxKeys-1)
		e.DstBook = r.Uvarint32("dst book", wire.MaxKeys-1)
	}
	e.Amount = r.Int64("amount")
	e.BusyNanos = r.Uvarint32("busy-ns", 1<<32-1)
	if err := r.Err(); err != nil {
		return Event{}, err
	}
	return e, nil
}

// AppendKey appends key k of either table: k in KeyWidth decimal digits.
func AppendKey(dst []byte, k uint32) []byte { return wire.AppendKey(dst, k) }

// ParseKey parses a key written by AppendKey.
func ParseKey(b []byte) (uint32, bool) { return wire.ParseKey(b) }

// AppendBalance appends a balance: 8 bytes, little endian.
func AppendBalance(dst []byte, v int64) []byte { return wire.AppendUint64(dst, uint64(v)) }

// DecodeBalance decodes a balance. An empty value (a key never written) is
// 0; any other length than 8 fails with a *FieldError.
func DecodeBalance(b []byte) (int64, error) {
	var w [1]uint64
	err := wire.Fixed("ledger balance", "balance", b, w[:])
	return int64(w[0]), err
}
