//go:build race

package exec

// raceEnabled reports whether the tests run under the race detector, which
// makes every guest instantiation several times slower.
const raceEnabled = true
