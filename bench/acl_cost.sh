#!/usr/bin/env bash
# What ACL checks cost on the hot path: GET -P 16 as the default user (every
# right: one flag check) and as a user with 10 key patterns (the key matched
# by the last one), side by side on one server, alternating rounds; prints
# each round's requests/s and the medians' ratio. As ../shared/DESIGN.md
# says: the server pinned to core 0, redis-benchmark to core 1.
#
#   bench/acl_cost.sh [BINARY] [ROUNDS]
set -euo pipefail
bin=${1:-.build/release/kvcache-server}
rounds=${2:-5}
source "$(dirname "$0")/server.sh"
pin() { if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }

if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
    taskset -c 0 "$bin" --port "$port" --bind 127.0.0.1 --dir "$dir/data" >"$dir/log" 2>&1 &
else
    "$bin" --port "$port" --bind 127.0.0.1 --dir "$dir/data" >"$dir/log" 2>&1 &
fi
pid=$!
wait_until_serving
patterns=()
for i in $(seq 9); do patterns+=("~tenant$i:*"); done
redis-cli -p "$port" ACL SETUSER bench on '>benchpass' +@all "${patterns[@]}" '~key:*' >/dev/null
pin 1 redis-benchmark -p "$port" -t set -r 10000 -n 200000 -c 50 -d 100 -P 16 -q >/dev/null 2>&1

measure() {  # extra redis-benchmark options -> requests/s of GET -P 16
    pin 1 timeout 120 redis-benchmark -p "$port" -n 1500000 -c 50 -d 100 -r 10000 -P 16 -t get -q "$@" 2>&1 \
        | tr '\r' '\n' | awk '/per second/ { print $2; exit }'
}
a=() b=()
for round in $(seq "$rounds"); do
    a+=("$(measure)"); b+=("$(measure --user bench -a benchpass)")
    echo "round $round: default ${a[-1]}  10-pattern user ${b[-1]}"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ma=$(median "${a[@]}") mb=$(median "${b[@]}")
echo "median default $ma  10-pattern user $mb  ratio $(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", b / a }')"
