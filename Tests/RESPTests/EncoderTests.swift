import Testing
@testable import RESP

@Suite("Encoder")
struct EncoderTests {
    func encoded(_ body: (inout [UInt8]) -> Void) -> String {
        var out: [UInt8] = []
        body(&out)
        return String(decoding: out, as: UTF8.self)
    }

    @Test func simpleStringAndError() {
        #expect(encoded { RESPEncoder.simpleString("OK", into: &$0) } == "+OK\r\n")
        #expect(encoded { RESPEncoder.error("ERR bad\r\nthing", into: &$0) } == "-ERR bad  thing\r\n")
    }

    @Test(arguments: [(Int64(0), ":0\r\n"), (7, ":7\r\n"), (-7, ":-7\r\n"), (1234567890, ":1234567890\r\n"),
                      (Int64.max, ":9223372036854775807\r\n"), (Int64.min, ":-9223372036854775808\r\n")])
    func integers(value: Int64, text: String) {
        #expect(encoded { RESPEncoder.integer(value, into: &$0) } == text)
    }

    @Test func bulkNullAndEmptyAreDistinct() {
        #expect(encoded { RESPEncoder.bulk(Array("hi".utf8), into: &$0) } == "$2\r\nhi\r\n")
        #expect(encoded { RESPEncoder.bulk([UInt8](), into: &$0) } == "$0\r\n\r\n")
        #expect(encoded { RESPEncoder.null(into: &$0) } == "$-1\r\n")
        #expect(encoded { RESPEncoder.optionalBulk(nil, into: &$0) } == "$-1\r\n")
    }

    /// The in-place bulk (GET's reply) writes what the generic one writes,
    /// whatever the length's digit count; OK from the stack is "+OK\r\n".
    @Test(arguments: [0, 1, 9, 10, 99, 100, 1000, 123_456])
    func bulkOfBytesInPlace(length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var generic: [UInt8] = Array("prefix".utf8), inPlace: [UInt8] = Array("prefix".utf8)
        RESPEncoder.bulk(payload, into: &generic)
        payload.withUnsafeBytes { RESPEncoder.bulk($0, into: &inPlace) }
        #expect(inPlace == generic)
        #expect(encoded { RESPEncoder.ok(into: &$0) } == "+OK\r\n")
    }

    @Test func arrays() {
        #expect(encoded { RESPEncoder.bulkArray([Array("a".utf8), []], into: &$0) } == "*2\r\n$1\r\na\r\n$0\r\n\r\n")
        #expect(encoded { RESPEncoder.nullArray(into: &$0) } == "*-1\r\n")
        #expect(encoded { RESPEncoder.arrayHeader(0, into: &$0) } == "*0\r\n")
    }

    @Test func valuesRoundTripThroughTheReplyParser() throws {
        let value = RESPValue.array([.simpleString("OK"), .error("ERR x"), .integer(-5), .bulk(nil), .bulk([]),
                                     .bulk(Array("b\r\nin".utf8)), .array(nil), .array([.integer(1)])])
        var out: [UInt8] = []
        value.encode(into: &out)
        for cut in 0..<out.count {
            var index = 0
            #expect(try ReplyParser.parse(Array(out[..<cut]), index: &index) == nil)
            #expect(index == 0)
        }
        var index = 0
        #expect(try ReplyParser.parse(out, index: &index) == value)
        #expect(index == out.count)
    }
}
