import Foundation
import RESP

/// A command and how to read its reply: the one definition behind each
/// typed call of `KVCacheClient` and of `Pipeline`.
struct Call<T> {
    let arguments: [[UInt8]]
    let decodeValue: (RESPValue) throws(KVCacheClientError) -> T

    init(_ arguments: [[UInt8]], _ decode: @escaping (RESPValue) throws(KVCacheClientError) -> T) {
        self.arguments = arguments
        self.decodeValue = decode
    }

    init(_ name: String, _ arguments: [[UInt8]], _ decode: @escaping (RESPValue) throws(KVCacheClientError) -> T) {
        self.init([Array(name.utf8)] + arguments, decode)
    }

    /// The typed result; an error reply throws `.server`.
    func decode(_ reply: RESPValue) throws(KVCacheClientError) -> T {
        if case .error(let text) = reply { throw .server(text) }
        return try decodeValue(reply)
    }
}

/// Reading replies into Swift types. RESP3 forms are accepted too, for a
/// connection switched with `HELLO 3`.
enum Decode {
    static func violation(_ expected: String, _ reply: RESPValue) -> KVCacheClientError {
        .protocolViolation("expected \(expected), got \(reply)")
    }

    static func ok(_ reply: RESPValue) throws(KVCacheClientError) {
        guard case .simpleString = reply else { throw violation("a status reply", reply) }
    }

    /// `+OK`, or nil for a write a condition skipped (`SET … NX`).
    static func okOrNil(_ reply: RESPValue) throws(KVCacheClientError) -> Bool {
        if reply.isNull { return false }
        try ok(reply)
        return true
    }

    static func status(_ reply: RESPValue) throws(KVCacheClientError) -> String {
        switch reply {
        case .simpleString(let text): return text
        case .bulk(let bytes?), .verbatim(_, let bytes): return String(decoding: bytes, as: UTF8.self)
        default: throw violation("a status reply", reply)
        }
    }

    static func integer(_ reply: RESPValue) throws(KVCacheClientError) -> Int64 {
        switch reply {
        case .integer(let n): return n
        case .boolean(let b): return b ? 1 : 0
        default: throw violation("an integer", reply)
        }
    }

    static func int(_ reply: RESPValue) throws(KVCacheClientError) -> Int {
        Int(try integer(reply))
    }

    static func bool(_ reply: RESPValue) throws(KVCacheClientError) -> Bool {
        try integer(reply) != 0
    }

    static func double(_ reply: RESPValue) throws(KVCacheClientError) -> Double {
        switch reply {
        case .double(let d): return d
        case .bulk(let bytes?):
            guard let d = Double(String(decoding: bytes, as: UTF8.self)) else { throw violation("a number", reply) }
            return d
        default: throw violation("a number", reply)
        }
    }

    static func bytes(_ reply: RESPValue) throws(KVCacheClientError) -> [UInt8] {
        switch reply {
        case .bulk(let bytes?), .verbatim(_, let bytes): return bytes
        case .simpleString(let text): return Array(text.utf8)
        default: throw violation("a bulk string", reply)
        }
    }

    static func optionalBytes(_ reply: RESPValue) throws(KVCacheClientError) -> [UInt8]? {
        reply.isNull ? nil : try bytes(reply)
    }

    static func text(_ reply: RESPValue) throws(KVCacheClientError) -> String? {
        try optionalBytes(reply).map { String(decoding: $0, as: UTF8.self) }
    }

    static func list(_ reply: RESPValue) throws(KVCacheClientError) -> [RESPValue] {
        switch reply {
        case .array(let items?), .set(let items): return items
        default: throw violation("an array", reply)
        }
    }

    static func bytesList(_ reply: RESPValue) throws(KVCacheClientError) -> [[UInt8]] {
        var result: [[UInt8]] = []
        for item in try list(reply) { result.append(try bytes(item)) }
        return result
    }

    static func optionalBytesList(_ reply: RESPValue) throws(KVCacheClientError) -> [[UInt8]?] {
        var result: [[UInt8]?] = []
        for item in try list(reply) { result.append(try optionalBytes(item)) }
        return result
    }

    static func scan(_ reply: RESPValue) throws(KVCacheClientError) -> (cursor: UInt64, keys: [[UInt8]]) {
        let items = try list(reply)
        guard items.count == 2, let text = items[0].string, let cursor = UInt64(text) else {
            throw violation("[cursor, keys]", reply)
        }
        return (cursor, try bytesList(items[1]))
    }

