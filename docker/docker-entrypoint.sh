#!/bin/sh
# The container's entrypoint: runs kvcache-server with the container defaults
#   --bind 0.0.0.0 --dir /data --protected-mode no
# placed after the config file (if any) and before the arguments given, so
# that they override the file and the arguments override them:
#   (no arguments)             kvcache-server <defaults>
#   --name value ...           kvcache-server <defaults> --name value ...
#   /path/to/file.conf [...]   kvcache-server /path/to/file.conf <defaults> [...]
#   kvcache-server [...]       the same as without the word kvcache-server
#   --help, --version, -h, -v  kvcache-server's own, without defaults
#   any other command          run as it is (sh, ls /data, ...)
set -eu

if [ "${1:-}" = kvcache-server ]; then
    shift
fi

case "${1:-}" in
    -h | --help | -v | --version)
        exec kvcache-server "$@"
        ;;
    '' | -*)
        exec kvcache-server --bind 0.0.0.0 --dir /data --protected-mode no "$@"
        ;;
esac

# A first argument that is a file, or no command: the config file (a path
# that does not exist gets kvcache-server's own error).
if [ -f "$1" ] || ! command -v "$1" >/dev/null 2>&1; then
    config=$1
    shift
    exec kvcache-server "$config" --bind 0.0.0.0 --dir /data --protected-mode no "$@"
fi

exec "$@"
