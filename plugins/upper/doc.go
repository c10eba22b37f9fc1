// Command upper is a Sluice Map operator that upper-cases the ASCII letters
// of each record's value, in place; key, time and headers pass unchanged.
// The logic is upperlib.UpperInPlace (upperlib.Upper applied in place),
// importable so that the host's benchmarks can run the same function
// natively.
//
// It registers with sluice.MapInPlace and changes only the bytes of the
// value, so the SDK forwards each record's encoding instead of encoding an
// output: the plugin is the benchmark of the Wasm call path, and shows the
// cheapest way to write a map with the Go SDK.
//
// Build: sluice plugin build plugins/upper
package main
