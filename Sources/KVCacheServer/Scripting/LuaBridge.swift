import CLuaScripting
import RESP

/// The one file where Swift meets the Lua interpreter (`kvlua`, in C):
/// the interpreter's handle, the callbacks Lua makes into the server, and
/// the buffers handed across. Unsafe pointers stay in here.
///
/// The callbacks run while Lua code runs (inside lua_pcall); they return
/// normally to C before any Lua error is raised, so no longjmp ever crosses
/// a Swift frame.
final class LuaInterpreter {
    /// What the interpreter asks of the server.
    protocol Host: AnyObject {
        /// redis.call/pcall: the reply's RESP bytes, or a script error text.
        func call(_ args: [[UInt8]], resp: Int) -> (isError: Bool, bytes: [UInt8])
        /// The count hook: whether the running script must stop.
        func interrupt() -> Bool
        /// redis.acl_check_cmd: nil for no such command, else whether allowed.
        func aclCheck(_ args: [[UInt8]]) -> Bool?
        /// redis.log.
        func log(level: Int, _ message: String)
        /// redis.register_function during FUNCTION LOAD: nil when taken, else the error.
        func registerFunction(name: [UInt8], description: [UInt8]?, flags: UInt64, ref: Int32) -> String?
    }

    private let handle: OpaquePointer
    private let box: Unmanaged<HostBox>
    let forFunctions: Bool

    /// The host, held weakly through a box the C side points at.
    private final class HostBox {
        weak var host: Host?
        /// The last reply or error handed to C (valid until the next callback).
        var out: UnsafeMutableRawPointer?
        var outCapacity = 0

        init(_ host: Host) { self.host = host }

        deinit { out.map { $0.deallocate() } }

