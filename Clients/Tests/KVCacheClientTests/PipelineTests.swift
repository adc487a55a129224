import Foundation
import KVCacheClient
import RESP
import Testing

/// Many commands in one write, replies in order.
@Suite("Pipelines")
struct PipelineTests {
    @Test func repliesComeBackInOrder() throws {
        let server = try TestServer()
        let client = try server.client()
        let replies = try client.pipeline { p in
            p.set("a", "1")
            p.get("a")
            p.incr("a")
            p.get("missing")
        }
        #expect(replies == [.simpleString("OK"), .bulk(Array("1".utf8)), .integer(2), .bulk(nil)])
    }

    @Test func pendingRepliesAreTyped() throws {
        let server = try TestServer()
        let client = try server.client()
        var counter: Pending<Int64>?
        var value: Pending<String?>?
        var size: Pending<Int>?
        try client.pipeline { p in
            p.set("name", "alice", expiry: .seconds(60))
            counter = p.incrBy("visits", 5)
            value = p.getString("name")
            size = p.dbsize()
        }
        #expect(try counter?.get() == 5)
        #expect(try value?.get() == "alice")
        #expect(try size?.get() == 2)
    }

    @Test func anErrorReplyStaysInItsPlace() throws {
        let server = try TestServer()
        let client = try server.client()
        var bad: Pending<Int64>?
        var after: Pending<String?>?
        let replies = try client.pipeline { p in
            p.set("s", "text")
            bad = p.incr("s")
            after = p.getString("s")
        }
        #expect(replies[1] == .error("ERR value is not an integer or out of range"))
        #expect(throws: KVCacheClientError.server("ERR value is not an integer or out of range")) { try bad?.get() }
        #expect(try after?.get() == "text")
    }

    @Test func aPipelineBuiltStepByStepRuns() throws {
        let server = try TestServer()
        let client = try server.client()
        let pipeline = Pipeline()
        for i in 0..<10 { pipeline.set("k\(i)", i) }
        let total = pipeline.command("DBSIZE")
        #expect(pipeline.count == 11)
        try client.execute(pipeline)
        #expect(try total.get() == .integer(10))
    }

    @Test func anEmptyPipelineSendsNothing() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.pipeline { _ in }.isEmpty)
    }

    @Test func aHugePipelineNeitherDeadlocksNorLosesReplies() throws {
        let server = try TestServer()
        let client = try server.client()
        let value = [UInt8](repeating: UInt8(ascii: "x"), count: 1000)
        try client.pipeline { p in
            for i in 0..<20_000 { p.set("k\(i)", value) }
        }
        // 20 MB of replies come back while requests are still being written.
        var reads: [Pending<[UInt8]?>] = []
        try client.pipeline { p in
            for i in 0..<20_000 { reads.append(p.get("k\(i)")) }
        }
        #expect(try reads.allSatisfy { try $0.get() == value })
    }

    @Test func selectInAPipelineIsKeptForReconnecting() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.pipeline { p in
            p.select("sessions")
            p.set("k", "v")
        }
        server.stop()
        try server.start()
        #expect(try client.getString("k") == "v")
    }

    @Test func entriesPipelineToo() throws {
        let server = try TestServer()
        let client = try server.client()
        let date = Date(timeIntervalSince1970: 1_700_000_000.123)
        var entry: Pending<KVCacheClient.Entry?>?
        try client.pipeline { p in
            p.put(key: Array("k".utf8), storageDate: date, metadata: Array("m".utf8), value: Array("v".utf8))
            entry = p.get(key: Array("k".utf8))
        }
        #expect(try entry?.get() == KVCacheClient.Entry(key: Array("k".utf8), storageDate: date,
                                                         metadata: Array("m".utf8), value: Array("v".utf8)))
    }
}
