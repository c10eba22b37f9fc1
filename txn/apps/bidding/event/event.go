package event

import (
	"strconv"

	"github.com/sluicehq/sluice/txn/apps/internal/wire"
)

// Tag is the first byte of every Online Bidding event (format v1).
const Tag byte = 'B'

// The state table.
const (
	Goods      = 0
	GoodsTable = "goods"
)

// Prices and quantities, after MorphStream's OB constants and initializer.
const (
	// MaxPrice bounds ask prices: they are in [1, MaxPrice].
	MaxPrice int64 = 100
	// InitialQuantity is every item's starting quantity.
	InitialQuantity int64 = 100
	// MaxTopUp bounds a top-up's quantity: it is in [1, MaxTopUp].
	MaxTopUp int64 = 20
)

// KeyWidth is the number of decimal digits of a key.
const KeyWidth = wire.KeyWidth

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = wire.ErrMalformed

// FieldError is the error a decoder returns: it names the field at fault.
type FieldError = wire.FieldError

// Kind is what an event does to its items.
type Kind uint8

// The kinds of events.
const (
	// Buy buys Quantity of each item at a bid of Price.
	Buy Kind = iota
	// Alert sets each item's ask price to Price.
	Alert
	// TopUp adds Quantity to each item.
	TopUp
)

// String returns "buy", "alert" or "top-up".
func (k Kind) String() string {
	switch k {
	case Buy:
		return "buy"
	case Alert:
		return "alert"
	case TopUp:
		return "top-up"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Item is one item of an event and the parameters of its operation: a buy
// uses Price (the bid) and Quantity, an alert Price (the new ask price), a
// top-up Quantity.
type Item struct {
	Key      uint32
	Price    int64
	Quantity int64
}

// Event is one Online Bidding transaction.
type Event struct {
	Kind Kind
	// BusyNanos is the busy work each operation does, in nanoseconds.
	BusyNanos uint32
	// Items are the items in operation order; an encoded event has at
	// least one.
	Items []Item
}

// AppendEvent appends the encoding of e to dst. Negative prices and
// quantities are encoded as 0.
func AppendEvent(dst []byte, e *Event) []byte {
	dst = AppendHeader(dst, e.Kind, e.BusyNanos, len(e.Items))
	for i := range e.Items {
		dst = AppendItem(dst, e.Items[i])
	}
	return dst
}

// AppendHeader appends the part of an event before its items; items items
// must follow, each appended by AppendItem.
func AppendHeader(dst []byte, kind Kind, busyNanos uint32, items int) []byte {
	dst = append(dst, Tag, byte(kind))
	dst = wire.AppendUvarint(dst, uint64(busyNanos))
	return wire.AppendUvarint(dst, uint64(items))
}

// AppendItem appends one item of an event started by AppendHeader.
func AppendItem(dst []byte, it Item) []byte {
	dst = wire.AppendUvarint(dst, uint64(it.Key))
	dst = wire.AppendUvarint(dst, uint64(max(it.Price, 0)))
	return wire.AppendUvarint(dst, uint64(max(it.Quantity, 0)))
}

// DecodeEvent decodes an event written by AppendEvent. A malformed input
// fails with a *FieldError naming the field.
func DecodeEvent(b []byte) (Event, error) {
	var e Event
	err := DecodeEventInto(&e, b)
	return e, err
}

// DecodeEventInto decodes into e, reusing the memory of e.Items: a decoder
// of many events allocates only while they grow. On failure e is reset to
// the zero Event.
func DecodeEventInto(e *Event, b []byte) error {
	r := wire.NewReader("bidding event", b)
	r.Tag(Tag, "an Online Bidding event")
	kind := Kind(r.Byte("kind"))
	if !r.Failed() && kind > TopUp {
		r.FailAt("kind", 1, "unknown kind "+kind.String())
	}
	busy := r.Uvarint32("busy-ns", 1<<32-1)
	n := r.Count("item count", 3)
	if !r.Failed() && n == 0 {
		r.Fail("item count", "no items")
	}
	items := e.Items[:0]
	for i := 0; i < n && !r.Failed(); i++ {
		items = append(items, Item{
			Key:      r.Uvarint32("item key", wire.MaxKeys-1),
			Price:    r.Int64("item price"),
			Quantity: r.Int64("item quantity"),
		})
	}
	if err := r.Err(); err != nil {
		*e = Event{}
		return err
	}
	*e = Event{Kind: kind, BusyNanos: busy, Items: items}
	return nil
}

// AppendKey appends the key of item k: k in KeyWidth decimal digits.
func AppendKey(dst []byte, k uint32) []byte { return wire.AppendKey(dst, k) }

// ParseKey parses a key written by AppendKey.
func ParseKey(b []byte) (uint32, bool) { return wire.ParseKey(b) }

// Good is an item's value in Goods.
type Good struct {
	// Price is the ask price.
	Price int64
	// Quantity is the quantity in stock.
	Quantity int64
}

// AppendGood appends g: Price then Quantity, 8 bytes each, little endian.
func AppendGood(dst []byte, g Good) []byte {
	return wire.AppendUint64(wire.AppendUint64(dst, uint64(g.Price)), uint64(g.Quantity))
}

// DecodeGood decodes a Good. An empty value is the zero Good; any other
// length than 16 fails with a *FieldError.
func DecodeGood(b []byte) (Good, error) {
	var w [2]uint64
	err := wire.Fixed("bidding good", "good", b, w[:])
	return Good{Price: int64(w[0]), Quantity: int64(w[1])}, err
}
