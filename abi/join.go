package abi

// Join functions (ABI.md, section 14). A join guest exports ExportJoin: the
// host's join operator keeps the two sides' records, finds the pairs with
// equal keys in a window or an interval, and calls the guest to build each
// pair's results.
const (
	// ExportJoin: sluice_join(ptr i32, len i32) -> i32. Receives a group
	// batch (AppendGroup): one group per pair, whose head carries the key,
	// the results' time, which sides are present (its Value, one byte of
	// JoinLeft and JoinRight bits) and, for a window join, the window's
	// headers; its members are the left record, then the right one, those
	// present. The guest emits any number of results per pair, Origin the
	// pair's index. Returns a status.
	ExportJoin = "sluice_join"
)

// The bits of the one-byte Value of an ExportJoin group's head: which
// sides of the pair are present, in this order among the members.
const (
	// JoinLeft: the pair has a left record (the group's first member).
	JoinLeft byte = 1 << 0
	// JoinRight: the pair has a right record (the last member). A pair
	// of an inner join has both; an outer join's record that matched
	// nothing comes alone.
	JoinRight byte = 1 << 1
)
