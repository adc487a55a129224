"""Client-side caching with redis-py and CLIENT TRACKING (RESP2, REDIRECT).

redis-py's own cache (`cache_config=`) refuses servers that report a Redis
older than 7.4; kvcache-server reports 7.0.15, whose commands it has. This
does what that cache does, with the public API: reads are kept in a dict,
and the server tells a Pub/Sub connection which keys to drop.

    python3 client_side_cache.py [port] [cache]
"""
import sys
import threading
import time

import redis

port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
cache_name = sys.argv[2] if len(sys.argv) > 2 else "0"

local = {}
lock = threading.Lock()


def on_invalidate(message):
    keys = message["data"]
    with lock:
        if keys is None:          # FLUSHDB / FLUSHALL: drop everything
            local.clear()
        else:
            for key in keys:
                local.pop(key, None)


# The connection that hears invalidations: subscribed to __redis__:invalidate.
listener = redis.Redis(port=port, protocol=2, decode_responses=True)
pubsub = listener.pubsub()
pubsub.subscribe(**{"__redis__:invalidate": on_invalidate})
thread = pubsub.run_in_thread(sleep_time=0.01)
while not any(c["cmd"] == "subscribe" for c in listener.client_list()):
    time.sleep(0.01)
redirect_id = max(int(c["id"]) for c in listener.client_list() if c["cmd"] == "subscribe")

# The connection that reads, tracking what it reads.
reader = redis.Redis(port=port, protocol=2, decode_responses=True, single_connection_client=True)
reader.execute_command("SELECT", cache_name)
reader.execute_command("CLIENT", "TRACKING", "on", "REDIRECT", redirect_id)


def cached_get(key):
    with lock:
        if key in local:
            return local[key], "local"
    value = reader.get(key)
    with lock:
        local[key] = value
    return value, "server"


writer = redis.Redis(port=port, decode_responses=True, single_connection_client=True)
writer.execute_command("SELECT", cache_name)
writer.set("greeting", "hello")
print("read:", *cached_get("greeting"))
print("read:", *cached_get("greeting"))
writer.set("greeting", "bonjour")   # another client changes it
deadline = time.time() + 5
while "greeting" in local and time.time() < deadline:
    time.sleep(0.01)
print("read:", *cached_get("greeting"))
writer.set("greeting", "hi", px=100)
cached_get("greeting")
time.sleep(0.5)                     # it expires: the server says so
print("after expiry:", "greeting" in local)
thread.stop()
