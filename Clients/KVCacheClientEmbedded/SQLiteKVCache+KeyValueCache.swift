import KVCacheClient
import SQLiteKVCache

// The embedded engine seen through the client's protocol, so one program
// runs on either:
//
//     let cache: any KeyValueCache = SQLiteKVCache(handle: "responses", directory: dir, diskCapacity: 0)
//     let cache: any KeyValueCache = try KVCacheClient(port: 6379, cache: "responses")
//
// This module sits beside both: the engine knows nothing of the client, and
// the client does not link SQLite. The engine's own methods already match
// the protocol's requirements.

extension SQLiteKVCache: KeyValueCache {}

extension SQLiteKVCache.Entry: KeyValueCacheEntry {}
