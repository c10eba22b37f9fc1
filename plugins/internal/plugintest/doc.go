// Package plugintest holds what the example plugins' tests share: building
// the plugin in the current directory to WebAssembly once per test binary,
// and checking that the compiled module behaves exactly as the native build
// under the same batches (a metamorphic test of the plugin and of the SDK).
package plugintest
