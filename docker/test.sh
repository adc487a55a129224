#!/usr/bin/env bash
# Builds the container image (docker/Dockerfile) with podman and runs it:
# PING, SET/GET from the host's redis-cli through the published port, a
# non-root process, the HEALTHCHECK, data kept on the named volume across a
# restart and a new container, and configuration by a mounted file plus
# arguments. Needs root on Debian bookworm; no image registry is needed:
#
#   - podman, debootstrap and redis-tools are installed with apt if missing;
#   - debian:bookworm-slim is made with debootstrap --variant=minbase (the
#     root file system is cached in $KVCACHE_PODMAN_CACHE), trimmed as
#     Debian's slim image is, podman import, and Debian's updates;
#   - swift:6.3-bookworm is that image, the toolchain's Debian dependencies
#     and the toolchain at $SWIFT_TOOLCHAIN (docker/swift-6.3-bookworm.Containerfile).
#
# Both base images stay in podman's storage (and podman's layer cache keeps
# the build), so a second run is quick. Containers and volumes made here are
# removed at the end. The whole run is bounded by $KVCACHE_TEST_TIMEOUT
# seconds (1500); every step prints its time. The Swift compile runs under
# flock $SWIFT_BUILD_LOCK, one Swift build at a time on this machine.
#
# Environment: KVCACHE_PODMAN_CACHE (/var/cache/kvcache-podman),
# SWIFT_TOOLCHAIN (/opt/swift), SWIFT_BUILD_LOCK (/tmp/swift-build.lock),
# DEBIAN_MIRROR (http://deb.debian.org/debian), DEBIAN_SECURITY_MIRROR
# (http://deb.debian.org/debian-security), KVCACHE_TEST_TIMEOUT (1500),
# KVCACHE_IMAGE (kvcache-server:test).
set -euo pipefail

TIMEOUT=${KVCACHE_TEST_TIMEOUT:-1500}
if [ -z "${_KVCACHE_TEST_BOUNDED:-}" ]; then
    # timeout(1) signals its whole process group (podman, flock, ...) at the end.
    export _KVCACHE_TEST_BOUNDED=1
    status=0
    timeout --kill-after=120 "$TIMEOUT" "$BASH" "$0" "$@" || status=$?
    [ "$status" -ne 124 ] || echo "docker/test.sh: FAILED: over the time limit of ${TIMEOUT}s" >&2
    exit "$status"
fi

cd "$(dirname "$0")/.."
CACHE=${KVCACHE_PODMAN_CACHE:-/var/cache/kvcache-podman}
SWIFT_TOOLCHAIN=${SWIFT_TOOLCHAIN:-/opt/swift}
SWIFT_BUILD_LOCK=${SWIFT_BUILD_LOCK:-/tmp/swift-build.lock}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
IMAGE=${KVCACHE_IMAGE:-kvcache-server:test}
BUILD_IMAGE=$IMAGE-build # the build stage, tagged so that its cache is kept
DEBIAN_IMAGE=docker.io/library/debian:bookworm-slim
MINBASE_IMAGE=localhost/kvcache-podman/debootstrap-minbase:bookworm
SWIFT_IMAGE=docker.io/library/swift:6.3-bookworm
RUN_ID=kvcache-test-$$
CONTAINERS=()
VOLUMES=()
TEMP_DIR=

# ---------------------------------------------------------------- helpers

# Without systemd (as here), podman cannot schedule a container's periodic
# healthcheck timer and says so on every run, start and stop ("unable to get
# systemd connection"): harmless, as this test runs `podman healthcheck run`
# itself, so those lines are dropped.
PODMAN_NOISE=
[ -d /run/systemd/system ] || PODMAN_NOISE='unable to get systemd connection'
podman() {
    if [ -z "$PODMAN_NOISE" ]; then
        command podman "$@"
        return
    fi
    { command podman "$@" 2>&1 1>&3 3>&- | { grep -v "$PODMAN_NOISE" || true; } >&2; } 3>&1
}

TIMINGS=()
CURRENT_STEP=
STEP_T0=$SECONDS
START=$SECONDS

