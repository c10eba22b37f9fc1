// Package registry keeps every plugin module a host deployed, on disk
// under the data directory, by the SHA-256 of its bytes.
//
// Each module is stored as <dir>/<sha256>.wasm with a <sha256>.json record
// beside it: the name it was deployed under, the version it declares, the
// ABI version, its exports and imports, the operator kinds it can serve,
// and when it was first deployed. Deployments (which operator ran which
// module, and when) are appended to <dir>/deployments.jsonl, so that the
// history of an operator survives restarts and `sluice plugin list` can
// read it without a running host.
//
// Design decisions:
//
//   - Content addressing: the same bytes deployed twice are stored once,
//     and a deployment names exactly the code that ran, whatever the file
//     was called.
//   - A module's version is what the module itself declares, in a custom
//     section named "sluice.version" holding UTF-8 text (for instance
//     "1.4.2" or a git describe). A module without the section has the
//     version "" and is listed by its hash. Custom sections cost nothing
//     at run time and every toolchain can emit one.
//   - Files are written to a temporary name and renamed, so a crash never
//     leaves a half-written module or record under its final name.
//   - The registry describes modules; it does not load them. The host
//     compiles a module it deploys with its operator's engine, limits and
//     grants (package plugin), and refuses it there.
package registry
