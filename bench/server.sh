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
