#!/usr/bin/env python3
"""Checks grafana-dashboard.json against a running Prometheus, as Grafana
would ask it: every panel's query (its variables replaced by "all") must
be valid PromQL, and the panels over the `kvcache` job must return data.

    docker/monitoring/check-dashboard.py http://127.0.0.1:9090 [--require-caches]

The Caches row reads the recording rules over the kvcache-caches job
(the exporter's -script, which needs EVAL in the server): its panels are
reported but may be empty unless --require-caches. Exits 1 on a failure.
Standard library only."""
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
# Queries that may be empty on a healthy server, and why.
MAY_BE_EMPTY = {
    "redis_latency_spike": "nothing to show yet",                # no spike yet
    "irate(redis_commands_duration": "nothing to show yet",      # no command in the last scrapes
    "rate(kvcache:cache_evicted": "nothing to show yet",
    "redis_aof_current_size_bytes": "appendonly no",             # as Redis: no aof_current_size then
}


def queries(dashboard):
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]


def main():
    url = sys.argv[1].rstrip("/")
    require_caches = "--require-caches" in sys.argv
    with open(os.path.join(HERE, "grafana-dashboard.json")) as f:
        dashboard = json.load(f)
    failures = 0
    for title, expr in queries(dashboard):
        promql = (expr.replace("$instance", ".*").replace("$cache", ".*").replace("$__interval", "1m"))
        query = urllib.parse.urlencode({"query": promql})
        try:
            with urllib.request.urlopen("%s/api/v1/query?%s" % (url, query), timeout=10) as reply:
                answer = json.load(reply)
        except urllib.error.HTTPError as error:
            answer = json.load(error)
        if answer.get("status") != "success":
            print("FAIL  %s: %s: %s" % (title, promql, answer.get("error")))
            failures += 1
            continue
        results = answer["data"]["result"]
        caches = "kvcache:cache_" in promql
        if results:
            print("ok    %s: %d series" % (title, len(results)))
        elif caches and not require_caches:
            print("empty %s (needs the kvcache-caches job)" % title)
        elif any(part in promql for part in MAY_BE_EMPTY):
            print("empty %s (%s)" % (title, next(why for part, why in MAY_BE_EMPTY.items() if part in promql)))
        else:
            print("FAIL  %s: no data for %s" % (title, promql))
            failures += 1
    print("%d queries failed" % failures if failures else "every query answered")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
