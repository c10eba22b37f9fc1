// Package plugintest holds what the example plugins' tests share: building
// the plugin in the current directory to WebAssembly once per test binary,
// loading it into the real host (through sluicetest.LoadWasm), and checking
// that the compiled module behaves exactly as the native build under the
// same batches (a metamorphic test of the plugin, of the SDK, and of the
// native harness against the host whose rules it mirrors).
//
// Like sluicetest, it imports the host: it is test support, never compiled
// into a plugin.
package plugintest
