#if canImport(Glibc)
import Glibc
#endif
import Foundation
import RESP

/// A function of a library (Redis's functionInfo).
struct LibraryFunction {
    let name: String
    let description: [UInt8]?
    let flags: ScriptFlags
    /// The callback's reference in the functions interpreter's registry.
    let ref: Int32
    let library: String
}

/// A library: its name, its whole code (shebang included), its functions
/// in the order they were registered.
final class FunctionLibrary {
    let name: String
    let code: [UInt8]
    private(set) var functions: [String: LibraryFunction] = [:]
    private(set) var order: [String] = []

    init(name: String, code: [UInt8]) {
        self.name = name
        self.code = code
    }

    func add(_ function: LibraryFunction) {
        functions[function.name] = function
        order.append(function.name)
    }

    var orderedFunctions: [LibraryFunction] { order.compactMap { functions[$0] } }
}

/// The loaded libraries and their functions by name (Redis's functionsLibCtx).
struct FunctionLibraries {
    private(set) var libraries: [String: FunctionLibrary] = [:]
    /// Libraries in the order they were loaded.
    private(set) var order: [String] = []
    /// By name lowercased: FCALL finds a function whatever its case, and
    /// two libraries cannot hold names differing only in case (Redis's
    /// functionDictType compares without case; library names keep theirs).
    private(set) var functions: [String: LibraryFunction] = [:]

    var functionCount: Int { functions.count }
    var all: [FunctionLibrary] { order.compactMap { libraries[$0] } }

    func function(named name: [UInt8]) -> LibraryFunction? { functions[String(decoding: name.map(asciiLower), as: UTF8.self)] }

    /// The function whose name equals `name` but for case.
    func function(named name: String) -> LibraryFunction? { functions[name.lowercased()] }

    /// Letters, digits and underscores, at least one (Redis's functionsVerifyName).
    static func isValidName(_ name: some Collection<UInt8>) -> Bool {
        !name.isEmpty && name.allSatisfy { c in
            (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: "_")
        }
    }

    mutating func link(_ library: FunctionLibrary) {
        libraries[library.name] = library
        order.append(library.name)
        for function in library.orderedFunctions { functions[function.name.lowercased()] = function }
    }

    mutating func unlink(_ name: String) {
        guard let library = libraries.removeValue(forKey: name) else { return }
        order.removeAll { $0 == name }
        for function in library.functions.keys { functions[function.lowercased()] = nil }
    }
}

/// The metadata of a library's first line: `#!<engine> name=<name>`.
struct LibraryMetadata {
    let engine: String
    let name: String
    /// The code after the first line, its newline first (line numbers kept).
    let body: [UInt8]

    /// Parses as Redis's functionExtractLibMetaData.
    init(_ code: [UInt8]) throws(ReplyError) {
        guard code.count >= 2, code[0] == UInt8(ascii: "#"), code[1] == UInt8(ascii: "!") else {
            throw ReplyError("ERR Missing library metadata")
        }
        guard let newline = code.firstIndex(of: 0x0a) else { throw ReplyError("ERR Invalid library metadata") }
        let line = Array(code[..<newline])
        guard let parts = line.withUnsafeBytes({ splitArguments($0) }), !parts.isEmpty else {
            throw ReplyError("ERR Invalid library metadata")
        }
        engine = String(decoding: parts[0].dropFirst(2), as: UTF8.self)
        var name: String?
        for part in parts.dropFirst() {
            if part.count >= 5 && part.prefix(5).map(asciiLower) == Array("name=".utf8) {
                guard name == nil else {
                    throw ReplyError("ERR Invalid metadata value, name argument was given multiple times")
                }
                name = String(decoding: part.dropFirst(5), as: UTF8.self)
                continue
            }
            throw ReplyError("ERR Invalid metadata value given: \(String(keepingBytes: part))")
        }
        guard let name else { throw ReplyError("ERR Library name was not given") }
        self.name = name
        body = Array(code[newline...])
    }
}

extension Scripting {
    /// How long FUNCTION LOAD's code may run (Redis's LOAD_TIMEOUT_MS).
    static let loadTimeoutMilliseconds = 500

    /// Compiles a library (Redis's functionsCreateWithLibraryCtx) into
    /// `target`, replacing one of the same name when `replace`.
    /// - Returns: its name.
    func createLibrary(_ code: [UInt8], replace: Bool, into target: inout FunctionLibraries, timeout: Int) throws(ReplyError)
        -> String
    {
        let metadata = try LibraryMetadata(code)
        guard FunctionLibraries.isValidName(Array(metadata.name.utf8)) else {
            throw ReplyError("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least "
                + "one character long")
        }
        guard metadata.engine.uppercased() == "LUA" else { throw ReplyError("ERR Engine '\(metadata.engine)' not found") }
        let old = target.libraries[metadata.name]
        if old != nil && !replace { throw ReplyError("ERR Library '\(metadata.name)' already exists") }
        if old != nil { target.unlink(metadata.name) }
        let library = FunctionLibrary(name: metadata.name, code: code)
        loading = library
        let failure = functionsInterpreter.loadLibrary(metadata.body, timeoutMilliseconds: timeout)
        loading = nil
        func abandon(_ error: String) -> ReplyError {
            for function in library.functions.values { functionsInterpreter.release(ref: function.ref) }
            if let old { target.link(old) }
            return ReplyError("ERR " + error)
        }
        if let failure { throw abandon(failure) }
        if library.functions.isEmpty { throw abandon("No functions registered") }
        if let clash = library.orderedFunctions.first(where: { target.function(named: $0.name) != nil }) {
            throw abandon("Function \(clash.name) already exists")
        }
        target.link(library)
        if let old { release(old) }
        return metadata.name
    }

