//go:build race

package bench

// raceEnabled reports whether the tests run under the race detector, which
// makes compiling a guest module many times slower.
const raceEnabled = true
