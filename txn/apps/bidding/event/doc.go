// Package event is the wire format of Online Bidding (MorphStream's "OB"
// benchmark): its events, its state values and its keys. The workload
// generator (txn/apps/workload) writes these events; the Online Bidding
// operator, native or compiled to Wasm, reads them. The package is kept
// light for the Wasm guest: it imports no part of the host and nothing that
// reflects.
//
// # State
//
// One table, Goods ("goods"), with one entry per item in [0, keys): the key
// is the KeyWidth-digit decimal of the item (AppendKey), the value a Good,
// its ask price and quantity, two int64 in 16 bytes little endian
// (AppendGood). Every item starts with InitialQuantity and a price in
// [1, MaxPrice] that the workload draws from its seed.
//
// # Events
//
// An event is one transaction over len(Items) items, one operation per item
// in order:
//
//   - Buy: for each item, the condition "ask price <= Price and quantity >=
//     Quantity" must hold, and the item's quantity drops by Quantity; when
//     a condition fails the whole purchase aborts. The generator bids
//     MaxPrice for one unit of each item, so a buy aborts only when an item
//     runs out, or when it is drawn to abort (Price 0, below every ask
//     price: MorphStream's generator bids -1).
//   - Alert: each item's ask price becomes Price.
//   - TopUp: each item's quantity grows by Quantity.
//
// MorphStream buys one item per event and alerts or tops up 20; here every
// kind touches the workload's txn-length items.
//
// Encoding (v1), after the tag byte 'B': the kind byte, then unsigned
// varints: busy-ns, the number of items, and per item its key, price and
// quantity.
package event
