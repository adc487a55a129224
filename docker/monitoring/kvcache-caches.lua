-- Every cache's figures, named caches included, for prometheus-redis-exporter's
-- -script option (kvcache-server; needs EVAL):
--
--   prometheus-redis-exporter -redis.addr redis://127.0.0.1:6379 \
--       -script /etc/prometheus/kvcache-caches.lua
--
-- It reads INFO caches (one line per cache: cache_<name>:keys=...,bytes=...)
-- and returns alternating names and values, as the exporter wants them;
-- each becomes redis_script_values{key="<cache>:<field>"}, for example
--   redis_script_values{key="sessions:keys"} 1234
--   redis_script_values{key="sessions:hits"} 98765
-- Every numeric field is exported (keys, expires, avg_ttl, bytes, capacity,
-- hits, misses, evicted, expired, tier_entries, tier_bytes, file_bytes,
-- wal_bytes, unapplied_bytes, available); the policy, a word, becomes
-- <cache>:policy_<policy> with the value 1. docs/monitoring.md has the
-- PromQL that turns the key into a cache label.

local result = {}
local info = redis.call("INFO", "caches")
for name, fields in string.gmatch(info, "cache_([%w%.%-_]+):([^\r\n]+)") do
    for field, value in string.gmatch(fields, "([%w_]+)=([^,]+)") do
        if tonumber(value) ~= nil then
            table.insert(result, name .. ":" .. field)
            table.insert(result, value)
        elseif field == "policy" then
            table.insert(result, name .. ":policy_" .. value)
            table.insert(result, "1")
        end
    end
end
return result
