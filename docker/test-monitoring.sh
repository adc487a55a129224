#!/usr/bin/env bash
# Brings docker/compose.monitoring.yaml up with podman-compose and checks it:
# kvcache-server, Debian's prometheus-redis-exporter and Debian's Prometheus.
# Writes to numbered and named caches through the published port, then asks
# Prometheus (its HTTP API) for what the exporter scraped: redis_up 1,
# redis_db_keys equal to each numbered cache's DBSIZE, the hit counter,
# command latency percentiles and a latency spike; checks that the exporter
# logged no error, that every query of docker/monitoring/grafana-dashboard.json
# is valid PromQL and answers (check-dashboard.py), and that the recording
# rules pass `promtool test rules`; then removes everything. As root on
# Debian bookworm, with no image registry:
#
#   - docker/test.sh runs first (unless KVCACHE_SKIP_IMAGE_TEST=1 and the
#     image exists): it makes debian:bookworm-slim and the Swift builder
#     image locally, builds the kvcache-server image (tagged
#     $KVCACHE_IMAGE, kvcache-server:monitoring-test) and checks it;
#   - the exporter and Prometheus images are built from
#     docker/redis-exporter.Containerfile and docker/prometheus.Containerfile
#     (Debian's packages) with --pull=never;
#   - podman-compose starts the project with the three images present, so
#     it builds nothing itself.
#
# Bounded by $KVCACHE_TEST_TIMEOUT seconds (1800). Environment as for
# docker/test.sh, plus KVCACHE_SKIP_IMAGE_TEST.
set -euo pipefail

TIMEOUT=${KVCACHE_TEST_TIMEOUT:-1800}
if [ -z "${_KVCACHE_MONITORING_TEST_BOUNDED:-}" ]; then
    export _KVCACHE_MONITORING_TEST_BOUNDED=1
    status=0
    timeout --kill-after=60 "$TIMEOUT" "$BASH" "$0" "$@" || status=$?
    [ "$status" -ne 124 ] || echo "docker/test-monitoring.sh: FAILED: over the time limit of ${TIMEOUT}s" >&2
    exit "$status"
fi

cd "$(dirname "$0")/.."
CACHE=${KVCACHE_PODMAN_CACHE:-/var/cache/kvcache-podman}
export KVCACHE_IMAGE=${KVCACHE_IMAGE:-kvcache-server:monitoring-test}
PROJECT=kvcache-monitoring-test-$$
COMPOSE=(podman-compose -p "$PROJECT" -f docker/compose.monitoring.yaml)
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
KVCACHE_PORT=$(free_port)
KVCACHE_EXPORTER_PORT=$(free_port)
KVCACHE_PROMETHEUS_PORT=$(free_port)
export KVCACHE_PORT KVCACHE_EXPORTER_PORT KVCACHE_PROMETHEUS_PORT
PROMETHEUS=http://127.0.0.1:$KVCACHE_PROMETHEUS_PORT
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
            for s in kvcache exporter prometheus; do
                echo "--- logs of $s:" >&2
                podman logs --tail 20 "${PROJECT}_${s}_1" >&2 2>&1
            done
        fi
        "${COMPOSE[@]}" down -v >/dev/null 2>&1
    fi
    printf '%6ss  total\n' $((SECONDS - START))
    if [ "$status" -eq 0 ]; then
        echo "docker/test-monitoring.sh: all checks passed"
    else
        echo "docker/test-monitoring.sh: FAILED (exit $status)" >&2
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# rcli [args...]: redis-cli against the published server port.
rcli() { timeout 30 redis-cli -h 127.0.0.1 -p "$KVCACHE_PORT" "$@"; }

# promql QUERY: the value of the query's first series ("" when none).
promql() {
    curl -sf --get "$PROMETHEUS/api/v1/query" --data-urlencode "query=$1" |
        python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}

# wait_for WHAT QUERY EXPECTED: polls Prometheus (90 s at most; it scrapes every 15 s).
wait_for() {
    local got=
    for _ in $(seq 90); do
        got=$(promql "$2" 2>/dev/null || true)
        [ "$got" = "$3" ] && break
        sleep 1
    done
    expect "$1" "$got" "$3"
}

echo "==> images"
if [ "${KVCACHE_SKIP_IMAGE_TEST:-}" = 1 ] && podman image exists "$KVCACHE_IMAGE"; then
    echo "    $KVCACHE_IMAGE exists; docker/test.sh skipped"
else
    docker/test.sh
