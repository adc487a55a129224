// Measures the SQLiteKVCache library alone: puts and gets per second at a
// given number of entries, printed as one JSON line per measurement, the
// same shape as bench/engine/ceiling.c prints for the C ceiling.
//
//   kvcache-bench --entries N --mode put1|put1000|get|get-tier [--ops M] [--dir D]
import Foundation
import SQLiteKVCache

var entries = 10_000
var mode = "put1000"
var ops: Int?
var directory = FileManager.default.temporaryDirectory.path + "/kvcache-bench-\(getpid())"
let usage = "usage: kvcache-bench [--entries N] [--mode put1|put1000|get|get-tier] [--ops M] [--dir D]\n"

func usageError(_ message: String) -> Never {
    FileHandle.standardError.write(Data("kvcache-bench: \(message)\n\(usage)".utf8))
    exit(2)
}

var args = CommandLine.arguments.dropFirst()
while let flag = args.popFirst() {
    if flag == "--help" || flag == "-h" {
        print(usage, terminator: "")
        exit(0)
    }
    guard let value = args.popFirst() else { usageError("\(flag) needs a value") }
    switch flag {
    case "--entries":
        guard let number = Int(value) else { usageError("--entries needs a number, got '\(value)'") }
        entries = number
    case "--mode": mode = value
    case "--ops":
        guard let number = Int(value) else { usageError("--ops needs a number, got '\(value)'") }
        ops = number
    case "--dir": directory = value
    default: usageError("unknown option \(flag)")
    }
}
guard ["put1", "put1000", "get", "get-tier"].contains(mode) else { usageError("unknown mode '\(mode)'") }

func key(_ n: Int) -> [UInt8] { Array("key:\(n)".utf8) }
let value = [UInt8](repeating: 0x61, count: 100)

let tier = mode == "get-tier" ? 64 << 20 : 0
let cache = SQLiteKVCache(handle: "bench", directory: directory, configuration: .init(memoryTierBytes: tier))
try cache.clear()

// Populate N entries in batches of 1000.
var n = 0
while n < entries {
    try cache.beginBatch()
    for _ in 0..<min(1000, entries - n) {
        try cache.put(key: key(n), storageDate: Date(), metadata: [], value: value)
        n += 1
    }
    try cache.commitBatch()
}

/// xorshift64*, seeded as ceiling.c's: both sides draw the same key
/// sequence, and no system call per draw (SystemRandomNumberGenerator makes
/// one, which was a visible share of a get).
struct XorShift64Star: RandomNumberGenerator {
    var state: UInt64 = 88_172_645_463_325_252
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
}
var generator = XorShift64Star()
@MainActor func randomKey() -> Int { Int(generator.next() % UInt64(entries)) }
let count: Int
let start = DispatchTime.now().uptimeNanoseconds
switch mode {
case "put1":
    count = ops ?? 5_000
    for _ in 0..<count {
        try cache.put(key: key(randomKey()), storageDate: Date(), metadata: [], value: value)
    }
case "put1000":
    count = ops ?? 100_000
    var done = 0
    while done < count {
        try cache.beginBatch()
        for _ in 0..<min(1000, count - done) {
            try cache.put(key: key(randomKey()), storageDate: Date(), metadata: [], value: value)
            done += 1
        }
        try cache.commitBatch()
    }
case "get", "get-tier":
    count = ops ?? 200_000
    for _ in 0..<count {
        guard try cache.get(key: key(randomKey())) != nil else { fatalError("missing key") }
    }
default:
    fatalError("unknown mode \(mode)")
}
let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
print("{\"impl\":\"swift\",\"mode\":\"\(mode)\",\"entries\":\(entries),\"ops\":\(count),\"seconds\":\(seconds),\"ops_per_sec\":\(Double(count) / seconds)}")
cache.close()
try? FileManager.default.removeItem(atPath: directory)
