# Sourced by the bench shell scripts: a free loopback port ($port), a
# temporary directory ($dir), and a server process ($pid, when set) that is
# stopped, with the directory removed, when the script exits.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

# Waits (up to 120 s) until the server on $port has applied what it was
# sent: its memtable empty, no batch in flight.
drain_writer() {
    for _ in $(seq 1200); do
        [ "$(redis-cli -p "$port" info persistence | tr -d '\r' | awk -F: '
            $1 == "memtable_bytes" { m = $2 } $1 == "writer_jobs_in_flight" { j = $2 } END { print m + j }')" = 0 ] && return
        sleep 0.1
    done
}

# Waits (up to 10 s) until the server on $port answers PING.
wait_until_serving() {
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
}

# Sends the server on $port -r FILL_KEYS (default 10000) SETs of 100 B,
# -n twice that (at least 200,000), pipelined.
fill_keys() {
    local fill=${FILL_KEYS:-10000}
    redis-benchmark -p "$port" -t set -r "$fill" -n $(( fill > 100000 ? fill * 2 : 200000 )) -c 50 -d 100 -P 16 -q \
        >/dev/null 2>&1
}

# `fill_keys`, then waits until the writer has applied them.
fill_and_drain() {
    fill_keys
    drain_writer
}