    /// Frees a library's callbacks in the interpreter.
    func release(_ library: FunctionLibrary) {
        for function in library.functions.values { functionsInterpreter.release(ref: function.ref) }
    }

    /// FUNCTION LOAD [REPLACE] code.
    func loadLibrary(_ code: [UInt8], replace: Bool) throws(ReplyError) -> String {
        var target = libraries
        let name = try createLibrary(code, replace: replace, into: &target, timeout: Self.loadTimeoutMilliseconds)
        libraries = target
        return name
    }

    /// FUNCTION DELETE name.
    func deleteLibrary(_ name: String) throws(ReplyError) {
        guard let library = libraries.libraries[name] else { throw ReplyError("ERR Library not found") }
        libraries.unlink(name)
        release(library)
    }

    /// FUNCTION FLUSH.
    func flushLibraries() {
        for library in libraries.all { release(library) }
        libraries = FunctionLibraries()
    }

    /// FUNCTION DUMP: Redis's payload (RDB_OPCODE_FUNCTION2 and the code of
    /// each library, the RDB version, a CRC64), restorable on Redis.
    func dumpLibraries() -> [UInt8] { Self.dumpPayload(libraryCodes) }

    /// FUNCTION DUMP's payload for libraries of `codes`.
    static func dumpPayload(_ codes: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for code in codes { appendFunctionRecord(code, to: &out) }
        withUnsafeBytes(of: RDB.version.littleEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: RDB.crc64(out).littleEndian) { out.append(contentsOf: $0) }
        return out
    }

    /// Each library's code, as FUNCTION LOAD was given it.
    var libraryCodes: [[UInt8]] { libraries.all.map(\.code) }

    /// A library as an RDB holds it (RDB_OPCODE_FUNCTION2, then its code).
    static func appendFunctionRecord(_ code: [UInt8], to out: inout [UInt8]) {
        out.append(245)
        RDB.appendString(code, to: &out)
    }

    /// Replaces the libraries with those of `codes` (an RDB's, loaded as the
    /// whole dataset) and keeps them.
    /// - Throws: a library's failure to load, the libraries unchanged.
    func replaceLibraries(withCodes codes: [[UInt8]]) throws(ReplyError) {
        try restoreLibraries(Self.dumpPayload(codes), policy: .flush)
        try persistFunctions()
    }

    enum RestorePolicy { case append, replace, flush }

    /// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
    func restoreLibraries(_ payload: [UInt8], policy: RestorePolicy) throws(ReplyError) {
        guard RDB.verify(payload) else { throw ReplyError("ERR DUMP payload version or checksum are wrong") }
        var restored = FunctionLibraries()
        var reader = RDBReader(bytes: payload, end: payload.count - 10)
        func discard() { for library in restored.all { release(library) } }
        do {
            while reader.index < reader.end {
                let type = try reader.byte()
                guard type == 245 else {
                    discard()
                    throw ReplyError(type == 246 ? "ERR failed loading the given functions payload" : "ERR given type is not a function")
                }
                let code = try reader.string()
                do {
                    _ = try createLibrary(code, replace: false, into: &restored, timeout: 0)
                } catch {
                    discard()
                    throw error
                }
            }
        } catch let error as ReplyError {
            throw error
        } catch {
            discard()
            throw ReplyError("ERR failed loading the given functions payload")
        }
        switch policy {
        case .flush:
            flushLibraries()
            libraries = restored
        case .append, .replace:
            var target = libraries
            for library in restored.all {
                if let existing = target.libraries[library.name] {
                    guard policy == .replace else {
                        discard()
                        throw ReplyError("ERR Library \(library.name) already exists")
                    }
                    _ = existing
                    target.unlink(library.name)
                }
            }
            if let clash = restored.all.flatMap(\.orderedFunctions).first(where: { target.function(named: $0.name) != nil }) {
                discard()
                throw ReplyError("ERR Function \(clash.name) already exists")
            }
            for library in restored.all {
                if let replaced = libraries.libraries[library.name] { release(replaced) }
                target.link(library)
            }
            libraries = target
        }
    }

    // MARK: Kept across restarts

    /// Where the libraries are kept: FUNCTION DUMP's payload, in the data directory.
    var functionsPath: String { server.config.dir + "/functions.rdb" }

    /// Writes the libraries (a temporary file, fsync, rename, fsync of the
    /// directory), or removes the file when there are none. Called after
    /// every change, before the reply.
    /// - Throws: the write's failure, as an error reply.
    func persistFunctions() throws(ReplyError) {
        let path = functionsPath
        if libraries.all.isEmpty {
            if unlink(path) == 0 { Posix.syncDirectory(server.config.dir) }
            return
        }
        let failure = Posix.replaceFile(path, with: dumpLibraries(), temporary: path + ".tmp", syncing: server.config.dir)
        guard failure == 0 else { throw Self.persistError(failure) }
    }

    private static func persistError(_ code: Int32) -> ReplyError {
        ReplyError("ERR the functions could not be written to the data directory: \(String(cString: strerror(code)))")
    }


    /// Loads the libraries kept by an earlier run (at start-up).
    func loadPersistedFunctions() {
        guard let data = FileManager.default.contents(atPath: functionsPath) else { return }
        do {
            try restoreLibraries(Array(data), policy: .flush)
            server.logger.notice("Loaded \(libraries.all.count) function libraries from \(functionsPath)")
        } catch {
            server.logger.warning("The function libraries in \(functionsPath) could not be loaded: \(error.text)")
        }
    }
}
