// Command joiner is a Sluice join function (kind: join): for each pair of
// records the host's join matched, it emits one record with the pair's
// key and the value "L|R", L the left record's value and R the right
// one's ("-" for a side an outer join left empty), and, for a window join,
// a header "window" holding the window's start and end as two 8-byte
// little-endian integers. A left value "twice" emits the result twice, a
// left value "none" emits nothing, and a value "bad" on either side
// dead-letters the pair with the error "bad value in pair".
//
// It is the specification of the join operator the SDKs of every language
// implement alike (plugins/conformance).
//
// Build: sluice plugin build plugins/joiner
package main
