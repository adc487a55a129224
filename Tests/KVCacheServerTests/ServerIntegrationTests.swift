import CSQLite
import Foundation
import RESP
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real binary over loopback, one server per test.
@Suite("Server over loopback", .serialized)
struct ServerIntegrationTests {
    @Test func setGetDelOverOwnClient() throws {
        let server = try ServerProcess()
        let c = try server.client()
        #expect(try c.call("SET", "k", "v") == .ok)
        #expect(try c.call("GET", "k") == .bulk("v"))
        #expect(try c.call("GET", "missing") == .nilBulk)
        #expect(try c.call("SET", "k2", "") == .ok)
        #expect(try c.call("GET", "k2") == .bulk(""))
        #expect(try c.call("EXISTS", "k", "k2", "nope", "k") == .integer(3))
        #expect(try c.call("DBSIZE") == .integer(2))
        #expect(try c.call("DEL", "k", "k2", "nope") == .integer(2))
        #expect(try c.call("DBSIZE") == .integer(0))
    }

    @Test func pipelinedRequestsAnswerInOrder() throws {
        let server = try ServerProcess()
        let c = try server.client()
        var batch = ""
        for i in 0..<1000 { batch += "*3\r\n$3\r\nSET\r\n$\("k\(i)".utf8.count)\r\nk\(i)\r\n$\("\(i)".utf8.count)\r\n\(i)\r\n" }
        for i in 0..<1000 { batch += "GET k\(i)\r\n" }  // inline, mixed into the same stream
        try c.send(batch)
        for _ in 0..<1000 { #expect(try c.read() == .ok) }
        for i in 0..<1000 { #expect(try c.read() == .bulk("\(i)")) }
    }

    @Test func redisCLIWorksAsUsersUseIt() throws {
        let server = try ServerProcess()
        #expect(try server.redisCLI(["SET", "greeting", "hello world"]) == "OK\n")
        #expect(try server.redisCLI(["GET", "greeting"]) == "hello world\n")
        #expect(try server.redisCLI(["DEL", "greeting", "other"]) == "1\n")
        #expect(try server.redisCLI(["SET", "a", "1"]) == "OK\n")
        #expect(try server.redisCLI(["FLUSHALL"]) == "OK\n")
        #expect(try server.redisCLI(["DBSIZE"]) == "0\n")
        let info = try server.redisCLI(["INFO"])
        #expect(info.contains("# Server"))
        #expect(info.contains("redis_version:"))
        #expect(info.contains("tcp_port:\(server.port)"))
        // Interactive start: no error about COMMAND DOCS or anything else.
        let session = try server.redisCLI([], input: "PING\nSET x 1\nGET x\n")
        #expect(session == "PONG\nOK\n1\n")
    }

    @Test func netcatInlineSession() throws {
        let server = try ServerProcess()
        let out = try run("/bin/sh", ["-c", "printf 'SET a 1\\r\\nGET a\\r\\n' | nc -q1 127.0.0.1 \(server.port)"])
        #expect(out == "+OK\r\n$1\r\n1\r\n")
    }

    @Test func namedCachesAreFilesAndIsolated() throws {
        let server = try ServerProcess()
        #expect(try server.redisCLI(["-n", "3", "SET", "k", "in-db3"]) == "OK\n")
        #expect(FileManager.default.fileExists(atPath: server.dataDirectory + "/db3.sqlite"))
        let c = try server.client()
        #expect(try c.call("SELECT", "sessions") == .ok)
        #expect(try c.call("SET", "k", "in-sessions") == .ok)
        #expect(FileManager.default.fileExists(atPath: server.dataDirectory + "/sessions.sqlite"))
        #expect(try c.call("GET", "k") == .bulk("in-sessions"))
        #expect(try c.call("SELECT", "3") == .ok)
        #expect(try c.call("GET", "k") == .bulk("in-db3"))
        #expect(try c.call("SELECT", "0") == .ok)
        #expect(try c.call("GET", "k") == .nilBulk)
        #expect(try c.call("SELECT", "SESSIONS") == .ok)
        #expect(try c.call("GET", "k") == .bulk("in-sessions"))
        #expect(try c.call("SELECT", "16") == .error("ERR DB index is out of range"))
        #expect(try c.call("SELECT", "../etc") == .error(
            "ERR invalid cache name '../etc': use 1 to 64 of a-z 0-9 . _ - or a DB index"))
        // FLUSHDB empties only the selected cache; FLUSHALL every one.
        #expect(try c.call("FLUSHDB") == .ok)
        #expect(try c.call("GET", "k") == .nilBulk)
        #expect(try c.call("SELECT", "3") == .ok)
        #expect(try c.call("GET", "k") == .bulk("in-db3"))
        #expect(try c.call("FLUSHALL") == .ok)
        #expect(try c.call("DBSIZE") == .integer(0))
    }

