-- kvcache-server's own figures for prometheus-redis-exporter's -script
-- option: every cache's, named caches included, and the server-wide ones
-- the exporter does not know. Needs EVAL in the server.
--
--   prometheus-redis-exporter -redis.addr redis://127.0.0.1:6379 \
--       -script /etc/prometheus/kvcache-caches.lua
--
-- It reads INFO once and returns alternating names and values, as the
-- exporter wants them; each becomes redis_script_values{key="..."}:
--   <cache>:<field>  from INFO caches (cache_<name>:keys=...,bytes=...),
--                    every numeric field: keys, expires, avg_ttl, bytes,
--                    capacity, hits, misses, evicted, expired, tier_entries,
--                    tier_bytes, file_bytes, wal_bytes, unapplied_bytes,
--                    available; the policy, a word, as <cache>:policy_<policy> 1
--   server/<field>   this server's own fields of INFO memory, persistence
--                    and stats (memtable_bytes, writer_failed_jobs, ...)
-- for example redis_script_values{key="sessions:keys"} 1234. A cache name
-- never holds ':' or '/'. docker/monitoring/kvcache-rules.yml turns the
-- keys into series with a cache label; docs/monitoring.md tells more.

local result = {}
local info = redis.call("INFO")

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

local own = {
    "memory_tier_bytes", "memory_tier_budget", "memory_tier_used", "memory_tier_hits", "memory_tier_misses",
    "stored_content_bytes", "memtable_bytes", "memtable_max_bytes", "aof_segments", "aof_fsyncs",
    "writer_jobs_in_flight", "writer_batches_applied", "writer_busy_seconds", "writer_failed_jobs",
    "writer_paused", "failed_commits", "open_caches", "known_caches", "max_caches",
}
for _, field in ipairs(own) do
    local value = string.match(info, "\n" .. field .. ":([%d%.]+)")
    if value ~= nil then
        table.insert(result, "server/" .. field)
        table.insert(result, value)
    end
end
return result