# step NAME COMMAND...: runs a step, printing and recording its time.
step() {
    local name=$1 t0=$SECONDS
    shift
    CURRENT_STEP=$name
    STEP_T0=$t0
    echo
    echo "==> $name"
    "$@"
    TIMINGS+=("$(printf '%6ss  %s' $((SECONDS - t0)) "$name")")
    echo "<== $name: $((SECONDS - t0))s"
    CURRENT_STEP=
}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# expect WHAT ACTUAL EXPECTED
expect() {
    if [ "$2" != "$3" ]; then
        fail "$1: expected '$3', got '$2'"
    fi
    echo "    ok: $1 = $3"
}

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    set +e
    if [ -n "$CURRENT_STEP" ]; then
        echo "docker/test.sh: step '$CURRENT_STEP' failed" >&2
        for c in "${CONTAINERS[@]}"; do
            echo "--- logs of $c:" >&2
            podman logs --tail 30 "$c" >&2 2>&1
        done
    fi
    for c in "${CONTAINERS[@]}"; do podman rm -f -t 0 "$c" >/dev/null 2>&1; done
    for v in "${VOLUMES[@]}"; do podman volume rm -f "$v" >/dev/null 2>&1; done
    [ -z "$TEMP_DIR" ] || rm -rf "$TEMP_DIR"
    echo
    echo "Timings:"
    for t in "${TIMINGS[@]}"; do echo "$t"; done
    [ -z "$CURRENT_STEP" ] || printf '%6ss  %s (FAILED)\n' $((SECONDS - STEP_T0)) "$CURRENT_STEP"
    printf '%6ss  total\n' $((SECONDS - START))
    if [ "$status" -eq 0 ]; then
        echo "docker/test.sh: all checks passed"
    else
        echo "docker/test.sh: FAILED (exit $status)" >&2
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

