#!/bin/sh
# Rebuilds the modules of the window tests from their text form (wabt's
# wat2wasm, default features, with a name section). wat2wasm writes no
# custom section of its own, so a module whose first line reads
# ";; sluice.kinds: LIST" gets a sluice.kinds section holding LIST
# appended, as `sluice plugin build` would write it. The .wasm files are
# committed, so the tests need no wabt; TestWindowModulesUpToDate checks
# them when wat2wasm is on the PATH.
set -e
cd "$(dirname "$0")"
for f in *.wat; do
	out="${f%.wat}.wasm"
	wat2wasm --debug-names "$f" -o "$out"
	kinds=$(sed -n '1s/^;; sluice\.kinds: //p' "$f")
	if [ -n "$kinds" ]; then
		# id 0, the payload's size, the name's size (12), the name, LIST;
		# sizes under 128 take one byte.
		size=$((13 + ${#kinds}))
		printf "\\000\\$(printf %03o "$size")\\014sluice.kinds%s" "$kinds" >>"$out"
	fi
done
