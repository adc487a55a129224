import RESP

/// Reply helpers: each appends one RESP value to the connection's output.
extension Connection {
    func replyOK() { output.append(contentsOf: RESPEncoder.ok) }
    func replySimple(_ text: String) { RESPEncoder.simpleString(text, into: &output) }
    func replyError(_ error: ReplyError) { RESPEncoder.error(error.text, into: &output) }
    func replyInteger(_ value: Int) { RESPEncoder.integer(value, into: &output) }
    func replyInteger(_ value: Int64) { RESPEncoder.integer(value, into: &output) }
    func replyBulk(_ bytes: [UInt8]) { RESPEncoder.bulk(bytes, into: &output) }
    func replyBulk(_ text: String) { RESPEncoder.bulk(text, into: &output) }
    func replyOptionalBulk(_ bytes: [UInt8]?) { RESPEncoder.optionalBulk(bytes, into: &output) }
    func replyNull() { RESPEncoder.null(into: &output) }
    func replyNullArray() { RESPEncoder.nullArray(into: &output) }
    func replyArrayHeader(_ count: Int) { RESPEncoder.arrayHeader(count, into: &output) }
    func replyBulkArray(_ items: [[UInt8]]) { RESPEncoder.bulkArray(items, into: &output) }
    func reply(_ value: RESPValue) { value.encode(into: &output) }
}