fi
# docker/test.sh may have written a containers.conf that makes podman work here.
[ ! -f "$CACHE/containers.conf" ] || export CONTAINERS_CONF=$CACHE/containers.conf
command -v podman-compose >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman-compose >/dev/null
}
podman build --pull=never --format docker -f docker/redis-exporter.Containerfile -t kvcache-redis-exporter:latest docker/
podman build --pull=never --format docker -f docker/prometheus.Containerfile -t kvcache-prometheus:latest docker/
podman run --rm --entrypoint prometheus-redis-exporter kvcache-redis-exporter:latest -version 2>&1 | head -n1 | sed 's/^/    /'
podman run --rm --entrypoint prometheus kvcache-prometheus:latest --version 2>&1 | head -n1 | sed 's/^/    /'
podman-compose version 2>/dev/null | tail -n1 | sed 's/^/    /'

echo "==> the configuration and the recording rules (promtool)"
podman run --rm --entrypoint promtool -v "$PWD/docker/monitoring:/m:ro" -w /m kvcache-prometheus:latest \
    check config prometheus.yml
podman run --rm --entrypoint promtool -v "$PWD/docker/monitoring:/m:ro" -w /m kvcache-prometheus:latest \
    test rules kvcache-rules.test.yml

echo "==> up: kvcache on 127.0.0.1:$KVCACHE_PORT, exporter on :$KVCACHE_EXPORTER_PORT, Prometheus on :$KVCACHE_PROMETHEUS_PORT"
STARTED=1
"${COMPOSE[@]}" up -d
for _ in $(seq 60); do
    [ "$(rcli PING 2>/dev/null)" = PONG ] && break
    sleep 1
done
expect "PING" "$(rcli PING)" PONG

echo "==> keys in db0, db3 and the named cache sessions"
rcli CONFIG SET latency-monitor-threshold 1 >/dev/null
for i in $(seq 1 20000); do printf 'SET key:%d v%d\n' "$i" "$i"; done | rcli >/dev/null
rcli SET session:1 alice EX 3600 >/dev/null
rcli -n 3 SET a 1 >/dev/null
rcli -n 3 SET b 2 EX 600 >/dev/null
printf 'SELECT sessions\nSET s1 x\nSET s2 y\nSET s3 z\n' | rcli >/dev/null
for i in $(seq 1 10); do rcli GET "key:$i" >/dev/null; rcli GET "missing:$i" >/dev/null; done
# A command slower than 1 ms: SAVE waits for the writer to apply the 20,000 keys.
expect "SAVE" "$(rcli SAVE)" OK

echo "==> what Prometheus scraped"
wait_for "redis_up" 'redis_up{job="kvcache"}' 1
wait_for 'redis_db_keys{db="db0"} (DBSIZE)' 'redis_db_keys{db="db0"}' "$(rcli -n 0 DBSIZE)"
wait_for 'redis_db_keys_expiring{db="db0"}' 'redis_db_keys_expiring{db="db0"}' 1
wait_for 'redis_db_keys{db="db3"} (DBSIZE)' 'redis_db_keys{db="db3"}' "$(rcli -n 3 DBSIZE)"
wait_for 'redis_db_keys_expiring{db="db3"}' 'redis_db_keys_expiring{db="db3"}' 1
wait_for 'redis_db_keys{db="db5"} (an empty db)' 'redis_db_keys{db="db5"}' 0
wait_for "named caches are no db" 'count(redis_db_keys{db!~"db[0-9]+"}) or vector(0)' 0
wait_for "keyspace hits >= 10" 'redis_keyspace_hits_total >= bool 10' 1
wait_for "keyspace misses >= 10" 'redis_keyspace_misses_total >= bool 10' 1
wait_for 'redis_latency_percentiles_usec{cmd="set",quantile="99"} present' \
    'count(redis_latency_percentiles_usec{cmd="set",quantile="99"})' 1
wait_for 'a latency spike of the command event' 'count(redis_latency_spike_duration_seconds{event_name="command"} > 0)' 1
expect "INFO caches has the named cache" "$(rcli INFO caches | grep -c '^cache_sessions:keys=3,')" 1

echo "==> the exporter's log"
errors=$(podman logs "${PROJECT}_exporter_1" 2>&1 | grep -c 'level=error' || true)
expect "errors in the exporter's log" "$errors" 0

echo "==> the dashboard's queries (two scrapes at least, for rate())"
wait_for "two scrapes" 'count_over_time(redis_up{job="kvcache"}[5m]) >= bool 2' 1
python3 docker/monitoring/check-dashboard.py "$PROMETHEUS"

echo "==> down -v"
"${COMPOSE[@]}" down -v >/dev/null
STARTED=0
