#!/bin/sh
# Talking to kvcache-server with netcat: inline commands (words separated by
# spaces, one command a line, as Redis accepts them) and the replies in raw
# RESP. Each request is echoed, then the bytes that came back, with each
# line's \r\n made visible (RAW=1 prints the bytes as they came).
#
#   Clients/examples/netcat-session.sh [port]     # or PORT=7777 ...; default 6379
#
# Uses netcat-openbsd (Debian's nc): -N shuts its sending side down once
# stdin ends; the server answers everything it was sent (under appendfsync
# always, once the log is fsynced), then closes, and nc quits. (-q3 waited
# three seconds after stdin ended, whatever came back, and cut off a reply
# slower than that: a new cache's file created on a loaded disk.)
set -eu
PORT=${1:-${PORT:-6379}}
HOST=${HOST:-127.0.0.1}

# Sends $1 (printf escapes allowed) and prints the raw reply.
session() {
    printf '$ printf %s | nc -N %s %s\n' "'$1'" "$HOST" "$PORT"
    if [ "${RAW:-0}" = 1 ]; then
        printf "$1" | nc -N "$HOST" "$PORT"
    else
        printf "$1" | nc -N "$HOST" "$PORT" | sed 's/\r$/\\r\\n/'
    fi
    echo
}

# +OK is a status, $1 a bulk string of one byte, :n an integer.
session 'SET a 1\r\nGET a\r\nINCR a\r\n'

# A missing key is the null bulk string $-1; an error starts with -.
session 'GET missing\r\nSET word hello\r\nINCR word\r\nSET a\r\n'

# A named cache for the connection, then a whole entry: KVCACHE.GET answers
# an array of key, storage date (ms since 1970), metadata and value.
session 'SELECT sessions\r\nKVCACHE.PUT page 1700000000000 text/html <p>hi</p>\r\nKVCACHE.GET page\r\n'

# The same kind of commands as RESP arrays of bulk strings, what client
# libraries send.
session '*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n'
