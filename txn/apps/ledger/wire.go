package ledger

import "github.com/sluicehq/sluice/txn/apps/ledger/event"

// FromEvent converts an event in the wire format of package event, as the
// workload generator (txn/apps/workload) draws it, to the Event that Plan
// and Apply take. Keys keep their indices: a Workload with the generator's
// key count plans it on the same state keys.
func FromEvent(e event.Event) Event {
	return Event{
		Deposit:    e.Deposit,
		Account:    int(e.Account),
		Book:       int(e.Book),
		DstAccount: int(e.DstAccount),
		DstBook:    int(e.DstBook),
		Amount:     e.Amount,
	}
}