    @Test func flushallReachesCachesNotYetOpened() throws {
        let server = try ServerProcess()
        #expect(try server.redisCLI(["-n", "5", "SET", "k", "v"]) == "OK\n")
        try server.restart()
        // db5 exists on disk but no client has opened it since the restart.
        #expect(try server.redisCLI(["FLUSHALL"]) == "OK\n")
        #expect(try server.redisCLI(["-n", "5", "DBSIZE"]) == "0\n")
    }

    @Test func dataSurvivesARestart() throws {
        let server = try ServerProcess()
        let c = try server.client()
        for i in 0..<100 { #expect(try c.call("SET", "key:\(i)", "value:\(i)") == .ok) }
        #expect(try c.call("SELECT", "sessions") == .ok)
        #expect(try c.call("SET", "s", "1") == .ok)
        #expect(server.stop() == 0)
        try server.start()
        let d = try server.client()
        for i in 0..<100 { #expect(try d.call("GET", "key:\(i)") == .bulk("value:\(i)")) }
        #expect(try d.call("SELECT", "sessions") == .ok)
        #expect(try d.call("GET", "s") == .bulk("1"))
    }

    @Test func killNineLosesNoAcknowledgedWrite() throws {
        let server = try ServerProcess()
        let c = try server.client()
        var batch = ""
        for i in 0..<2000 { batch += "SET k\(i) v\(i)\r\n" }
        try c.send(batch)
        for _ in 0..<2000 { #expect(try c.read() == .ok) }
        // Every reply above was sent after its commit: kill without warning.
        server.stop(signal: SIGKILL)
        try server.start()
        let d = try server.client()
        #expect(try d.call("DBSIZE") == .integer(2000))
        for i in stride(from: 0, to: 2000, by: 97) { #expect(try d.call("GET", "k\(i)") == .bulk("v\(i)")) }
    }

    @Test func cleanShutdownExitsZeroAndLeavesWAL() throws {
        let server = try ServerProcess()
        #expect(try server.redisCLI(["SET", "k", "v"]) == "OK\n")
        #expect(server.stop(signal: SIGTERM) == 0)
        #expect(server.log.contains("ready to exit"))
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(server.dataDirectory + "/db0.sqlite", &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK)
        defer { sqlite3_close(db) }
        var stmt: OpaquePointer?
        sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nil)
        defer { sqlite3_finalize(stmt) }
        #expect(sqlite3_step(stmt) == SQLITE_ROW)
        #expect(String(cString: sqlite3_column_text(stmt, 0)) == "wal")
        // Checkpointed: the WAL holds nothing to replay.
        let wal = (try? FileManager.default.attributesOfItem(atPath: server.dataDirectory + "/db0.sqlite-wal")[.size] as? Int) ?? 0
        #expect(wal == 0)
    }

    @Test func sigintAlsoShutsDownCleanly() throws {
        let server = try ServerProcess()
        #expect(try server.redisCLI(["SET", "k", "v"]) == "OK\n")
        #expect(server.stop(signal: SIGINT) == 0)
        try server.start()
        #expect(try server.redisCLI(["GET", "k"]) == "v\n")
    }

    @Test func smallCacheStaysUnderCapacityOldestFirst() throws {
        let server = try ServerProcess(configText: "cache small 2kb\n")
        let c = try server.client()
        #expect(try c.call("SELECT", "small") == .ok)
        for i in 0..<100 {
            #expect(try c.call("SET", "key-\(String(format: "%03d", i))", String(repeating: "x", count: 93)) == .ok)
        }
        // Each entry is 100 bytes: 20 fit in 2048.
        #expect(try c.call("DBSIZE") == .integer(20))
        #expect(try c.call("GET", "key-079") == .nilBulk)
        #expect(try c.call("GET", "key-080") == .bulk(String(repeating: "x", count: 93)))
        #expect(try c.call("GET", "key-099") != .nilBulk)
        guard case .bulk(let info?) = try c.call("INFO", "caches") else { Issue.record("INFO failed"); return }
        let text = String(decoding: info, as: UTF8.self)
        #expect(text.contains("cache_small:keys=20,"))
        #expect(text.contains("bytes=2000,capacity=2048,policy=fifo,"))
        #expect(text.contains(",evicted=80,"))
        guard case .bulk(let stats?) = try c.call("INFO", "stats") else { Issue.record("INFO failed"); return }
        #expect(String(decoding: stats, as: UTF8.self).contains("evicted_keys:80"))
        // An entry larger than the whole cache is refused, nothing is lost.
        let reply = try c.call("SET", "huge", String(repeating: "y", count: 3000))
        #expect(reply == .error("ERR entry of 3004 bytes is larger than the cache capacity of 2048 bytes"))
        #expect(try c.call("DBSIZE") == .integer(20))
    }

    @Test func protocolErrorClosesOnlyThatClient() throws {
        let server = try ServerProcess()
        let bystander = try server.client()
        #expect(try bystander.call("SET", "k", "v") == .ok)
        let bad = try server.client()
        try bad.send("*3000000000\r\n")
        #expect(try bad.read() == .error("ERR Protocol error: invalid multibulk length"))
        #expect(bad.isClosedByServer())
        let unbalanced = try server.client()
        try unbalanced.send("SET \"a b\r\n")
        #expect(try unbalanced.read() == .error("ERR Protocol error: unbalanced quotes in request"))
        #expect(unbalanced.isClosedByServer())
        #expect(try bystander.call("GET", "k") == .bulk("v"))
    }

    @Test func unknownCommandsAndArityUseRedisTexts() throws {
        let server = try ServerProcess()
        let c = try server.client()
        #expect(try c.call("FOO", "a", "b") == .error("ERR unknown command 'FOO', with args beginning with: 'a' 'b' "))
        #expect(try c.call("GET") == .error("ERR wrong number of arguments for 'get' command"))
        #expect(try c.call("get", "a", "b") == .error("ERR wrong number of arguments for 'get' command"))
        #expect(try c.call("PiNg") == .simpleString("PONG"))
        #expect(try c.call("QUIT") == .ok)
        #expect(c.isClosedByServer())
    }

    @Test func maxclientsRefusesTheExtraClient() throws {
        let server = try ServerProcess(arguments: ["--maxclients", "2"])
        let a = try server.client()
        // Wait until the start-up probe's disconnection has been seen.
        for _ in 0..<200 {
            guard case .bulk(let list?) = try a.call("CLIENT", "LIST") else { break }
            if list.filter({ $0 == UInt8(ascii: "\n") }).count == 1 { break }
            usleep(10_000)
        }
        let b = try server.client()
        #expect(try b.call("PING") == .simpleString("PONG"))
        let c = try server.client()
        #expect(try c.read() == .error("ERR max number of clients reached"))
        #expect(c.isClosedByServer())
        #expect(try a.call("PING") == .simpleString("PONG"))
    }

    @Test func redisBenchmarkRunsWithoutErrors() throws {
        let server = try ServerProcess()
        let out = try run("/usr/bin/redis-benchmark", ["-p", "\(server.port)", "-t", "set,get", "-n", "20000",
                                                       "-c", "50", "-P", "16", "-r", "10000", "-q"])
        #expect(out.contains("SET:"))
        #expect(out.contains("GET:"))
        #expect(!out.lowercased().contains("error"))
        #expect(server.isRunning)
    }
}

@Suite("Command line")
struct CommandLineTests {
    @Test func helpAndVersion() throws {
        #expect(try run(ServerProcess.binary, ["--version"]).hasPrefix("kvcache-server v="))
        #expect(try run(ServerProcess.binary, ["--help"]).contains("Usage: kvcache-server"))
    }

    func exitStatus(_ args: [String]) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ServerProcess.binary)
        p.arguments = args
        let err = Pipe()
        p.standardError = err
        p.standardOutput = Pipe()
        try p.run()
        let data = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test func badArgumentsExitNonZeroWithAMessage() throws {
        let (status, message) = try exitStatus(["--port", "abc"])
        #expect(status != 0)
        #expect(message.contains("'port \"abc\"'"))  // the option as Redis shows it: a config line
        #expect(message.contains("integer"))
        let (status2, message2) = try exitStatus(["--no-such-thing", "1"])
        #expect(status2 != 0)
        #expect(message2.contains("Bad directive"))
        let (status3, message3) = try exitStatus(["/nonexistent/kvcache.conf"])
        #expect(status3 != 0)
        #expect(message3.contains("can't read the config file"))
        let (status4, message4) = try exitStatus(["--cache", "../evil", "10mb"])
        #expect(status4 != 0)
        #expect(message4.contains("invalid cache name"))
    }

    @Test func badConfigFileLineIsNamed() throws {
        let dir = FileManager.default.temporaryDirectory.path + "/kvcache-conf-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "# comment\nport 7000\ndefault-capacity lots\n".write(toFile: dir + "/bad.conf", atomically: true, encoding: .utf8)
        let (status, message) = try exitStatus([dir + "/bad.conf"])
        #expect(status != 0)
        #expect(message.contains("line 3"))
        #expect(message.contains("memory value"))
    }

    @Test func portInUseIsAClearStartupError() throws {
        let first = try ServerProcess()
        let (status, message) = try exitStatus(["--port", "\(first.port)", "--dir", first.directory + "/other"])
        #expect(status != 0)
        #expect(message.contains("could not listen on 127.0.0.1:\(first.port)"))
    }
}