ensure_debs() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    ((${#missing[@]})) || { echo "    installed already: $*"; return 0; }
    echo "    installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# rcli PORT [redis-cli args...]: redis-cli against the published port.
rcli() {
    local port=$1
    shift
    timeout 10 redis-cli -h 127.0.0.1 -p "$port" "$@"
}

# host_port CONTAINER: the host port podman published for 6379.
host_port() {
    local mapping
    mapping=$(podman port "$1" 6379/tcp | head -n1)
    [ -n "$mapping" ] || fail "no published port for $1"
    echo "${mapping##*:}"
}

# wait_ready CONTAINER [redis-cli args...]: waits (30 s at most) until PING
# answers PONG through the published port.
wait_ready() {
    local c=$1 port reply=
    shift
    for _ in $(seq 60); do
        if [ "$(podman inspect --format '{{.State.Running}}' "$c")" != true ]; then
            podman logs "$c" >&2 || true
            fail "container $c is not running"
        fi
        port=$(host_port "$c")
        reply=$(rcli "$port" "$@" PING 2>/dev/null || true)
        if [ "$reply" = PONG ]; then
            echo "    $c answers PONG on 127.0.0.1:$port"
            return 0
        fi
        sleep 0.5
    done
    fail "$c did not answer PING within 30 s (last reply: '$reply')"
}

# healthy CONTAINER: podman healthcheck run passes (retried for 20 s).
healthy() {
    local out=
    for _ in $(seq 20); do
        if out=$(podman healthcheck run "$1" 2>&1); then
            echo "    podman healthcheck run $1: ${out:-healthy}"
            return 0
        fi
        sleep 1
    done
    fail "healthcheck of $1 does not pass: $out"
}

# run_container NAME [podman run options...] -- [image arguments...]
run_container() {
    local name=$1
    shift
    local opts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        opts+=("$1")
        shift
    done
    [ $# -eq 0 ] || shift
    CONTAINERS+=("$name")
    podman run -d --name "$name" --label kvcache-test="$RUN_ID" \
        -p 127.0.0.1::6379 "${opts[@]}" "$IMAGE" "$@" >/dev/null
}

# ---------------------------------------------------------------- steps

check_host() {
    [ "$(id -u)" -eq 0 ] || fail "run as root (podman, debootstrap and apt need it)"
    [ -x "$SWIFT_TOOLCHAIN/usr/bin/swift" ] || fail "no Swift toolchain at $SWIFT_TOOLCHAIN"
    ensure_debs podman debootstrap redis-tools
    mkdir -p "$CACHE"
    podman --version
}

make_minbase_image() {
    if podman image exists "$DEBIAN_IMAGE" || podman image exists "$MINBASE_IMAGE"; then
        echo "    $MINBASE_IMAGE or $DEBIAN_IMAGE exists"
        return 0
    fi
    local rootfs=$CACHE/rootfs-bookworm-minbase
    if [ ! -f "$rootfs.done" ]; then
        rm -rf "$rootfs"
        echo "    debootstrap --variant=minbase bookworm $rootfs $DEBIAN_MIRROR"
        debootstrap --variant=minbase bookworm "$rootfs" "$DEBIAN_MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
            || { tail -n 30 "$CACHE/debootstrap.log" >&2; fail "debootstrap failed"; }
        slim_rootfs "$rootfs"
        touch "$rootfs.done"
    else
        echo "    root file system cached in $rootfs"
    fi
    # As Debian's images: no device nodes (the runtime makes /dev), no
    # package lists, no resolv.conf or machine-id of this host.
    tar --numeric-owner -C "$rootfs" -c \
        --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' --exclude='./run/*' \
        --exclude='./tmp/*' --exclude='./var/cache/apt/*.bin' --exclude='./var/lib/apt/lists/*' . |
        podman import \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'CMD ["bash"]' \
            --message "debootstrap --variant=minbase bookworm (docker/test.sh)" \
            - "$MINBASE_IMAGE" >/dev/null
    podman image exists "$MINBASE_IMAGE" || fail "podman import did not make $MINBASE_IMAGE"
}

# debian:bookworm-slim: the imported system with Debian's current updates
# (security ones included), as Debian's own images have them.
make_debian_image() {
    if podman image exists "$DEBIAN_IMAGE"; then
        echo "    $DEBIAN_IMAGE exists"
        return 0
    fi
    local context=$CACHE/debian-bookworm-slim
    mkdir -p "$context"
    printf '%s\n' \
        "FROM $MINBASE_IMAGE" \
        'RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get -y upgrade && rm -rf /var/lib/apt/lists/*' \
        'CMD ["bash"]' >"$context/Containerfile"
    # One layer, as Debian's image: no second copy of the upgraded files.
    podman build --pull=never --format docker --squash-all -t "$DEBIAN_IMAGE" "$context"
}

# slim_rootfs DIR: what debian:bookworm-slim does to a minbase system.
slim_rootfs() {
    local root=$1
    cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
# As in debian:bookworm-slim: no documentation, manuals or translations.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/man/*
EOF
    find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
    rm -rf "$root/usr/share/groff"/* "$root/usr/share/info"/* "$root/usr/share/linda"/* \
        "$root/usr/share/lintian"/* "$root/usr/share/man"/*
    find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
    cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
    echo 'Acquire::GzipIndexes "true";' >"$root/etc/apt/apt.conf.d/docker-gzip-indexes"
    rm -f "$root/etc/apt/sources.list"
    cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $DEBIAN_MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $DEBIAN_SECURITY_MIRROR
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    rm -f "$root/var/cache/apt/archives/"*.deb
    : >"$root/etc/resolv.conf"
    : >"$root/etc/machine-id"
    echo localhost >"$root/etc/hostname"
}

# Runs a container with podman's defaults; where that fails, as in a
# sandbox like this one, uses a containers.conf of this test's own
# (CONTAINERS_CONF, the system's files untouched) that
#   - picks runc when the cgroup v2 hierarchy of a hybrid (v1 + v2) setup has
#     controllers: crun 1.8 refuses that ("cgroups in hybrid mode not
#     supported, drop all controllers from cgroupv2");
#   - sets the containers' nofile and nproc limits to this process's hard
#     limits: podman's default of 1048576 cannot be set without
#     CAP_SYS_RESOURCE ("error setting rlimit type 7: operation not
#     permitted"), and podman itself lowers nproc to kernel.pid_max.
setup_podman() {
    local image=$DEBIAN_IMAGE out
    podman image exists "$image" || image=$MINBASE_IMAGE
    local probe=(run --rm --network none "$image" true)
    [ -z "$PODMAN_NOISE" ] || echo "    no systemd: no periodic healthchecks; this test runs them"
    if out=$(podman "${probe[@]}" 2>&1); then
        echo "    podman runs containers with its defaults"
        return 0
    fi
    echo "    podman's defaults fail: $out"
    local conf=$CACHE/containers.conf nofile nproc pid_max runtime=
    nofile=$(ulimit -Hn)
    nproc=$(ulimit -Hu)
    pid_max=$(cat /proc/sys/kernel/pid_max)
    [ "$nofile" != unlimited ] || nofile=1048576
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ]; then nproc=$pid_max; fi
    if grep -qs . /sys/fs/cgroup/unified/cgroup.controllers; then
        ensure_debs runc
        runtime=runc
    fi
    {
        echo "# Written by docker/test.sh: podman's defaults do not work on this machine."
        echo "[containers]"
        echo "default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]"
        if [ -n "$runtime" ]; then
            echo "[engine]"
            echo "runtime = \"$runtime\""
        fi
    } >"$conf"
    export CONTAINERS_CONF=$conf
    sed 's/^/    | /' "$conf"
    out=$(podman "${probe[@]}" 2>&1) || fail "podman cannot run a container even with $conf: $out"
    echo "    podman runs containers with CONTAINERS_CONF=$conf"
}

make_swift_image() {
    if podman image exists "$SWIFT_IMAGE"; then
        echo "    $SWIFT_IMAGE exists"
        return 0
    fi
    echo "    toolchain from $SWIFT_TOOLCHAIN ($(du -sh "$SWIFT_TOOLCHAIN" | cut -f1))"
    podman build --pull=never --format docker \
        -f docker/swift-6.3-bookworm.Containerfile -t "$SWIFT_IMAGE" "$SWIFT_TOOLCHAIN"
}

# Builds the image, tags its build stage $BUILD_IMAGE (so that podman keeps
# it, the layer cache of the next run, as other than a dangling image), and
# removes the images of an earlier build that these replace (a new build
# stage holds a new compile of ~170 MB).
build_image() {
    local earlier=() ref id stage log=$CACHE/build.log
    for ref in "$IMAGE" "$BUILD_IMAGE"; do
        id=$(podman image inspect --format '{{.Id}}' "$ref" 2>/dev/null) && earlier+=("$id")
    done
    echo "    waiting for $SWIFT_BUILD_LOCK (one Swift build at a time)"
    LOCK_T0=$(date +%s) flock "$SWIFT_BUILD_LOCK" bash -c '
        echo "    got the lock after $(($(date +%s) - LOCK_T0))s"
        exec podman "$@"' podman \
        build --pull=never --format docker -f docker/Dockerfile -t "$IMAGE" . 2>&1 | tee "$log"
    # The build stage's image: the last "--> <id>" before the second stage.
    stage=$(awk '/^\[2\/2\] STEP 1\//{exit} /^--> [0-9a-f]+$/{id=$2} END{print id}' "$log")
    if [ -n "$stage" ] && [ "$(podman image inspect --format '{{.Config.WorkingDir}}' "$stage" 2>/dev/null)" = /src ]; then
        podman tag "$stage" "$BUILD_IMAGE"
        echo "    build stage ${stage:0:12} tagged $BUILD_IMAGE"
    else
        echo "    (could not find the build stage's image in the output)"
    fi
    local current
    current=$(podman image inspect --format '{{.Id}}' "$IMAGE" "$BUILD_IMAGE" 2>/dev/null || true)
    for id in "${earlier[@]}"; do
        if ! grep -q "$id" <<<"$current"; then
            echo "    removing the earlier build's image ${id:0:12}"
            podman rmi "$id" >/dev/null 2>&1 || true
        fi
    done
}

inspect_image() {
    local f
    f=$(podman image inspect --format '{{.Config.User}}' "$IMAGE")
    expect "image user" "$f" "kvcache:kvcache"
    f=$(podman image inspect --format '{{json .Config.Entrypoint}}' "$IMAGE")
    expect "entrypoint" "$f" '["docker-entrypoint.sh"]'
    f=$(podman image inspect --format '{{if .Config.Cmd}}{{json .Config.Cmd}}{{else}}none{{end}}' "$IMAGE")
    expect "cmd" "$f" "none"
    f=$(podman image inspect --format '{{range $p, $_ := .Config.ExposedPorts}}{{$p}} {{end}}' "$IMAGE")
    expect "exposed ports" "$f" "6379/tcp "
    f=$(podman image inspect --format '{{range $v, $_ := .Config.Volumes}}{{$v}} {{end}}' "$IMAGE")
    expect "volumes" "$f" "/data "
    f=$(podman image inspect --format '{{json .HealthCheck.Test}}' "$IMAGE")
    expect "healthcheck" "$f" '["CMD","kvcache-healthcheck"]'

    # Shared libraries: glibc, libstdc++/libgcc_s (in Debian's base image),
    # SQLite, OpenSSL, Lua 5.1 with its cjson and bit modules (EVAL), and
    # what they need; the Swift runtime is static.
    local libs unexpected
    libs=$(podman run --rm --entrypoint ldd "$IMAGE" /usr/local/bin/kvcache-server)
    echo "$libs" | sed 's/^/    /'
    unexpected=$(echo "$libs" | awk '{print $1}' |
        grep -Ev '^(linux-vdso\.so|/lib64/ld-linux-x86-64\.so|lib(c|m|dl|pthread|rt|stdc\+\+|gcc_s|sqlite3|ssl|crypto|z|lua5\.1|lua5\.1-cjson|lua5\.1-bitop)\.so)' || true)
    [ -z "$unexpected" ] || fail "unexpected shared libraries: $unexpected"
    echo "    ok: only glibc, libstdc++, SQLite and OpenSSL are linked"
    f=$(podman run --rm "$IMAGE" --version)
    echo "    $f"
    # Another command than the server runs as it is.
    f=$(podman run --rm "$IMAGE" sh -c 'id -un; pwd')
    expect "user and directory of 'sh -c ...'" "$(echo $f)" "kvcache /data"
}

test_basic() {
    local c=$RUN_ID-a port uid
    VOLUMES+=("$RUN_ID-data")
    podman volume create "$RUN_ID-data" >/dev/null
    run_container "$c" -v "$RUN_ID-data:/data"
    wait_ready "$c"
    port=$(host_port "$c")
    expect "PING" "$(rcli "$port" PING)" PONG
    expect "SET" "$(rcli "$port" SET greeting 'hello world')" OK
    expect "GET" "$(rcli "$port" GET greeting)" "hello world"
    expect "SET in db3" "$(rcli "$port" -n 3 SET k3 v3)" OK
    expect "CONFIG GET bind" "$(rcli "$port" CONFIG GET bind | tail -n1)" 0.0.0.0
    expect "CONFIG GET dir" "$(rcli "$port" CONFIG GET dir | tail -n1)" /data
    expect "CONFIG GET protected-mode" "$(rcli "$port" CONFIG GET protected-mode | tail -n1)" no
    # The server is PID 1 of the container, not root, and owns its files.
    uid=$(podman exec "$c" awk '/^Uid:/ {print $2 "," $3}' /proc/1/status)
    expect "uid,euid of PID 1" "$uid" "999,999"
    expect "PID 1" "$(podman exec "$c" cat /proc/1/comm)" kvcache-server
    expect "owner of /data/db0.sqlite" "$(podman exec "$c" stat -c %U /data/db0.sqlite)" kvcache
    podman top "$c" user,pid,args | sed 's/^/    /'
    healthy "$c"
    if podman exec -e KVCACHE_HEALTHCHECK_PORT=1 "$c" kvcache-healthcheck >/dev/null 2>&1; then
        fail "the healthcheck passes on a port nothing listens on"
    fi
    echo "    ok: the healthcheck fails on a port nothing listens on"
}

test_restart() {
    local c=$RUN_ID-a port t0 code
    t0=$SECONDS
    podman stop -t 20 "$c" >/dev/null
    code=$(podman inspect --format '{{.State.ExitCode}}' "$c")
    expect "exit code after SIGTERM (stopped in $((SECONDS - t0))s)" "$code" 0
    podman start "$c" >/dev/null
    wait_ready "$c"
    port=$(host_port "$c")
    expect "GET after stop/start" "$(rcli "$port" GET greeting)" "hello world"
    podman restart -t 20 "$c" >/dev/null
    wait_ready "$c"
    port=$(host_port "$c")
    expect "GET after podman restart" "$(rcli "$port" GET greeting)" "hello world"
    # A new container on the same volume.
    podman rm -f -t 20 "$c" >/dev/null
    c=$RUN_ID-b
    run_container "$c" -v "$RUN_ID-data:/data"
    wait_ready "$c"
    port=$(host_port "$c")
    expect "GET in a new container on the volume" "$(rcli "$port" GET greeting)" "hello world"
    expect "GET db3 in a new container" "$(rcli "$port" -n 3 GET k3)" v3
    healthy "$c"
    podman rm -f -t 20 "$c" >/dev/null
}

test_config() {
    local c=$RUN_ID-conf port
    TEMP_DIR=$(mktemp -d)
    # The shipped kvcache.conf (bind 127.0.0.1, dir ./data, protected-mode
    # yes) with a few changes: the container defaults must still apply, the
    # file's other directives too, and the arguments override the file.
    sed -e 's/^databases 16$/databases 4/' \
        -e 's/^eviction-policy fifo$/eviction-policy lru/' \
        -e 's/^requirepass ""$/requirepass from-the-file/' \
        kvcache.conf >"$TEMP_DIR/my.conf"
    chmod 0644 "$TEMP_DIR/my.conf"
    grep -q '^databases 4$' "$TEMP_DIR/my.conf" || fail "could not edit kvcache.conf"
    grep -q '^requirepass from-the-file$' "$TEMP_DIR/my.conf" || fail "could not edit kvcache.conf"
    VOLUMES+=("$RUN_ID-conf")
    run_container "$c" -v "$TEMP_DIR/my.conf:/etc/kvcache.conf:ro" -v "$RUN_ID-conf:/data" \
        -- /etc/kvcache.conf --requirepass from-the-args
    wait_ready "$c" -a from-the-args --no-auth-warning
    port=$(host_port "$c")
    expect "PING without AUTH" "$(rcli "$port" PING 2>&1 | head -n1)" "NOAUTH Authentication required."
    expect "AUTH with the file's password" \
        "$(rcli "$port" AUTH from-the-file 2>&1 | head -n1 | cut -d' ' -f1)" WRONGPASS
    local a=(-a from-the-args --no-auth-warning)
    expect "SET with the argument's password" "$(rcli "$port" "${a[@]}" SET k v)" OK
    expect "GET" "$(rcli "$port" "${a[@]}" GET k)" v
    expect "databases (file)" "$(rcli "$port" "${a[@]}" CONFIG GET databases | tail -n1)" 4
    expect "eviction-policy (file)" "$(rcli "$port" "${a[@]}" CONFIG GET eviction-policy | tail -n1)" lru
    expect "bind (container default over the file)" "$(rcli "$port" "${a[@]}" CONFIG GET bind | tail -n1)" 0.0.0.0
    expect "dir (container default over the file)" "$(rcli "$port" "${a[@]}" CONFIG GET dir | tail -n1)" /data
    expect "SELECT 4 (databases 4)" "$(rcli "$port" "${a[@]}" SELECT 4 2>&1 | head -n1)" "ERR DB index is out of range"
    healthy "$c"
    podman rm -f -t 20 "$c" >/dev/null
}

show_images() {
    podman images --format '{{.Repository}}:{{.Tag}}\t{{.ID}}\t{{.Size}}' |
        grep -E "^(localhost/)?($IMAGE|$BUILD_IMAGE|$DEBIAN_IMAGE|$MINBASE_IMAGE|$SWIFT_IMAGE)\s" || true
}

step "host packages (podman, debootstrap, redis-tools)" check_host
step "debootstrap --variant=minbase bookworm + podman import" make_minbase_image
step "podman: can it run containers here?" setup_podman
step "base image $DEBIAN_IMAGE (+ Debian's updates)" make_debian_image
step "builder image $SWIFT_IMAGE" make_swift_image
step "podman build $IMAGE (docker/Dockerfile)" build_image
step "image configuration and shared libraries" inspect_image
step "run: PING, SET/GET, non-root, healthcheck" test_basic
step "stop/start, restart, new container: data kept on the volume" test_restart
step "mounted config file + --requirepass" test_config
step "images" show_images
