#!/bin/sh
# install-toolchains.sh: installs the guest toolchains Sluice builds plugins
# with, on Debian 12 (bookworm) or a derivative, as root or through sudo:
#
#   C               clang, lld (wasm-ld), wasi-libc, libclang-rt-14-dev-wasm32,
#                   and libclang-rt-14-dev for the SDK's native tests (their
#                   address and undefined-behaviour sanitizers)
#   Rust            rustc, cargo, libstd-rust-dev-wasm32 (Debian's rustc 1.63,
#                   target wasm32-unknown-unknown; crates.io is not needed)
#   WAT             wabt (wat2wasm)
#   Chromium        chromium, for the dashboard's browser tests
#                   (host/dashboard)
#   AssemblyScript  nodejs and npm when npm is missing, then `npm ci` (or
#                   `npm install`) in sdk/assemblyscript, which puts asc in
#                   sdk/assemblyscript/node_modules/.bin
#
# Go plugins need only Go itself (https://go.dev/dl).
#
# The script is idempotent and fast when there is nothing to do: it looks
# for each tool first and runs apt-get only for the packages whose tool is
# missing, and npm only when sdk/assemblyscript/node_modules is missing or
# older than its package.json or package-lock.json. It prints what it did.
#
# Usage: scripts/install-toolchains.sh [--check] [--no-apt] [--no-npm]
#   --check   report what is missing and exit 1 if anything is; change nothing
#   --no-apt  skip the Debian packages
#   --no-npm  skip the AssemblyScript compiler
set -eu

check=0 apt=1 npm=1
for arg in "$@"; do
	case "$arg" in
	--check) check=1 ;;
	--no-apt) apt=0 ;;
	--no-npm) npm=0 ;;
	-h | --help)
		sed -n '2,/^set -eu/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "install-toolchains: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
say() { echo "install-toolchains: $*"; }

# have_cmd NAME: NAME is a command on the PATH.
have_cmd() { command -v "$1" >/dev/null 2>&1; }
# have_glob PATTERN: some file matches the shell pattern.
have_glob() {
	for f in $1; do
		[ -e "$f" ] && return 0
	done
	return 1
}

# Each line: Debian package, then the test that its tool is present. Rust
# is looked for at Debian's paths on purpose: a rustup toolchain on the
# PATH is not what the build uses (see sdk/build).
missing=""
while read -r pkg test; do
	if eval "$test"; then
		say "ok       $pkg"
	else
		say "missing  $pkg"
		missing="$missing $pkg"
	fi
done <<'EOF'
clang have_cmd clang
lld have_cmd wasm-ld
wasi-libc have_glob '/usr/include/wasm32-wasi/stdlib.h /usr/share/wasi-sysroot/include/stdlib.h /usr/share/wasi-sysroot/include/wasm32-wasi/stdlib.h'
libclang-rt-14-dev-wasm32 have_glob '/usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a'
libclang-rt-14-dev have_glob '/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.asan-*.a'
rustc test -x /usr/bin/rustc
cargo test -x /usr/bin/cargo
libstd-rust-dev-wasm32 test -d /usr/lib/rustlib/wasm32-unknown-unknown
wabt have_cmd wat2wasm
chromium have_cmd chromium
EOF
if [ "$npm" = 1 ] && ! have_cmd npm; then
	say "missing  nodejs npm (for AssemblyScript)"
	missing="$missing nodejs npm"
fi

asdir="$root/sdk/assemblyscript"
npm_needed=0
if [ "$npm" = 1 ] && [ -f "$asdir/package.json" ]; then
	stamp="$asdir/node_modules/.package-lock.json"
	if [ ! -x "$asdir/node_modules/.bin/asc" ] || [ ! -f "$stamp" ] ||
		[ "$asdir/package.json" -nt "$stamp" ] ||
		{ [ -f "$asdir/package-lock.json" ] && [ "$asdir/package-lock.json" -nt "$stamp" ]; }; then
		say "missing  sdk/assemblyscript/node_modules (the AssemblyScript compiler, asc)"
		npm_needed=1
	else
		say "ok       sdk/assemblyscript/node_modules ($("$asdir/node_modules/.bin/asc" --version 2>/dev/null || echo asc))"
	fi
elif [ "$npm" = 1 ]; then
	say "skip     AssemblyScript: $asdir/package.json does not exist"
fi

if [ "$check" = 1 ]; then
	if [ -n "$missing" ] || [ "$npm_needed" = 1 ]; then
		say "to install what is missing, run $0 without --check"
		exit 1
	fi
	say "every toolchain is installed"
	exit 0
fi

if [ "$apt" = 1 ] && [ -n "$missing" ]; then
	sudo=""
	if [ "$(id -u)" != 0 ]; then
		if ! have_cmd sudo; then
			echo "install-toolchains: installing$missing needs root: run this script as root or install sudo" >&2
			exit 1
		fi
		sudo=sudo
	fi
	if ! have_cmd apt-get; then
		echo "install-toolchains: apt-get not found: this script installs on Debian 12; install$missing by other means" >&2
		exit 1
	fi
	say "apt-get install$missing"
	$sudo apt-get update -qq
	# shellcheck disable=SC2086 # the package list is meant to split
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
	say "installed$missing"
elif [ -n "$missing" ]; then
	say "not installing$missing (--no-apt)"
fi

if [ "$npm_needed" = 1 ]; then
	if ! have_cmd npm; then
		echo "install-toolchains: npm not found: install nodejs and npm, then run this script again" >&2
		exit 1
	fi
	if [ -f "$asdir/package-lock.json" ]; then
		say "npm ci in sdk/assemblyscript"
		(cd "$asdir" && npm ci --no-audit --no-fund)
	else
		say "npm install in sdk/assemblyscript"
		(cd "$asdir" && npm install --no-audit --no-fund)
	fi
	say "installed $("$asdir/node_modules/.bin/asc" --version 2>/dev/null || echo asc) in sdk/assemblyscript/node_modules"
fi

if [ -z "$missing" ] && [ "$npm_needed" = 0 ]; then
	say "nothing to do: every toolchain is installed"
fi
