// Package ledger is the Streaming Ledger benchmark of MorphStream in native
// Go: accounts and book entries; a deposit credits an account and a book
// entry (two read-modify-writes); a transfer moves an amount from a source
// account and book entry to a destination account and book entry (four
// read-modify-writes). A transfer commits only when the source account and
// the source book entry both hold the amount; otherwise the whole transfer
// aborts, so no balance goes negative. Balances are int64, 8 bytes little
// endian.
//
// The transfer's operations read the source balances before the transfer:
// the source book entry's debit comes first and reads the source account,
// so it checks both conditions (its own balance is the book entry's); the
// two credits read the source account; the source account's own debit
// comes last, on its own balance. A transfer short of funds therefore
// aborts at its first operation, and the three others, conditioned on the
// source account as MorphStream declares them, keep the parametric
// dependencies on the source account's chain.
package ledger

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/internal/zipf"
)

// Tables.
const (
	Accounts    uint32 = 0
	BookEntries uint32 = 1
)

// Functions (txn.Op.Fn).
const (
	// FnCredit adds the event's amount to the own key.
	FnCredit uint32 = iota
	// FnCreditIfFunded adds the amount if the read source balance covers it.
	FnCreditIfFunded
	// FnDebitIfFunded subtracts the amount if the own balance covers it
	// and, with a read, the read source balance does too.
	FnDebitIfFunded
)

// Event is a deposit or a transfer.
type Event struct {
	Deposit bool
	// Account and Book are credited by a deposit, debited by a transfer.
	Account, Book int
	// DstAccount and DstBook are credited by a transfer.
	DstAccount, DstBook int
	Amount              int64
}

// Config describes a generated workload.
type Config struct {
	Keys           int     // accounts (and as many book entries)
	DepositRatio   float64 // fraction of deposits
	Skew           float64 // Zipf θ of the keys
	MaxAmount      int64   // amounts are drawn in [1, MaxAmount]
	InitialBalance int64
	Seed           uint64
}

// Workload is a generated Streaming Ledger workload.
type Workload struct {
	Config
	names []string
	z     *zipf.Zipf
}

// New returns a workload generator.
func New(cfg Config) (*Workload, error) {
	if cfg.Keys < 2 {
		return nil, fmt.Errorf("ledger: Keys is %d, want at least 2", cfg.Keys)
	}
	if cfg.MaxAmount < 1 {
		return nil, fmt.Errorf("ledger: MaxAmount is %d, want at least 1", cfg.MaxAmount)
	}
	w := &Workload{Config: cfg, names: make([]string, cfg.Keys), z: zipf.New(cfg.Keys, cfg.Skew, cfg.Seed)}
	for i := range w.names {
		w.names[i] = fmt.Sprintf("%08d", i)
	}
	return w, nil
}

// Key returns key i of a table.
func (w *Workload) Key(table uint32, i int) txn.Key { return txn.Key{Table: table, Key: w.names[i]} }

// Events draws n events.
func (w *Workload) Events(n int) []Event {
	r := w.z.Rand()
	ev := make([]Event, n)
	for i := range ev {
		e := Event{Deposit: r.Float64() < w.DepositRatio, Amount: 1 + r.Int64N(w.MaxAmount)}
		e.Account, e.Book = w.z.Next(), w.z.Next()
		if !e.Deposit {
			e.DstAccount, e.DstBook = w.z.Next(), w.z.Next()
			for e.DstAccount == e.Account {
				e.DstAccount = r.IntN(w.Keys)
			}
			for e.DstBook == e.Book {
				e.DstBook = r.IntN(w.Keys)
			}
		}
		ev[i] = e
	}
	return ev
}

// Plan declares the operations of each event, appending to batch.
func (w *Workload) Plan(events []Event, batch []txn.Txn) []txn.Txn {
	for _, e := range events {
		if e.Deposit {
			batch = append(batch, txn.Txn{Ops: []txn.Op{
				{Write: w.Key(Accounts, e.Account), Fn: FnCredit},
				{Write: w.Key(BookEntries, e.Book), Fn: FnCredit},
			}})
			continue
		}
		src := w.Key(Accounts, e.Account)
		reads := []txn.Key{src}
		batch = append(batch, txn.Txn{Ops: []txn.Op{
			{Write: w.Key(BookEntries, e.Book), Reads: reads, Fn: FnDebitIfFunded},
			{Write: w.Key(Accounts, e.DstAccount), Reads: reads, Fn: FnCreditIfFunded},
			{Write: w.Key(BookEntries, e.DstBook), Reads: reads, Fn: FnCreditIfFunded},
			{Write: src, Fn: FnDebitIfFunded},
		}})
	}
	return batch
}

// Store returns the initial state: every account and book entry holds
// InitialBalance.
func (w *Workload) Store() txn.MapStore {
	s := make(txn.MapStore, 2*w.Keys)
	v := Encode(w.InitialBalance)
	for i := 0; i < w.Keys; i++ {
		s[w.Key(Accounts, i)] = v
		s[w.Key(BookEntries, i)] = v
	}
	return s
}

// Encode encodes a balance.
func Encode(v int64) []byte { return binary.LittleEndian.AppendUint64(make([]byte, 0, 8), uint64(v)) }

// Decode decodes a balance; a missing or short value is 0.
func Decode(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b))
}

// Apply returns the function table for a batch of events: events[i] is
// the event of transaction i. It is safe for concurrent use.
func Apply(events []Event) txn.Apply {
	return func(t, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
		amt := events[t].Amount
		own, _ := a.Own()
		bal := Decode(own)
		switch o.Fn {
		case FnCredit:
			return txn.Effect{Value: Encode(bal + amt)}, nil
		case FnCreditIfFunded, FnDebitIfFunded:
			src := bal
			if len(o.Reads) > 0 {
				v, _ := a.Read(0)
				src = Decode(v)
			}
			if src < amt || (o.Fn == FnDebitIfFunded && bal < amt) {
				return txn.Effect{Abort: true}, nil
			}
			if o.Fn == FnCreditIfFunded {
				return txn.Effect{Value: Encode(bal + amt)}, nil
			}
			return txn.Effect{Value: Encode(bal - amt)}, nil
		}
		return txn.Effect{}, fmt.Errorf("ledger: unknown function %d", o.Fn)
	}
}
