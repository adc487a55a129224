import RESP

/// Feeds arbitrary bytes to the request parser in arbitrary chunks (the first
/// byte picks the chunk size), checking its contract: it never crashes, the
/// index never moves backwards or past the end, and every request it returns
/// is non-empty.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRESP(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let chunk = Int(first % 17) + 1
    var parser = RequestParser(limits: RequestLimits(maxMultibulkCount: 1024, maxBulkLength: 4096, maxInlineLength: 512))
    var pending: [UInt8] = []
    var offset = 1
    while offset < bytes.count {
        let end = min(bytes.count, offset + chunk)
        pending.append(contentsOf: bytes[offset..<end])
        offset = end
        var index = 0
        var failed = false
        pending.withUnsafeBytes { raw in
            while true {
                let before = index
                do {
                    guard let request = try parser.next(raw, index: &index) else { break }
                    precondition(!request.isEmpty, "empty request returned")
                } catch {
                    failed = true
                    break
                }
                precondition(index >= before && index <= raw.count, "index out of bounds")
            }
        }
        if failed { return 0 }  // a protocol error ends the connection
        pending.removeFirst(index)
    }
    return 0
}
// SwiftPM links an executable's entry point as `FuzzRESP_main`; with
// -parse-as-library there is none, so hand control to libFuzzer's driver.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> Int32) -> Int32

@_cdecl("FuzzRESP_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzRESP)
}
