// swift-tools-version: 6.0
import PackageDescription

// Exclusivity is checked at run time in debug builds (every test runs with
// it) and not in release: the dynamic checks were ~5% of a pipelined GET.
let releaseSettings: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "kvcache-server",
    products: [
        .library(name: "SQLiteKVCache", targets: ["SQLiteKVCache"]),
        .library(name: "RESP", targets: ["RESP"]),
        .library(name: "KVCacheServer", targets: ["KVCacheServer"]),
        .executable(name: "kvcache-server", targets: ["kvcache-server"]),
        .executable(name: "kvcache-bench", targets: ["kvcache-bench"]),
        .library(name: "KVCacheClient", targets: ["KVCacheClient"]),
        .library(name: "KVCacheClientEmbedded", targets: ["KVCacheClientEmbedded"]),
    ],
    targets: [
        // C system libraries, seen through module maps only.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSSL", pkgConfig: "libssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLinux"),
        // Lua 5.1 with Debian's cjson and bit libraries, for scripting.
        .systemLibrary(name: "CLua", pkgConfig: "lua5.1",
                       providers: [.apt(["liblua5.1-0-dev", "lua-cjson-dev", "lua-bitop-dev"])]),
        // The Lua side of scripting, in C: a Lua error is a longjmp and must
        // never cross a Swift frame (and Redis's cmsgpack and struct libraries).
        .target(name: "CLuaScripting", dependencies: ["CLua", "CCrypto"],
                linkerSettings: [.linkedLibrary("lua5.1-cjson"), .linkedLibrary("lua5.1-bitop"), .linkedLibrary("crypto")]),

        // CRC-32C with the CPU's crc32 instruction, for the log's checksums.
        .target(name: "CChecksum"),
        // The loop's per-thread clocks (C11 thread-local storage).
        .target(name: "CThreadClock"),
        // A prefetch hint for passes over many slots (Swift has none).
        .target(name: "CPrefetch"),

        // Storage: the embeddable engine. Knows nothing of the protocol or the server.
        .target(name: "SQLiteKVCache", dependencies: ["CSQLite", "CCrypto", "CChecksum", "CPrefetch"], swiftSettings: releaseSettings),
        // Protocol: RESP parsing and encoding, no I/O.
        .target(name: "RESP", swiftSettings: releaseSettings),
        // Server: event loop, connections, command table, config, INFO.
        .target(name: "KVCacheServer", dependencies: ["SQLiteKVCache", "RESP", "CLinux", "CCrypto", "CSSL", "CLuaScripting",
                                                      "CThreadClock"],
                swiftSettings: releaseSettings),
        .executableTarget(name: "kvcache-server", dependencies: ["KVCacheServer"]),
        // The engine benchmark (bench/engine/run.py compares it with a C ceiling).
        .executableTarget(name: "kvcache-bench", dependencies: ["SQLiteKVCache"]),

        // Client: a blocking Swift client for the server, and the engine seen
        // through the client's KeyValueCache protocol. The engine and server
        // know nothing of them.
        .target(name: "KVCacheClient", dependencies: ["RESP"], path: "Clients/KVCacheClient"),
        .target(name: "KVCacheClientEmbedded", dependencies: ["KVCacheClient", "SQLiteKVCache"],
                path: "Clients/KVCacheClientEmbedded"),
        // The Swift example (README.md, "Clients and examples"), run by Tests/python/test_examples.py.
        .executableTarget(name: "SwiftExample", dependencies: ["KVCacheClient", "KVCacheClientEmbedded", "SQLiteKVCache"],
                          path: "Clients/examples/swift-example"),

        .testTarget(name: "SQLiteKVCacheTests", dependencies: ["SQLiteKVCache", "CSQLite", "CLinux"]),
        .testTarget(name: "RESPTests", dependencies: ["RESP"]),
        .testTarget(name: "KVCacheServerTests", dependencies: ["KVCacheServer", "RESP", "CSQLite"]),
        .testTarget(name: "KVCacheClientTests", dependencies: ["KVCacheClient", "KVCacheClientEmbedded", "SQLiteKVCache", "RESP"],
                    path: "Clients/Tests/KVCacheClientTests"),
    ],
    swiftLanguageModes: [.v6]
)
