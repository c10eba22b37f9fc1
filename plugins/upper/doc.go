// Command upper is a Sluice Map operator that upper-cases the ASCII letters
// of each record's value, in place; key, time and headers pass unchanged.
// The logic is upperlib.Upper, importable so that the host's benchmarks can
// run the same function natively.
//
// Build: sluice plugin build plugins/upper
package main
