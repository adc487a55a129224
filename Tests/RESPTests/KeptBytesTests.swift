import Testing
@testable import RESP

@Suite("Kept bytes")
struct KeptBytesTests {
    /// Any bytes come back whole: invalid UTF-8, truncated sequences,
    /// surrogates, and the UTF-8 of the private-use scalars that stand for
    /// kept bytes (U+F780...U+F7FF) all among them.
    @Test func everyByteStringComesBackWhole() {
        let samples: [[UInt8]] = [
            [], Array("plain ascii".utf8), Array("déjà vu 日本 🙂".utf8),
            [0xff, 0xfe] + Array("BAD oops".utf8),
            [0xc3], [0xe6, 0x97], [0xf0, 0x9f, 0x99], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80],
            [0xef, 0x9e, 0x80], [0xef, 0x9f, 0xbf], Array("x\u{F7FF}y\u{F700}z".utf8),
        ]
        var generator = SystemRandomNumberGenerator()
        let random = (0..<500).map { _ in (0..<Int.random(in: 0..<24, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        for bytes in samples + random {
            #expect(String(keepingBytes: bytes).keptBytes == bytes, "\(bytes)")
        }
    }

    /// Valid UTF-8 is the same text as `String(decoding:as:)` gives.
    @Test func validTextIsUnchanged() {
        for text in ["", "ERR syntax error", "déjà vu 日本 🙂", "\u{F6FF}\u{F800}"] {
            #expect(String(keepingBytes: Array(text.utf8)) == text)
            #expect(text.keptBytes == Array(text.utf8))
        }
    }

    /// An error reply carries the kept bytes themselves, newlines still made spaces.
    @Test func anErrorReplySendsTheBytes() {
        var out: [UInt8] = []
        RESPEncoder.error(String(keepingBytes: [0xff, 0xfe, 0x42, 0x0a, 0x43]), into: &out)
        #expect(out == [UInt8(ascii: "-"), 0xff, 0xfe, 0x42, 0x20, 0x43, 0x0d, 0x0a])
    }
}
