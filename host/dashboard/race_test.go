//go:build race

package dashboard_test

// raceEnabled reports whether the tests run under the race detector, which
// makes compiling and instantiating guest modules many times slower.
const raceEnabled = true
