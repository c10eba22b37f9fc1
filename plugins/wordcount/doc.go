// Command wordcount is a Sluice Keyed operator that counts records per key.
// The count lives in the operator's default state table as decimal ASCII
// (so it reads plainly in a state dump); after each update the operator
// emits a record with the key and the new count as value, at the input's
// time. A stored count that is not a decimal number dead-letters the record
// and leaves the count as it is.
//
// Build: sluice plugin build plugins/wordcount
package main
