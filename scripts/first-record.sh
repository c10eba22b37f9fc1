#!/usr/bin/env bash
# first-record.sh SLUICE [RUNS]: how long a pipeline's second and later
# starts take to put out their first record, on a warm compile cache.
#
# It builds plugins/upper, runs file -> upper -> file once in a temporary
# directory (filling the compile cache and the data directory), then RUNS
# times (default 7) appends 1000 lines to the input, starts SLUICE run and
# times from the start to the first new line in the output. Prints each
# run and the median, in milliseconds. Run it from the repository root.
set -euo pipefail
bin=$(realpath "$1")
runs=${2:-7}
root=$(pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" plugin build "$root/plugins/upper" -o "$dir/upper.wasm" >/dev/null
cat > "$dir/upper.yaml" <<'YAML'
name: upper
http: {addr: "off"}
sources:
  - {name: in, type: file, path: input.txt, format: lines}
operators:
  - {name: up, plugin: upper.wasm, kind: map, parallelism: 1}
sinks:
  - {name: out, type: file, path: out.jsonl}
YAML
cd "$dir"
seq 1 10 > input.txt
"$bin" run -c upper.yaml --log-level warn >/dev/null 2>&1
times=()
for i in $(seq 1 "$runs"); do
  seq 1 1000 | sed "s/^/run $i line /" >> input.txt
  before=$(stat -c %s out.jsonl)
  start=$(date +%s%N)
  "$bin" run -c upper.yaml --log-level warn >/dev/null 2>&1 &
  pid=$!
  while [ "$(stat -c %s out.jsonl)" -le "$before" ]; do sleep 0.002; done
  first=$(date +%s%N)
  wait "$pid"
  t=$(( (first - start) / 1000000 ))
  times+=("$t")
  echo "run $i: $t ms"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print "median: " a[int((NR+1)/2)] " ms"}'
