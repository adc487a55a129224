#!/usr/bin/env bash
# A mass expiry that starts while the writer still applies the keys'
# writes: how long it takes and the loop's longest sweep steps (LATENCY's
# expire-cycle events, threshold 3 ms), for one or more binaries in
# alternating rounds. The reproduction of docs/decisions.md's "An expiry
# heap rebuilt a step at a time (stop 41)".
#
#   bench/expiry_burst.sh ROUNDS BINARY...
#
# Each round, each binary: a fresh server (all its threads on core 0, the
# load on core 1) with active expiry off; 2,000,000 `SET key:__rand_int__
# <50 B> PX 1000` over 1,000,000 keys (`redis-benchmark -c 50 -P 16`:
# about 865k keys, most written more than once); 6 s later active expiry
# on (`DEBUG SET-ACTIVE-EXPIRE 1`), then DBSIZE polled until 0. Prints the
# time to expire them all and every expire-cycle event's milliseconds.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: bench/expiry_burst.sh ROUNDS BINARY..." >&2
    exit 2
fi
rounds=$1; shift
source "$(dirname "$0")/server.sh"
value=$(printf 'x%.0s' $(seq 50))
for round in $(seq "$rounds"); do
    for binary in "$@"; do
        rm -rf "$dir/data"
        taskset -c 0 "$binary" --port "$port" --bind 127.0.0.1 --dir "$dir/data" --enable-debug-command yes \
            --latency-monitor-threshold 3 >"$dir/log" 2>&1 &
        pid=$!
        wait_until_serving
        redis-cli -p "$port" debug set-active-expire 0 >/dev/null
        taskset -c 1 redis-benchmark -p "$port" -r 1000000 -n 2000000 -c 50 -P 16 -q \
            set key:__rand_int__ "$value" px 1000 >/dev/null 2>&1
        keys=$(redis-cli -p "$port" dbsize)
        sleep 6
        redis-cli -p "$port" latency reset >/dev/null
        started=$(date +%s.%N)
        redis-cli -p "$port" debug set-active-expire 1 >/dev/null
        for _ in $(seq 1200); do
            [ "$(redis-cli -p "$port" dbsize)" = 0 ] && break
            sleep 0.05
        done
        ended=$(date +%s.%N)
        events=$(redis-cli -p "$port" latency history expire-cycle | awk 'NR % 2 == 0' | sort -n | tr '\n' ' ')
        echo "round $round $(basename "$binary"): $keys keys expired in" \
            "$(python3 -c "print(f'{$ended - $started:.2f}')") s; expire-cycle events (ms): ${events:-none}"
        kill "$pid"; wait "$pid" 2>/dev/null || true
        pid=
    done
done
