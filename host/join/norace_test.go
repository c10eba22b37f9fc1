//go:build !race

package join

// raceEnabled: the race detector slows the kernels tenfold; the tests
// shrink their inputs under it.
const raceEnabled = false
