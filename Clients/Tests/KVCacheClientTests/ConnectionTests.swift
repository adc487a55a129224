import Foundation
import KVCacheClient
import RESP
import Testing

/// Connecting, selecting, reconnecting and the errors of the wire.
@Suite("Connection")
struct ConnectionTests {
    @Test func connectsAndPings() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.ping() == "PONG")
    }

    @Test func resolvesLocalhost() throws {
        let server = try TestServer()
        let client = try KVCacheClient(host: "localhost", port: server.port)
        #expect(try client.ping() == "PONG")
    }

    @Test func selectsTheConfiguredCacheOnConnecting() throws {
        let server = try TestServer()
        let sessions = try server.client(cache: "sessions")
        try sessions.set("k", "in sessions")
        let db0 = try server.client()
        #expect(try db0.get("k") == nil)
        #expect(try server.client(cache: "sessions").getString("k") == "in sessions")
    }

    @Test func anInvalidCacheNameFailsTheInitWithTheServersText() throws {
        let server = try TestServer()
        #expect(throws: KVCacheClientError.server("ERR invalid cache name 'Bad Name!': use 1 to 64 of a-z 0-9 . _ - or a DB index")) {
            _ = try server.client(cache: "Bad Name!")
        }
    }

    @Test func nobodyListeningIsConnectionFailed() throws {
        let port = try freePort()
        #expect {
            _ = try KVCacheClient(port: port)
        } throws: { error in
            guard case KVCacheClientError.connectionFailed(let reason) = error else { return false }
            return reason.contains("Connection refused")
        }
    }

    @Test func anUnknownHostIsConnectionFailed() throws {
        #expect {
            _ = try KVCacheClient(host: "no-such-host.invalid", port: 6379)
        } throws: { error in
            guard case KVCacheClientError.connectionFailed(let reason) = error else { return false }
            return reason.contains("cannot resolve")
        }
    }

    @Test func aServerErrorCarriesItsTextAndCode() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.set("s", "not a number")
        #expect(throws: KVCacheClientError.server("ERR value is not an integer or out of range")) {
            try client.incr("s")
        }
        do {
            try client.command("NOSUCHCOMMAND")
            Issue.record("an unknown command succeeded")
        } catch {
            #expect(error.serverErrorCode == "ERR")
            #expect(error.description.hasPrefix("ERR unknown command 'NOSUCHCOMMAND'"))
        }
        #expect(try client.ping() == "PONG")  // a server error leaves the connection usable
    }

    @Test func rawCommandReturnsTheReply() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.command([Array("SET".utf8), [0, 1, 2], [255, 0]]) == .simpleString("OK"))
        #expect(try client.command([Array("GET".utf8), [0, 1, 2]]) == .bulk([255, 0]))
        #expect(try client.command("CONFIG", "GET", "databases") == .array([.bulk(Array("databases".utf8)), .bulk(Array("16".utf8))]))
    }

    @Test func aSlowReplyTimesOutAndTheNextCallReconnects() throws {
        let server = try TestServer(arguments: ["--enable-debug-command", "yes"])
        let client = try KVCacheClient(configuration: .init(port: server.port, cache: "sessions", timeout: .milliseconds(500)))
        try client.set("k", "v")
        #expect(throws: KVCacheClientError.timedOut) {
            try client.command("DEBUG", "SLEEP", "2")
        }
        Thread.sleep(forTimeInterval: 2)  // the server's loop sleeps: wait it out
        #expect(try client.getString("k") == "v")  // a new connection, in the same cache
    }

    @Test func aRestartedServerIsReconnectedToInTheSelectedCache() throws {
        let server = try TestServer()
        let client = try server.client()
        try client.select("sessions")
        try client.set("k", "v")
        server.stop()
        try server.start()
        #expect(try client.getString("k") == "v")
    }

    @Test func anIdleConnectionClosedByTheServerIsReplaced() throws {
        let server = try TestServer(arguments: ["--timeout", "1"])
        let client = try server.client(cache: "3")
        try client.set("k", "v")
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try client.getString("k") == "v")
    }

    @Test func quitThenTheNextCallReconnects() throws {
        let server = try TestServer()
        let client = try server.client()
        #expect(try client.command("QUIT") == .simpleString("OK"))
        #expect(try client.ping() == "PONG")
    }

    @Test func closeMakesLaterCallsThrowConnectionClosed() throws {
        let server = try TestServer()
        let client = try server.client()
        client.close()
        #expect(throws: KVCacheClientError.connectionClosed) { try client.ping() }
    }

    @Test func aServerClosingMidCallIsConnectionClosed() throws {
        let fake = try FakeServer(reply: nil, thenClose: true)
        let client = try KVCacheClient(port: fake.port)
        #expect(throws: KVCacheClientError.connectionClosed) { try client.get("k") }
    }

    @Test func bytesThatAreNotRESPAreAProtocolViolation() throws {
        let fake = try FakeServer(reply: Array("!what\r\n".utf8), thenClose: false)
        let client = try KVCacheClient(port: fake.port)
        #expect {
            try client.get("k")
        } throws: { error in
            guard case KVCacheClientError.protocolViolation = error else { return false }
            return true
        }
    }

    @Test func aReplyOfTheWrongTypeIsAProtocolViolation() throws {
        let fake = try FakeServer(reply: Array(":7\r\n".utf8), thenClose: false)
        let client = try KVCacheClient(port: fake.port)
        #expect(throws: KVCacheClientError.protocolViolation("expected a bulk string, got :7")) {
            try client.get("k")
        }
    }

    @Test func clientNameIsSetOnConnecting() throws {
        let server = try TestServer()
        let client = try KVCacheClient(configuration: .init(port: server.port, clientName: "worker-1"))
        #expect(try client.command("CLIENT", "GETNAME") == .bulk(Array("worker-1".utf8)))
    }

    @Test func threadsShareOneClient() async throws {
        let server = try TestServer()
        let client = try server.client()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask {
                    for i in 0..<200 { try client.incr("counter"); try client.set("t\(t):\(i)", i) }
                }
            }
            try await group.waitForAll()
        }
        #expect(try client.getString("counter") == "1600")
        #expect(try client.dbsize() == 1601)
    }
}
