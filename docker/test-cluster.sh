#!/usr/bin/env bash
# Brings docker/compose.cluster.yaml up with podman-compose and checks it:
# PING and SET/GET through the published proxy port, keys spread over the
# three nodes, MGET across them, a node stopped (its keys miss, the others
# answer) and started again (back in the ring with its keys, kept on its
# volume), then everything removed. As root on Debian bookworm, with no
# image registry:
#
#   - docker/test.sh runs first (unless KVCACHE_SKIP_IMAGE_TEST=1 and the
#     images exist): it makes debian:bookworm-slim and the Swift builder
#     image locally, builds the kvcache-server image under
#     flock $SWIFT_BUILD_LOCK, and checks it; here that image is tagged
#     kvcache-server:latest, the name the compose file uses;
#   - the nutcracker image is built from docker/nutcracker.Containerfile
#     (Debian's package) with --pull=never;
#   - podman-compose starts the project with both images present, so it
#     builds nothing itself.
#
# Bounded by $KVCACHE_TEST_TIMEOUT seconds (1800). Environment as for
# docker/test.sh, plus KVCACHE_SKIP_IMAGE_TEST.
set -euo pipefail

TIMEOUT=${KVCACHE_TEST_TIMEOUT:-1800}
if [ -z "${_KVCACHE_CLUSTER_TEST_BOUNDED:-}" ]; then
    export _KVCACHE_CLUSTER_TEST_BOUNDED=1
    status=0
    timeout --kill-after=60 "$TIMEOUT" "$BASH" "$0" "$@" || status=$?
    [ "$status" -ne 124 ] || echo "docker/test-cluster.sh: FAILED: over the time limit of ${TIMEOUT}s" >&2
    exit "$status"
fi

cd "$(dirname "$0")/.."
CACHE=${KVCACHE_PODMAN_CACHE:-/var/cache/kvcache-podman}
PROJECT=kvcache-cluster-test-$$
COMPOSE=(podman-compose -p "$PROJECT" -f docker/compose.cluster.yaml)
PROXY_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
STATS_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export KVCACHE_PROXY_PORT=$PROXY_PORT KVCACHE_PROXY_STATS_PORT=$STATS_PORT
STARTED=0
START=$SECONDS

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

expect() {
    [ "$2" = "$3" ] || fail "$1: expected '$3', got '$2'"
    echo "    ok: $1 = $3"
}

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    set +e
    if [ "$STARTED" = 1 ]; then
        if [ "$status" -ne 0 ]; then
            for s in kv1 kv2 kv3 nutcracker; do
                echo "--- logs of $s:" >&2
                podman logs --tail 20 "${PROJECT}_${s}_1" >&2 2>&1
            done
        fi
        "${COMPOSE[@]}" down -v >/dev/null 2>&1
    fi
    printf '%6ss  total\n' $((SECONDS - START))
    if [ "$status" -eq 0 ]; then
        echo "docker/test-cluster.sh: all checks passed"
    else
        echo "docker/test-cluster.sh: FAILED (exit $status)" >&2
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# rcli [args...]: redis-cli against the published proxy port.
rcli() { timeout 10 redis-cli -h 127.0.0.1 -p "$PROXY_PORT" "$@"; }

# node_dbsize SERVICE: DBSIZE asked inside the node's container (the nodes
# are not published; the image has bash, not redis-cli).
node_dbsize() {
    podman exec "${PROJECT}_$1_1" bash -c \
        'exec 3<>/dev/tcp/127.0.0.1/6379; printf "*1\r\n\$6\r\nDBSIZE\r\n" >&3; IFS= read -r -t 5 r <&3; printf %s "${r:1}" | tr -d "\r"'
}

echo "==> images"
if [ "${KVCACHE_SKIP_IMAGE_TEST:-}" = 1 ] && podman image exists kvcache-server:test; then
    echo "    kvcache-server:test exists; docker/test.sh skipped"
else
    KVCACHE_IMAGE=kvcache-server:test docker/test.sh
fi
# docker/test.sh may have written a containers.conf that makes podman work here.
[ ! -f "$CACHE/containers.conf" ] || export CONTAINERS_CONF=$CACHE/containers.conf
command -v podman-compose >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman-compose >/dev/null
}
podman tag kvcache-server:test kvcache-server:latest
podman build --pull=never --format docker -f docker/nutcracker.Containerfile -t kvcache-nutcracker:latest docker/
podman-compose version 2>/dev/null | tail -n1 | sed 's/^/    /'

echo "==> up: 3 nodes + nutcracker on 127.0.0.1:$PROXY_PORT"
STARTED=1
"${COMPOSE[@]}" up -d
for _ in $(seq 60); do
    [ "$(rcli PING 2>/dev/null)" = PONG ] && [ "$(rcli SET probe 1 2>/dev/null)" = OK ] && break
    sleep 1
done
expect "PING through the proxy" "$(rcli PING)" PONG

echo "==> keys through the proxy"
for i in $(seq 1 3000); do echo "SET key:$i v$i"; done | rcli >/dev/null
expect "GET" "$(rcli GET key:42)" v42
expect "MGET across nodes" "$(rcli MGET key:1 key:2 key:3 key:4 key:5 | tr '\n' ' ')" "v1 v2 v3 v4 v5 "
sizes=()
for s in kv1 kv2 kv3; do sizes+=("$(node_dbsize "$s")"); done
echo "    keys per node: ${sizes[*]}"
total=0
for n in "${sizes[@]}"; do
    [ "$n" -gt 300 ] || fail "a node holds only $n of 3001 keys"
    total=$((total + n))
done
expect "keys on the three nodes" "$total" 3001

echo "==> kv2 stopped: its keys miss, the others answer"
# One key of kv2's: the first KEYS answers inside its container.
key=$(podman exec "${PROJECT}_kv2_1" bash -c \
    'exec 3<>/dev/tcp/127.0.0.1/6379; printf "*2\r\n\$4\r\nKEYS\r\n\$5\r\nkey:*\r\n" >&3
     for _ in 1 2 3; do IFS= read -r -t 5 r <&3; done; printf %s "$r" | tr -d "\r"')
[ -n "$key" ] || fail "no key found on kv2"
expect "GET $key before" "$(rcli GET "$key")" "v${key#key:}"
podman stop -t 30 "${PROJECT}_kv2_1" >/dev/null
reply=
for _ in $(seq 20); do
    reply=$(rcli GET "$key" 2>&1 || true)
    [ -z "$reply" ] && break     # a miss: redis-cli prints an empty line for nil
    sleep 0.5
done
expect "GET $key while kv2 is out (a miss)" "$reply" ""
others=$(rcli MGET key:1 key:2 key:3 key:4 key:5 | grep -c '^v' || true)
echo "    $others of key:1..5 still hit (the rest were kv2's)"

echo "==> kv2 started again: back after server_retry_timeout, with its keys"
podman start "${PROJECT}_kv2_1" >/dev/null
for _ in $(seq 40); do
    reply=$(rcli GET "$key" 2>/dev/null || true)
    [ "$reply" = "v${key#key:}" ] && break
    sleep 1
done
expect "GET $key after kv2 returned" "$reply" "v${key#key:}"
expect "keys on kv2 after its restart" "$(node_dbsize kv2)" "${sizes[1]}"

echo "==> down -v"
"${COMPOSE[@]}" down -v >/dev/null
STARTED=0
