#!/usr/bin/env bash
# What the writer thread spends applying overwrites to a large file: the
# CPU time of the writer alone (read from /proc/<pid>/task) for a burst of
# SETs over keys the file already holds, from the burst's start until the
# memtable is empty again.
#
#   bench/writer_cost.sh [KEYS [SETS]]      # default 1000000 keys, 600000 SETs
#
# Steps: a fresh server (all its threads on core 0, the load on core 1),
# 2*KEYS pipelined SETs of 100 B over KEYS keys, applied and checkpointed
# (SAVE); then SETS more over the same keys (-P 16, so they land in the
# memtable faster than the writer applies them); then the wait until the
# writer has applied them. Prints the writer's CPU time in all and per key.
# KVCACHE_ARGS adds server options (default: --appendonly no, which seals
# a batch every second). Example, a larger page cache for the writer:
#   KVCACHE_ARGS="--appendonly no --sqlite-cache-size 128mb" bench/writer_cost.sh
set -euo pipefail
keys=${1:-1000000}
sets=${2:-600000}
source "$(dirname "$0")/server.sh"
binary=${KVCACHE_BIN:-$(dirname "$0")/../.build/release/kvcache-server}
ticks=$(getconf CLK_TCK)

# shellcheck disable=SC2086  # KVCACHE_ARGS is a list of options
taskset -c 0 "$binary" --port "$port" --bind 127.0.0.1 --dir "$dir/data" ${KVCACHE_ARGS:---appendonly no} \
    >"$dir/log" 2>&1 &
pid=$!
wait_until_serving
FILL_KEYS=$keys fill_and_drain
redis-cli -p "$port" save >/dev/null
# The writer is the thread at nice 10 (the loop's is 0).
writer=
for task in /proc/"$pid"/task/*; do
    [ "$(awk '{ print $19 }' "$task/stat")" = 10 ] && writer=$task
done
[ -n "$writer" ] || { echo "no writer thread found" >&2; exit 1; }
before=$(awk '{ print $14 + $15 }' "$writer/stat")
started=$(date +%s.%N)
taskset -c 1 redis-benchmark -p "$port" -t set -r "$keys" -n "$sets" -c 50 -d 100 -P 16 -q >/dev/null 2>&1
drain_writer
finished=$(date +%s.%N)
after=$(awk '{ print $14 + $15 }' "$writer/stat")
python3 -c "
import sys
cpu = ($after - $before) / $ticks
print(f'{$sets:,} SETs over {$keys:,} keys: applied {float(sys.argv[2]) - float(sys.argv[1]):.1f} s after the burst began; '
      f'writer CPU {cpu:.2f} s, {cpu * 1e6 / $sets:.1f} us a SET')" "$started" "$finished"
