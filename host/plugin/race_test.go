//go:build race

package plugin

// raceEnabled reports whether the tests run under the race detector, which
// changes allocation counts and slows compilation.
const raceEnabled = true
