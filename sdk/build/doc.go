// Package build compiles a plugin directory, in any language Sluice has a
// guest SDK for, to a WebAssembly module: what `sluice plugin build DIR`,
// `sluice plugin test DIR` and the conformance tests run.
//
// What it owns:
//
//   - Detect: the language of a plugin directory, from the files in it:
//     Go (non-test .go files of package main), Rust (Cargo.toml),
//     AssemblyScript (assembly/index.ts), WAT (<dir name>.wat) and C (*.c).
//
//   - Build: the one build command of each language, run with
//     exec.CommandContext in the directory, writing DIR/<dir name>.wasm
//     unless told otherwise:
//
//     go      GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared (sdk/go/wasmbuild)
//     rust    RUSTC=/usr/bin/rustc /usr/bin/cargo build --release --target wasm32-unknown-unknown --offline
//     c       clang --target=wasm32-wasi -O2 -mexec-model=reactor -s -I ROOT/sdk/c -o OUT DIR/*.c ROOT/sdk/c/sluice.c
//     assemblyscript  asc assembly/index.ts -O3 --runtime stub --noAssert --use abort= -o OUT
//     wat     wat2wasm DIR.wat -o OUT
//
//   - The declaration of the operator kinds: after the build command, a
//     module that exports sluice_kinds and has no sluice.kinds custom
//     section (Go, C and AssemblyScript plugins, which register their
//     handler when the module starts; WAT modules that export it) is
//     instantiated once and the section is appended from what
//     sluice_kinds reports (plugin.DeclareKinds). A plugin that registers
//     no handler fails the build. Rust's SDK writes the section itself.
//
//   - The diagnosis of a missing toolchain: a ToolchainError (errors.Is
//     ErrToolchainMissing) names the tool, the Debian or npm package that
//     provides it, and scripts/install-toolchains.sh, which installs them
//     all.
//
//   - Root and FindRoot: the Sluice checkout whose SDKs a build uses
//     (C includes and links ROOT/sdk/c; AssemblyScript's compiler lives in
//     ROOT/sdk/assemblyscript/node_modules).
//
// Design decisions:
//
// The commands are fixed, not configurable per project: a plugin directory
// holds sources and nothing that says how to build them, so that every
// plugin of a language builds the same way, by `sluice plugin build`, by CI
// and by the conformance tests. Where a language has a project file of its
// own (Cargo.toml) it is honoured; otherwise the command above is the
// contract, which sdk/<language>/README.md documents for each SDK.
//
// Rust uses Debian's rustc and cargo (/usr/bin) when they exist, even when
// a rustup toolchain comes first on the PATH: a rustup cargo fails with
// Debian's rustc, and Debian's rustc is the one that has the
// wasm32-unknown-unknown standard library installed by
// libstd-rust-dev-wasm32. SLUICE_CARGO and SLUICE_RUSTC override the
// choice. cargo is asked for JSON messages so that the artifact's path
// comes from cargo itself, whatever the crate's name, its [lib] name or a
// CARGO_TARGET_DIR; the diagnostics are still rendered for people.
//
// AssemblyScript's compiler, asc, is an npm package, so there is no system
// path to look in: it is looked for in node_modules/.bin of the directory
// and its parents, then in ROOT/sdk/assemblyscript/node_modules/.bin
// (where scripts/install-toolchains.sh installs it with `npm ci`), then
// on the PATH. npx is not used: it would download a compiler when none is
// installed, and builds must not depend on the network.
//
// A toolchain that is present but incomplete (clang without wasm-ld or
// wasi-libc, rustc without the wasm32 standard library) is recognised from
// the compiler's own error output, not probed beforehand, so a build of a
// healthy toolchain runs exactly one process.
//
// The checkout (ROOT) is found without configuration where possible: the
// directory named in DIR/.sluice-sdk (written by `sluice plugin new` for
// a project outside the checkout), else the nearest directory above DIR,
// or above the working directory, whose go.mod declares module
// github.com/sluicehq/sluice.
package build
