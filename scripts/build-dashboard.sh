#!/bin/sh
# build-dashboard.sh: rebuilds the libraries the dashboard embeds
# (host/dashboard/static/vendor) from the versions pinned in
# host/dashboard/web/package.json and package-lock.json, with npm from the
# npm registry:
#
#   uPlot           the live charts (uPlot.iife.min.js, uPlot.min.css)
#   @dagrejs/dagre  the pipeline graph's layout (dagre.min.js, which bundles
#                   @dagrejs/graphlib)
#
# Each library's built file is copied as it is published, with its license.
# The copies are checked in, so a build of sluice needs neither node nor the
# network; run this after changing a version in package.json (then run
# `npm install` there first to update the lock), and check in the result.
#
# Usage: scripts/build-dashboard.sh [--check]
#   --check   rebuild into a temporary directory and exit 1 if the checked-in
#             files differ from it
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
web="$root/host/dashboard/web"
out="$root/host/dashboard/static/vendor"
check=0
for arg in "$@"; do
	case "$arg" in
	--check) check=1 ;;
	-h | --help)
		sed -n '2,/^set -eu/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "build-dashboard: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done
if ! command -v npm >/dev/null 2>&1; then
	echo "build-dashboard: npm not found: install nodejs and npm (scripts/install-toolchains.sh does)" >&2
	exit 1
fi

(cd "$web" && npm ci --no-audit --no-fund --ignore-scripts)
nm="$web/node_modules"
dest="$out"
if [ "$check" = 1 ]; then
	dest=$(mktemp -d)
	trap 'rm -rf "$dest"' EXIT
fi
mkdir -p "$dest"
cp "$nm/uplot/dist/uPlot.iife.min.js" "$dest/uPlot.iife.min.js"
cp "$nm/uplot/dist/uPlot.min.css" "$dest/uPlot.min.css"
cp "$nm/uplot/LICENSE" "$dest/uPlot.LICENSE"
cp "$nm/@dagrejs/dagre/dist/dagre.min.js" "$dest/dagre.min.js"
cp "$nm/@dagrejs/dagre/LICENSE" "$dest/dagre.LICENSE"
cp "$nm/@dagrejs/graphlib/LICENSE" "$dest/graphlib.LICENSE"
# The versions, for the page's About line and for people.
node -e '
const lock = require(process.argv[1]).packages;
for (const p of ["uplot", "@dagrejs/dagre", "@dagrejs/graphlib"])
  console.log(p + " " + lock["node_modules/" + p].version);
' "$web/package-lock.json" >"$dest/VERSIONS"

if [ "$check" = 1 ]; then
	if ! diff -r "$dest" "$out"; then
		echo "build-dashboard: host/dashboard/static/vendor differs from the pinned versions: run $0 and check in the result" >&2
		exit 1
	fi
	echo "build-dashboard: host/dashboard/static/vendor matches the pinned versions"
	exit 0
fi
echo "build-dashboard: wrote $(cd "$dest" && ls | tr '\n' ' ')into host/dashboard/static/vendor ($(du -sk "$dest" | cut -f1) KiB)"
