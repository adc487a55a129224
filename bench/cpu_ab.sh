#!/usr/bin/env bash
# CPU per request of two or more kvcache-server binaries under the same
# redis-benchmark load, in alternating rounds: the server's user+system time
# (every thread, the writer's SQLite work included, read from /proc) over a
# fixed number of requests, in microseconds per request. Steadier than
# requests/s on a shared machine, where another process's load moves
# throughput far more than it moves the CPU a request costs.
#
#   bench/cpu_ab.sh ROUNDS BINARY... -- [redis-benchmark options]
#
# Example: bench/cpu_ab.sh 5 /tmp/old .build/release/kvcache-server -- -t set -P 16 -r 10000
# Each round: a fresh server and data directory, 200,000 pipelined SETs to
# fill 10K keys (FILL_KEYS=1000000: 2M SETs over 1M keys), the writer let
# apply them and 1.5 s to settle, then 1,000,000 requests of the load
# (-c 50 -d 100 unless given), then 1.5 s more so the writer's work for
# them is counted. KVCACHE_ARGS adds server options. Lower is better.
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: bench/cpu_ab.sh ROUNDS BINARY... -- [redis-benchmark options]" >&2
    exit 2
fi
rounds=$1; shift
binaries=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do binaries+=("$1"); shift; done
[ $# -gt 0 ] && shift
load=("$@")
[ ${#load[@]} -gt 0 ] || load=(-t set -P 16 -r 10000)
source "$(dirname "$0")/server.sh"
requests=1000000
ticks=$(getconf CLK_TCK)

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

declare -A all
for round in $(seq "$rounds"); do
    line="round $round:"
    for binary in "${binaries[@]}"; do
        rm -rf "$dir/data"
        # shellcheck disable=SC2086  # KVCACHE_ARGS is a list of options
        "$binary" --port "$port" --bind 127.0.0.1 --dir "$dir/data" ${KVCACHE_ARGS:-} >"$dir/log" 2>&1 &
        pid=$!
        wait_until_serving
        fill_and_drain
        sleep 1.5
        before=$(cpu_ticks "$pid")
        timeout 300 redis-benchmark -p "$port" -n "$requests" -c 50 -d 100 -q "${load[@]}" >/dev/null 2>&1
        sleep 1.5
        after=$(cpu_ticks "$pid")
        micros=$(python3 -c "print(f'{($after - $before) * 1e6 / $ticks / $requests:.3f}')")
        all[$binary]+="$micros "
        line+=" $(basename "$binary")=$micros"
        kill "$pid"; wait "$pid" 2>/dev/null || true
        pid=
    done
    echo "$line"
done
for binary in "${binaries[@]}"; do
    python3 -c "import statistics, sys; v = [float(x) for x in sys.argv[2].split()]; print(f'median {sys.argv[1]}: {statistics.median(v):.3f} us/request')" "$binary" "${all[$binary]}"
done
