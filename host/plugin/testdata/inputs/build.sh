#!/bin/sh
# Rebuilds the WAT modules of the record-input tests from their text form
# (wabt's wat2wasm, default features, with a name section). The .wasm
# files are committed, so the tests need no wabt; TestInputsModulesUpToDate
# checks them when wat2wasm is on the PATH.
set -e
cd "$(dirname "$0")"
for f in *.wat; do
	wat2wasm --debug-names "$f" -o "${f%.wat}.wasm"
done