    static func entry(_ reply: RESPValue) throws(KVCacheClientError) -> KVCacheClient.Entry? {
        if reply.isNull { return nil }
        let items = try list(reply)
        guard items.count == 4 else { throw violation("[key, storage-date-ms, metadata, value]", reply) }
        let milliseconds = try integer(items[1])
        return KVCacheClient.Entry(key: try bytes(items[0]),
                                   storageDate: Date(timeIntervalSince1970: Double(milliseconds) / 1000),
                                   metadata: try bytes(items[2]), value: try bytes(items[3]))
    }
}

/// The typed commands: arguments and reply type, in Redis's order.
enum Commands {
    private static func arg(_ value: some KVCacheArgument) -> [UInt8] { value.kvcacheBytes }

    // MARK: Strings

    static func get(_ key: some KVCacheArgument) -> Call<[UInt8]?> {
        Call("GET", [arg(key)], Decode.optionalBytes)
    }

    static func getString(_ key: some KVCacheArgument) -> Call<String?> {
        Call("GET", [arg(key)], Decode.text)
    }

    static func set(_ key: some KVCacheArgument, _ value: some KVCacheArgument, expiry: Expiry?,
                    condition: SetCondition) -> Call<Bool> {
        var args = [arg(key), arg(value)]
        switch condition {
        case .always: break
        case .ifNotExists: args.append(Array("NX".utf8))
        case .ifExists: args.append(Array("XX".utf8))
        }
        if let expiry { args += expiry.arguments }
        return Call("SET", args, Decode.okOrNil)
    }

    static func mget<K: KVCacheArgument>(_ keys: [K]) -> Call<[[UInt8]?]> {
        Call("MGET", keys.map { $0.kvcacheBytes }, Decode.optionalBytesList)
    }

    static func mset<K: KVCacheArgument, V: KVCacheArgument>(_ pairs: [(K, V)]) -> Call<Void> {
        Call("MSET", pairs.flatMap { [arg($0.0), arg($0.1)] }, Decode.ok)
    }

    static func msetnx<K: KVCacheArgument, V: KVCacheArgument>(_ pairs: [(K, V)]) -> Call<Bool> {
        Call("MSETNX", pairs.flatMap { [arg($0.0), arg($0.1)] }, Decode.bool)
    }

    static func incr(_ key: some KVCacheArgument) -> Call<Int64> {
        Call("INCR", [arg(key)], Decode.integer)
    }

    static func incrBy(_ key: some KVCacheArgument, _ increment: Int64) -> Call<Int64> {
        Call("INCRBY", [arg(key), arg(increment)], Decode.integer)
    }

    static func incrByFloat(_ key: some KVCacheArgument, _ increment: Double) -> Call<Double> {
        Call("INCRBYFLOAT", [arg(key), Array("\(increment)".utf8)], Decode.double)
    }

    static func decr(_ key: some KVCacheArgument) -> Call<Int64> {
        Call("DECR", [arg(key)], Decode.integer)
    }

    static func decrBy(_ key: some KVCacheArgument, _ decrement: Int64) -> Call<Int64> {
        Call("DECRBY", [arg(key), arg(decrement)], Decode.integer)
    }

    static func append(_ key: some KVCacheArgument, _ value: some KVCacheArgument) -> Call<Int> {
        Call("APPEND", [arg(key), arg(value)], Decode.int)
    }

    static func strlen(_ key: some KVCacheArgument) -> Call<Int> {
        Call("STRLEN", [arg(key)], Decode.int)
    }

    static func getRange(_ key: some KVCacheArgument, _ start: Int, _ end: Int) -> Call<[UInt8]> {
        Call("GETRANGE", [arg(key), arg(start), arg(end)], Decode.bytes)
    }

    static func setRange(_ key: some KVCacheArgument, _ offset: Int, _ value: some KVCacheArgument) -> Call<Int> {
        Call("SETRANGE", [arg(key), arg(offset), arg(value)], Decode.int)
    }

    static func getDel(_ key: some KVCacheArgument) -> Call<[UInt8]?> {
        Call("GETDEL", [arg(key)], Decode.optionalBytes)
    }

    static func getEx(_ key: some KVCacheArgument, expiry: Expiry?) -> Call<[UInt8]?> {
        Call("GETEX", [arg(key)] + (expiry?.arguments ?? []), Decode.optionalBytes)
    }

    // MARK: Expiry

    private static func expiring(_ name: String, _ key: some KVCacheArgument, _ time: Int64,
                                 _ condition: ExpireCondition?) -> Call<Bool> {
        Call(name, [arg(key), arg(time)] + (condition.map { [Array($0.rawValue.utf8)] } ?? []), Decode.bool)
    }

