#!/usr/bin/env python3
"""Cache-aside with redis-py against kvcache-server, in two named caches.

Reads go to the cache first; on a miss they go to the (slow) database and
fill the cache with a TTL. User profiles live in the cache "users" for five
minutes, sessions in the cache "sessions" for half a second, so the run
shows a miss, a hit, and a refill after the TTL has passed. Each named
cache is its own file on the server (<dir>/users.sqlite,
<dir>/sessions.sqlite); redis-py selects it with db="name".

    python3 Clients/examples/cache_aside.py [port]    # or PORT=7777 ...; default 6379

It deletes, then writes, the keys user:42 (in "users") and session:abc
(in "sessions").
"""
import json
import os
import sys
import time

import redis

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("PORT", "6379"))
HOST = os.environ.get("HOST", "127.0.0.1")

USER_TTL_SECONDS = 300
SESSION_TTL_MS = 500

users = redis.Redis(host=HOST, port=PORT, db="users")
sessions = redis.Redis(host=HOST, port=PORT, db="sessions")

database_reads = 0


def slow_database(query):
    """Stands in for a real database: 200 ms a read."""
    global database_reads
    database_reads += 1
    time.sleep(0.2)
    kind, key = query
    if kind == "user":
        return {"id": key, "name": "Ada Lovelace"}
    return {"token": key, "user": 42}


def cache_aside(cache, key, load, **ttl):
    """Returns (record, "hit" or "miss"): the cached copy of `key`, or else
    what `load()` reads, which then goes into the cache with the TTL given
    as redis-py's ex= (seconds) or px= (milliseconds)."""
    cached = cache.get(key)
    if cached is not None:
        return json.loads(cached), "hit"
    record = load()
    cache.set(key, json.dumps(record), **ttl)
    return record, "miss"


def get_user(user_id):
    return cache_aside(users, f"user:{user_id}", lambda: slow_database(("user", user_id)), ex=USER_TTL_SECONDS)


def get_session(token):
    return cache_aside(sessions, f"session:{token}", lambda: slow_database(("session", token)), px=SESSION_TTL_MS)


def show(label, read, key):
    start = time.monotonic()
    record, outcome = read(key)
    ms = (time.monotonic() - start) * 1000
    print(f"{label}: {outcome} {json.dumps(record)} ({ms:.0f} ms)")


def main():
    users.delete("user:42")
    sessions.delete("session:abc")

    show("user 42, first read", get_user, 42)
    show("user 42, second read", get_user, 42)
    show("session abc, first read", get_session, "abc")
    show("session abc, second read", get_session, "abc")

    print(f"TTL of user:42 in users: {users.ttl('user:42')} s")
    print(f"user:42 in sessions: {sessions.exists('user:42')} (each cache has its own keys)")

    print(f"waiting {SESSION_TTL_MS + 100} ms for the session to expire")
    time.sleep((SESSION_TTL_MS + 100) / 1000)
    show("session abc, after its TTL", get_session, "abc")
    show("user 42, after the session's TTL", get_user, 42)

    print(f"database reads: {database_reads}")


if __name__ == "__main__":
    main()
