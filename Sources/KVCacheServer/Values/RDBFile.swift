import SQLiteKVCache

/// Redis's RDB file (rdb.c's rdbLoad), read whole: "REDIS" and a
/// four-digit version (at most 10, Redis 7.0's), then opcodes (AUX,
/// RESIZEDB, SELECTDB, EXPIRETIME(_MS), IDLE, FREQ, FUNCTION2) and keys
/// with their values in RDB encoding (RDB.loadValue), then EOF and, from
/// version 5, a CRC64 of everything before it (0: not computed).
struct RDBFile {
    struct Entry {
        var db: Int
        var key: [UInt8]
        var kind: ValueKind
        var value: [UInt8]
        var expiresAt: Int64?
    }

    /// Why a file cannot be loaded, with the lines Redis logs for it.
    struct Failure: Error {
        var lines: [String]
    }

    var entries: [Entry] = []
    /// Keys holding an empty collection, skipped as Redis skips them.
    var emptyKeys: [[UInt8]] = []
    /// Function libraries' code (FUNCTION2 records), in the file's order.
    var functions: [[UInt8]] = []
    /// The database the replication stream has selected where the file
    /// was made (the `repl-stream-db` aux field of a replica's snapshot).
    var streamDatabase: Int?

    /// Reads `bytes` as an RDB file.
    /// - Parameter checksum: whether to check the CRC64 (`rdbchecksum yes`).
    /// - Throws: `Failure` for a file that is not an RDB, is of a later
    ///   version, is cut short, fails its checksum or holds a value that
    ///   fails Redis's checks.
    init(_ bytes: [UInt8], limits: EncodingLimits, checksum: Bool) throws(Failure) {
        guard bytes.count >= 9, bytes.starts(with: Array("REDIS".utf8)),
              let version = Int(String(decoding: bytes[5..<9], as: UTF8.self)) else {
            throw Failure(lines: ["Wrong signature trying to load DB from file"])
        }
        guard (1...Int(RDB.version)).contains(version) else {
            throw Failure(lines: ["Can't handle RDB format version \(version)"])
        }
        var reader = RDBReader(bytes: bytes, end: bytes.count)
        reader.index = 9
        var db = 0
        var expiresAt: Int64?
        func short() -> Failure { Failure(lines: ["Short read or OOM loading DB. Unrecoverable error, aborting now."]) }
        func corrupt(_ reason: String, at offset: Int) -> Failure {
            Failure(lines: ["Internal error in RDB reading offset \(offset), function at rdb.c:0 -> \(reason)",
                            "--- RDB ERROR DETECTED ---", "[offset \(offset)] \(reason)"])
        }
        do {
            while true {
                let opcode = try reader.byte()
                switch opcode {
                case 0xFA:  // AUX: a field and its value
                    let field = try reader.string()
                    let value = try reader.string()
                    if field == Array("repl-stream-db".utf8) { streamDatabase = Int(String(decoding: value, as: UTF8.self)) }
                case 0xFB:  // RESIZEDB: sizes of the next database's tables
                    _ = try reader.length()
                    _ = try reader.length()
                case 0xFE:  // SELECTDB
                    db = try reader.length()
                case 0xFC:  // EXPIRETIME_MS: 8 bytes, little endian
                    expiresAt = try reader.millisecondTime()
                case 0xFD:  // EXPIRETIME: seconds in 4 bytes, little endian
                    expiresAt = Int64(try reader.littleEndian(4)) * 1000
                case 0xF9:  // IDLE (LRU)
                    _ = try reader.length()
                case 0xF8:  // FREQ (LFU)
                    _ = try reader.byte()
                case 0xF5:  // FUNCTION2: a library's code
                    functions.append(try reader.string())
                case 0xF7, 0xF6:
                    throw RDB.BadFormat(reason: opcode == 0xF7 ? "The RDB file contains AUX module data I can't load"
                                                               : "Pre-release function format not supported")
                case 0xFF:  // EOF, then the checksum
                    if version >= 5 {
                        let end = reader.index
                        let stored = try reader.littleEndian(8)
                        if checksum && stored != 0 {
                            let computed = RDB.crc64(bytes[..<end])
                            guard computed == stored else {
                                throw Failure(lines: [
                                    "Wrong RDB checksum expected: (\(hex(stored))) got (\(hex(computed))). Aborting now.",
                                    "Internal error in RDB reading offset 0, function at rdb.c:0 -> RDB CRC error"])
                            }
                        }
                    }
                    return
                default:
                    let key = try reader.string()
                    let start = reader.index
                    do throws(RDB.BadFormat) {
                        let (kind, value) = try RDB.loadValue(&reader, type: opcode, limits: limits)
                        entries.append(Entry(db: db, key: key, kind: kind, value: value, expiresAt: expiresAt))
                    } catch {
                        if error.shortRead { throw short() }
                        guard error.emptyKey else {
                            throw corrupt(error.reason.isEmpty ? "Bad data format" : error.reason, at: start)
                        }
                        emptyKeys.append(key)
                    }
                    expiresAt = nil
                }
            }
        } catch let failure as Failure {
            throw failure
        } catch let bad as RDB.BadFormat {
            throw bad.shortRead || bad.reason.isEmpty ? short() : corrupt(bad.reason, at: reader.index)
        } catch {
            throw short()
        }
    }
}

private func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 16 - digits.count)) + digits
}
