#!/bin/bash
# The nutcracker image's HEALTHCHECK: a RESP PING (nutcracker takes no inline
# commands) answered by the proxy itself; +PONG, or -NOAUTH when the pool
# sets redis_auth, is healthy. It says the proxy listens, not that the nodes
# are up: `scripts/cluster status` and the stats port tell that.
exec 3<>/dev/tcp/127.0.0.1/22121 || exit 1
printf '*1\r\n$4\r\nPING\r\n' >&3
IFS= read -r -t 5 reply <&3 || { echo "no reply" >&2; exit 1; }
case $reply in
    +PONG* | -NOAUTH*) exit 0 ;;
esac
echo "unexpected reply to PING: $reply" >&2
exit 1