        func hand(_ bytes: [UInt8], _ pointer: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                  _ length: UnsafeMutablePointer<Int>?) {
            if bytes.count + 1 > outCapacity {
                out?.deallocate()
                outCapacity = max(bytes.count + 1, 256)
                out = UnsafeMutableRawPointer.allocate(byteCount: outCapacity, alignment: 1)
            }
            bytes.withUnsafeBytes { out!.copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(out!), byteCount: bytes.count) }
            out!.storeBytes(of: 0, toByteOffset: bytes.count, as: UInt8.self)
            pointer?.pointee = UnsafePointer(out!.assumingMemoryBound(to: CChar.self))
            length?.pointee = bytes.count
        }
    }

    private static func box(_ ctx: UnsafeMutableRawPointer?) -> HostBox {
        Unmanaged<HostBox>.fromOpaque(ctx!).takeUnretainedValue()
    }

    private static func arguments(_ argc: Int32, _ argv: UnsafePointer<UnsafePointer<CChar>?>?,
                                  _ lens: UnsafePointer<Int>?) -> [[UInt8]] {
        (0..<Int(argc)).map { i in
            guard let start = argv?[i] else { return [] }
            return Array(UnsafeRawBufferPointer(start: start, count: lens![i]))
        }
    }

    init(forFunctions: Bool, host: Host) {
        self.forFunctions = forFunctions
        box = Unmanaged.passRetained(HostBox(host))
        var hooks = kvlua_hooks()
        hooks.call = { ctx, resp, argc, argv, lens, out, outLength in
            let box = LuaInterpreter.box(ctx)
            let args = LuaInterpreter.arguments(argc, argv, lens)
            guard let host = box.host else {
                box.hand(Array("ERR scripting is shutting down".utf8), out, outLength)
                return 1
            }
            let result = host.call(args, resp: Int(resp))
            box.hand(result.bytes, out, outLength)
            return result.isError ? 1 : 0
        }
        hooks.interrupt = { ctx in
            (LuaInterpreter.box(ctx).host?.interrupt() ?? false) ? 1 : 0
        }
        hooks.acl_check = { ctx, argc, argv, lens in
            guard let allowed = LuaInterpreter.box(ctx).host?.aclCheck(LuaInterpreter.arguments(argc, argv, lens)) else {
                return -1
            }
            return allowed ? 1 : 0
        }
        hooks.log = { ctx, level, message, length in
            let text = String(decoding: UnsafeRawBufferPointer(start: message, count: length), as: UTF8.self)
            LuaInterpreter.box(ctx).host?.log(level: Int(level), text)
        }
        hooks.register_function = { ctx, name, nameLength, desc, descLength, hasDesc, flags, ref, err in
            let box = LuaInterpreter.box(ctx)
            let nameBytes = Array(UnsafeRawBufferPointer(start: name, count: nameLength))
            let descBytes = hasDesc != 0 ? Array(UnsafeRawBufferPointer(start: desc, count: descLength)) : nil
            guard let failure = box.host?.registerFunction(name: nameBytes, description: descBytes, flags: flags, ref: ref)
            else { return 0 }
            box.hand(Array(failure.utf8), err, nil)
            return 1
        }
        handle = kvlua_new(forFunctions ? 1 : 0, &hooks, box.toOpaque())
    }

    deinit {
        kvlua_close(handle)
        box.release()
    }

    /// Calls `body` with `bytes` as C characters (never a nil pointer, NUL after the end).
    private static func withChars<R>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>, Int) -> R) -> R {
        var copy = bytes
        copy.append(0)
        return copy.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!, bytes.count) }
        }
    }

    /// Bytes the interpreter holds.
    var memory: Int { kvlua_memory(handle) }

    /// Compiles an EVAL script (its body from `skip`) as f_<sha>.
    /// - Returns: nil, or Redis's compile error.
    func compile(sha: String, body: [UInt8], skip: Int) -> String? {
        var err: UnsafeMutablePointer<CChar>?
        let failed = Self.withChars(body) { chars, count in kvlua_eval_compile(handle, sha, chars, count, skip, &err) }
        guard failed != 0 else { return nil }
        defer { kvlua_free(err) }
        return err.map { String(cString: $0) } ?? "Error compiling script"
    }

    func isDefined(sha: String) -> Bool { kvlua_eval_defined(handle, sha) != 0 }

    /// What a run produced.
    enum Outcome {
        /// RESP bytes for the caller.
        case reply([UInt8])
        /// An error reply's text; `counted` when a command's error already counted it.
        case error(String, counted: Bool)
    }

    /// Runs the EVAL script f_<sha>, or the function at `ref`.
    func run(sha: String?, ref: Int32 = -1, name: String, keys: [[UInt8]], args: [[UInt8]], callerResp: Int,
             hook: Bool) -> Outcome {
        var flat: [UInt8] = []
        flat.reserveCapacity((keys + args).reduce(0) { $0 + $1.count })
        var lengths: [Int] = []
        for item in keys + args {
            flat.append(contentsOf: item)
            lengths.append(item.count)
        }
        var reply = kvlua_reply()
        lengths.append(0)
        Self.withChars(flat) { chars, _ in
            lengths.withUnsafeBufferPointer { lens in
                kvlua_run(handle, sha ?? "", ref, name, chars, lens.baseAddress, Int32(keys.count), Int32(args.count),
                          Int32(callerResp), hook ? 1 : 0, &reply)
            }
        }
        defer { kvlua_reply_free(&reply) }
        let bytes = reply.data.map { Array(UnsafeRawBufferPointer(start: $0, count: reply.len)) } ?? []
        if reply.is_error != 0 {
            return .error(String(keepingBytes: bytes), counted: reply.ignore_stats != 0)
        }
        return .reply(bytes)
    }

    /// Runs a library's code so it registers its functions.
    /// - Returns: nil, or the error ("Error compiling function: …").
    func loadLibrary(_ code: [UInt8], timeoutMilliseconds: Int) -> String? {
        var err: UnsafeMutablePointer<CChar>?
        let failed = Self.withChars(code) { chars, count in
            kvlua_function_load(handle, chars, count, timeoutMilliseconds, &err)
        }
        guard failed != 0 else { return nil }
        defer { kvlua_free(err) }
        return err.map { String(cString: $0) } ?? "Error registering functions"
    }

    /// Frees a registered function's callback.
    func release(ref: Int32) { kvlua_unref(handle, ref) }

    /// The SHA1 of `bytes`, 40 lowercase hex digits (Redis's sha1hex).
    static func sha1Hex(_ bytes: [UInt8]) -> String {
        var hex = [CChar](repeating: 0, count: 41)
        withChars(bytes) { chars, count in kvlua_sha1hex(chars, count, &hex) }
        return String(cString: hex)
    }
}
