import Foundation
import RESP
@testable import KVCacheServer

/// Drives the command layer with the requests parsed from arbitrary bytes,
/// against a real server instance (no listener) over a temporary directory:
/// no input may crash it, and every request must get exactly one reply.
nonisolated(unsafe) private var harness: Server.FuzzHarness?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCommands(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    if harness == nil {
        let directory = FileManager.default.temporaryDirectory.path + "/kvcache-fuzz-\(getpid())"
        harness = try! Server.FuzzHarness(directory: directory)
    }
    var parser = RequestParser(limits: RequestLimits(maxMultibulkCount: 64, maxBulkLength: 4096, maxInlineLength: 1024))
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var requests: [[[UInt8]]] = []
    bytes.withUnsafeBytes { raw in
        var index = 0
        while let request = try? parser.next(raw, index: &index) { requests.append(request) }
    }
    for request in requests.prefix(32) {
        let replies = harness!.run(request)
        precondition(replies == 1, "\(replies) replies to one request")
    }
    harness!.endIteration()
    return 0
}
// SwiftPM links an executable's entry point as `FuzzCommands_main`; with
// -parse-as-library there is none, so hand control to libFuzzer's driver.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> Int32) -> Int32

@_cdecl("FuzzCommands_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzCommands)
}
