#!/bin/sh
# A redis-cli session against kvcache-server: strings, expiry, a named cache,
# INFO keyspace and INFO caches. Each command is echoed, then its reply as redis-cli
# prints it when its output is not a terminal.
#
#   Clients/examples/redis-cli-session.sh [port]     # or PORT=7777 ...; default 6379
#   HOST=10.0.0.5 Clients/examples/redis-cli-session.sh
#
# It writes the keys greeting and session:42 in db0 and user:1 in the
# cache "sessions" (file <dir>/sessions.sqlite).
set -eu
PORT=${1:-${PORT:-6379}}
HOST=${HOST:-127.0.0.1}

# Echoes a command as typed (arguments with spaces quoted), then runs it.
cli() {
    printf '$ redis-cli'
    for arg in "$@"; do
        case $arg in *" "*) printf ' "%s"' "$arg" ;; *) printf ' %s' "$arg" ;; esac
    done
    printf '\n'
    redis-cli -h "$HOST" -p "$PORT" "$@"
}

# Strings: SET and GET, as with Redis.
cli SET greeting "hello world"
cli GET greeting

# Expiry: EX sets a TTL in seconds, TTL reads it back (-1: none, -2: no key).
cli SET session:42 alice EX 3600
cli TTL session:42
cli TTL greeting

# A named cache: SELECT takes a name as well as an index. redis-cli -n only
# takes an index, so the commands go through one connection on stdin.
echo "\$ printf 'SELECT sessions\\\\nSET user:1 bob EX 60\\\\nGET user:1\\\\nDBSIZE\\\\n' | redis-cli"
printf 'SELECT sessions\nSET user:1 bob EX 60\nGET user:1\nDBSIZE\n' | redis-cli -h "$HOST" -p "$PORT"

# The caches are apart: db0 does not see user:1.
cli EXISTS user:1

# INFO keyspace: Redis's lines, for the numbered caches (db0 here).
cli INFO keyspace
# INFO caches: every cache, numbered and named, with this server's figures.
cli INFO caches
