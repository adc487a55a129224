#if canImport(Glibc)
import Glibc
#endif
import KVCacheServer

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
case .serve(let config):
    do {
        let logger = try Logger(level: config.logLevel, path: config.logFile)
        let server = try Server(config: config, logger: logger)
        try server.run()
    } catch {
        fail("\(error)")
    }
}
