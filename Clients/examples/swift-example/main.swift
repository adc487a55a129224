// A tour of KVCacheClient: strings with a TTL, a pipeline, a named cache,
// a server error, and whole entries through the KeyValueCache protocol,
// which the embedded engine speaks too.
//
//   swift build && .build/debug/SwiftExample [port]     # or PORT=7777; default 6379; HOST too
//   .build/debug/SwiftExample --embedded <directory>    # the entry part on SQLiteKVCache
//
// It writes greeting, visits:* and https://example.com/ in db0, and user:1
// in the cache "sessions".
import Foundation
import KVCacheClient
import KVCacheClientEmbedded
import SQLiteKVCache

/// Keeps an HTTP response with its headers as metadata. Written once against
/// the protocol: the same code runs on the engine and on the server.
func cacheResponse(in cache: any KeyValueCache) throws {
    let url = Array("https://example.com/".utf8)
    try cache.put(key: url, storageDate: Date(timeIntervalSince1970: 1_700_000_000),
                  metadata: Array("content-type: text/html".utf8), value: Array("<p>hello</p>".utf8))
    if let entry = try cache.get(key: url) {
        print("entry: stored \(Int(entry.storageDate.timeIntervalSince1970)),",
              "metadata \"\(String(decoding: entry.metadata, as: UTF8.self))\",",
              "value \"\(String(decoding: entry.value, as: UTF8.self))\"")
    }
    try cache.delete(key: url)
    print("after delete: \(try cache.get(key: url) == nil ? "gone" : "still there")")
}

func tour(host: String, port: Int) throws {
    let client = try KVCacheClient(host: host, port: port)

    try client.set("greeting", "hello from Swift", expiry: .seconds(60))
    print("greeting: \(try client.getString("greeting") ?? "(nil)"), TTL \(try client.ttl("greeting")) s")

    // One round trip for many commands; each Pending reads its typed reply.
    var hits: [Pending<Int64>] = []
    try client.pipeline { p in
        p.del("visits:home", "visits:about")
        for page in ["home", "about", "home", "home"] { hits.append(p.incr("visits:\(page)")) }
    }
    print("pipelined counters: \(try hits.map { try $0.get() })")

    // A named cache: its own keys, its own file on the server.
    let sessions = try KVCacheClient(host: host, port: port, cache: "sessions")
    try sessions.set("user:1", "alice", expiry: .seconds(30))
    print("user:1 in sessions: \(try sessions.getString("user:1") ?? "(nil)"), in db0: \(try client.getString("user:1") ?? "(nil)")")

    // The server's errors arrive as KVCacheClientError.server with its text.
    do {
        try client.incr("greeting")
    } catch {
        print("incr of text: \(error)")
    }

    try cacheResponse(in: client)
}

let arguments = Array(CommandLine.arguments.dropFirst())
let environment = ProcessInfo.processInfo.environment
do {
    if arguments.first == "--embedded", arguments.count == 2 {
        try cacheResponse(in: SQLiteKVCache(handle: "responses", directory: arguments[1], diskCapacity: 0))
    } else {
        guard let port = Int(arguments.first ?? environment["PORT"] ?? "6379") else {
            print("usage: SwiftExample [port] | --embedded <directory>")
            exit(2)
        }
        try tour(host: environment["HOST"] ?? "127.0.0.1", port: port)
    }
} catch {
    print("error: \(error)")
    exit(1)
}
