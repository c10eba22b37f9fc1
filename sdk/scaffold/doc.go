// Package scaffold writes new plugin projects: the templates behind
// `sluice plugin new --lang LANG NAME`, one per language with a guest SDK,
// embedded in the binary with go:embed.
//
// A project is the smallest useful operator (a stateless map that
// upper-cases the ASCII letters of each record's value), a README that
// says how to build, check, test and run it, and test cases in
// testdata/cases.yaml that `sluice plugin test DIR` runs through the real
// host: so every language's project passes its test, out of the box, with
// that one command. A Go project also has a native `go test`.
//
// Design decisions:
//
// Projects refer to the SDK of a Sluice checkout by path, never by a
// published version: Go through replace directives in go.mod, Rust
// through a path dependency in Cargo.toml, AssemblyScript through a
// relative import, C through the checkout named in .sluice-sdk (read by
// package build, which compiles the C SDK with the plugin). The SDKs and
// the host are versioned together in the checkout, so a project builds
// against the very ABI of the host it was made with. Inside the checkout
// the path is relative, so the two move together; outside it, absolute.
//
// A Go project's go.mod requires the Go SDK's module
// (github.com/sluicehq/sluice/sdk/go), never the host's, so that its
// module graph holds only what a guest needs (the SDK and the abi module,
// none of the host's Pebble, nats-server, wasmtime-go or Prometheus); it
// replaces both with their directories in the checkout, since the SDK's
// own replace directive does not reach the modules that require it. Its
// other requirements and its go.sum are the SDK module's: it builds from
// the module cache that built the checkout, with no network access, and
// `go mod tidy` trims it later.
// Running `go mod tidy` at creation would need the network where the cache
// is incomplete, and would make creating a project fail for reasons that
// have nothing to do with it.
//
// The templates are text/template files, so a template is the project
// file as a user will read it, with {{.Name}} where the name goes; they
// are checked by tests that create a project of every language and build
// and test it with the real toolchains (skipped where one is missing).
package scaffold
