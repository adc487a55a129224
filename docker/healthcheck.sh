#!/bin/bash
# The image's HEALTHCHECK: sends PING over TCP from inside the container
# (there is no redis-cli in the image). +PONG, or -NOAUTH when a password is
# set, means the server is up and answering. The port is 6379 unless
# KVCACHE_HEALTHCHECK_PORT says otherwise (for a container run with --port).
port=${KVCACHE_HEALTHCHECK_PORT:-6379}
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
printf 'PING\r\n' >&3
IFS= read -r -t 5 reply <&3 || { echo "no reply on port $port" >&2; exit 1; }
case $reply in
    +PONG* | -NOAUTH*) exit 0 ;;
esac
echo "unexpected reply to PING: $reply" >&2
exit 1
