#!/bin/sh
# Rebuilds the modules of Check's advice tests from their text form (wabt's
# wat2wasm, default features, with a name section). The .wasm files are
# committed, so the tests need no wabt; TestCheckModulesUpToDate checks
# them when wat2wasm is on the PATH.
set -e
cd "$(dirname "$0")"
for f in *.wat; do
	wat2wasm --debug-names "$f" -o "${f%.wat}.wasm"
done
