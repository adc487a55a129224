#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KVCacheServer
import SQLiteKVCache

func fail(_ message: String) -> Never {
    let text = Array("kvcache-server: \(message)\n".utf8)
    _ = text.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(1)
}

let request: LaunchRequest
do {
    request = try parseCommandLine(Array(CommandLine.arguments.dropFirst()))
} catch {
    fail("\(error)\nRun 'kvcache-server --help' for usage.")
}

switch request {
case .help:
    print(usageText)
case .version:
    print("kvcache-server v=\(Server.version) redis_version=\(Server.redisVersion)")
case .checkLog(let path, let fix):
    exit(checkLog(path: path, fix: fix))
case .serve(let config):
    useOneMallocArena()
    do {
        let logger = try Logger(level: config.logLevel, path: config.logFile)
        let server = try Server(config: config, logger: logger)
        try server.run()
    } catch {
        fail("\(error)")
    }
}

/// `--check-aof [--fix] <path>`: reports each segment of the log (and cuts
/// it at the first bad record with --fix), as redis-check-aof does.
/// - Returns: the exit status: 0 when the log is whole (or was fixed), 1 otherwise.
func checkLog(path: String, fix: Bool) -> Int32 {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { fail("no such file: \(path)") }
    let directory = isDirectory.boolValue ? path : (path as NSString).deletingLastPathComponent
    var base = "appendonly.aof"
    if !isDirectory.boolValue {
        // <base>.<n>.log
        let name = (path as NSString).lastPathComponent
        let parts = name.split(separator: ".")
        if parts.count >= 3 { base = parts.dropLast(2).joined(separator: ".") }
    } else if let first = (try? FileManager.default.contentsOfDirectory(atPath: path))?.sorted().first(where: { $0.hasSuffix(".log") }) {
        let parts = first.split(separator: ".")
        if parts.count >= 3 { base = parts.dropLast(2).joined(separator: ".") }
    }
    do {
        let reports = try AppendLog.check(directory: directory.isEmpty ? "." : directory, baseName: base)
        var whole = true
        for report in reports {
            var line = "\(report.path): \(report.records) records"
            if report.records > 0 { line += ", positions \(report.firstLSN)-\(report.lastLSN)" }
            if let problem = report.problem {
                whole = false
                line += problem.torn ? ", torn last record at offset \(problem.offset) (\(problem.reason))"
                                     : ", BAD RECORD at offset \(problem.offset) (\(problem.reason))"
            } else {
                line += ", ok"
            }
            print(line)
        }
        if whole {
            print("AOF is valid")
            return 0
        }
        guard fix else {
            print("AOF is not valid: run with --fix to truncate it at the first bad record (the records after it are lost)")
            return 1
        }
        if let done = try AppendLog.fix(directory: directory.isEmpty ? "." : directory, baseName: base) { print(done) }
        print("Successfully truncated AOF")
        return 0
    } catch {
        fail("\(error)")
    }
}
