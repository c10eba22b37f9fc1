#!/usr/bin/env bash
# Builds, for measurement only, a sluice binary whose wazero compiles guest
# memory accesses without their bounds checks, to show what those checks
# cost a guest (BENCHMARKS.md, "What wazero's bounds checks cost").
#
#   scripts/build-unchecked-sluice.sh /tmp/sluice-unchecked
#   /tmp/sluice-unchecked bench --only wasm
#
# NEVER run plugins you do not trust with that binary: a guest that reads or
# writes outside its memory is no longer stopped, so it reads and corrupts
# the host's. Give it a data directory of its own (sluice bench makes a
# temporary one): the compilation cache there holds unchecked machine code,
# which a normal build of the same wazero version would load. The repository is left as it is: the go.mod's wazero version
# is copied from the module cache into a temporary directory, one line is
# added to its compiler (every memory access is treated as one whose bounds
# were already checked), and the binary is built through a temporary go.work
# that replaces wazero with that copy.
set -euo pipefail

out=${1:?usage: scripts/build-unchecked-sluice.sh OUTPUT-BINARY}
case $out in /*) ;; *) out=$PWD/$out ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mod=github.com/tetratelabs/wazero
go mod download "$mod"
version=$(go list -m -f '{{.Version}}' "$mod")
src=$(go list -m -f '{{.Dir}}' "$mod")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$src" "$tmp/wazero"
chmod -R u+w "$tmp/wazero"

lower=$tmp/wazero/internal/engine/wazevo/frontend/lower.go
anchor='ceil := constOffset + operationSizeInBytes'
if [ "$(grep -c "$anchor" "$lower")" != 1 ]; then
	echo "build-unchecked-sluice: $mod $version: the line '$anchor' is not in $lower once; this script knows v1.12.0" >&2
	exit 1
fi
sed -i "/$anchor/a\\
	c.recordKnownSafeBound(baseAddrID, ceil, ssa.ValueInvalid) // no bounds check: measurement only" "$lower"

(cd "$tmp" && go work init "$root" && go work edit -replace="$mod@$version=$tmp/wazero")
GOWORK=$tmp/go.work go build -o "$out" ./cmd/sluice
echo "built $out: wazero $version without memory bounds checks, for measurement only"
