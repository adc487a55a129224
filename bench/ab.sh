#!/usr/bin/env bash
# A/B of two kvcache-server binaries under the same redis-benchmark load,
# alternating (A, B, A, B, ...) so both see the same machine noise; prints
# each round's requests/s and the median of each side.
#
#   bench/ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [redis-benchmark options]
#
# Default load: 200,000 pipelined SETs to fill 10K keys, then a measured
# GET -P 16 -r 10000 -c 50 -d 100 (the loop-bound command path). Other
# options after ROUNDS replace the measured load, e.g.
#   bench/ab.sh /tmp/old .build/release/kvcache-server 4 -t set -P 16 -r 10000
# FILL_KEYS (default 10000) sets the keyspace of the SETs run before each
# measured load: -r FILL_KEYS, -n twice that (at least 200,000), which
# fills about 86% of a large keyspace (FILL_KEYS=1000000 for loads on a
# million keys).
# KVCACHE_ARGS adds server options to both, e.g.
#   KVCACHE_ARGS="--appendfsync always" bench/ab.sh OLD NEW 3 -t set -P 1 -r 10000 -n 300000
# Each round is bounded: -n 1,500,000 and a 120 s timeout.
set -euo pipefail
if [ $# -lt 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
    echo "usage: bench/ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [redis-benchmark options]" >&2
    exit 2
fi
old=$1 new=$2
rounds=${3:-4}
shift $(( $# >= 3 ? 3 : 2 ))
load=("$@")
[ ${#load[@]} -gt 0 ] || load=(-t get -P 16 -r 10000)

source "$(dirname "$0")/server.sh"

run() {  # binary -> requests/s of the measured load
    rm -rf "$dir/data"
    # shellcheck disable=SC2086  # KVCACHE_ARGS is a list of options
    "$1" --port "$port" --bind 127.0.0.1 --dir "$dir/data" ${KVCACHE_ARGS:-} >"$dir/log" 2>&1 &
    pid=$!
    wait_until_serving
    fill_keys
    timeout 120 redis-benchmark -p "$port" -n 1500000 -c 50 -d 100 -q "${load[@]}" 2>&1 \
        | tr '\r' '\n' | awk '/per second/ { print $2; exit }'
    kill "$pid"; wait "$pid" 2>/dev/null || true
    pid=
}

a=() b=()
for round in $(seq "$rounds"); do
    a+=("$(run "$old")"); b+=("$(run "$new")")
    echo "round $round: A ${a[-1]}  B ${b[-1]}"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ma=$(median "${a[@]}") mb=$(median "${b[@]}")
echo "median A $ma  B $mb  B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", b / a }')"