    static func expire(_ key: some KVCacheArgument, _ seconds: Int64, _ condition: ExpireCondition?) -> Call<Bool> {
        expiring("EXPIRE", key, seconds, condition)
    }

    static func pexpire(_ key: some KVCacheArgument, _ milliseconds: Int64, _ condition: ExpireCondition?) -> Call<Bool> {
        expiring("PEXPIRE", key, milliseconds, condition)
    }

    static func expireAt(_ key: some KVCacheArgument, _ unixSeconds: Int64, _ condition: ExpireCondition?) -> Call<Bool> {
        expiring("EXPIREAT", key, unixSeconds, condition)
    }

    static func pexpireAt(_ key: some KVCacheArgument, _ unixMilliseconds: Int64, _ condition: ExpireCondition?) -> Call<Bool> {
        expiring("PEXPIREAT", key, unixMilliseconds, condition)
    }

    static func ttl(_ key: some KVCacheArgument) -> Call<Int64> {
        Call("TTL", [arg(key)], Decode.integer)
    }

    static func pttl(_ key: some KVCacheArgument) -> Call<Int64> {
        Call("PTTL", [arg(key)], Decode.integer)
    }

    static func persist(_ key: some KVCacheArgument) -> Call<Bool> {
        Call("PERSIST", [arg(key)], Decode.bool)
    }

    // MARK: Keys

    static func del<K: KVCacheArgument>(_ keys: [K]) -> Call<Int> {
        Call("DEL", keys.map { $0.kvcacheBytes }, Decode.int)
    }

    static func exists<K: KVCacheArgument>(_ keys: [K]) -> Call<Int> {
        Call("EXISTS", keys.map { $0.kvcacheBytes }, Decode.int)
    }

    static func keys(_ pattern: some KVCacheArgument) -> Call<[[UInt8]]> {
        Call("KEYS", [arg(pattern)], Decode.bytesList)
    }

    static func scan(cursor: UInt64, match: String?, count: Int?, type: String?)
        -> Call<(cursor: UInt64, keys: [[UInt8]])> {
        var args = [Array(String(cursor).utf8)]
        if let match { args += [Array("MATCH".utf8), arg(match)] }
        if let count { args += [Array("COUNT".utf8), arg(count)] }
        if let type { args += [Array("TYPE".utf8), arg(type)] }
        return Call("SCAN", args, Decode.scan)
    }

    static func rename(_ key: some KVCacheArgument, _ newKey: some KVCacheArgument) -> Call<Void> {
        Call("RENAME", [arg(key), arg(newKey)], Decode.ok)
    }

    static func renameNX(_ key: some KVCacheArgument, _ newKey: some KVCacheArgument) -> Call<Bool> {
        Call("RENAMENX", [arg(key), arg(newKey)], Decode.bool)
    }

    static func type(_ key: some KVCacheArgument) -> Call<String> {
        Call("TYPE", [arg(key)], Decode.status)
    }

    static func dbsize() -> Call<Int> {
        Call("DBSIZE", [], Decode.int)
    }

    static func flushdb() -> Call<Void> {
        Call("FLUSHDB", [], Decode.ok)
    }

    static func flushall() -> Call<Void> {
        Call("FLUSHALL", [], Decode.ok)
    }

    // MARK: Caches and connection

    static func select(_ cache: some KVCacheArgument) -> Call<Void> {
        Call("SELECT", [arg(cache)], Decode.ok)
    }

    static func ping() -> Call<String> {
        Call("PING", [], Decode.status)
    }

    static func info(_ section: String?) -> Call<String> {
        Call("INFO", section.map { [arg($0)] } ?? [], Decode.status)
    }

    // MARK: Whole entries

    static func entry(_ key: [UInt8]) -> Call<KVCacheClient.Entry?> {
        Call("KVCACHE.GET", [key], Decode.entry)
    }

    static func putEntry(_ key: [UInt8], storageDate: Date, metadata: [UInt8], value: [UInt8],
                         expiry: Expiry?) -> Call<Void> {
        let milliseconds = Int64((storageDate.timeIntervalSince1970 * 1000).rounded())
        return Call("KVCACHE.PUT", [key, arg(milliseconds), metadata, value] + (expiry?.arguments ?? []), Decode.ok)
    }

    static func raw(_ arguments: [[UInt8]]) -> Call<RESPValue> {
        Call(arguments) { reply in reply }
    }
}
