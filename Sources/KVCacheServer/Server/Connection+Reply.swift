import RESP

/// Reply helpers: each appends one value to the connection's output, in the
/// protocol version the client chose with HELLO (2 unless it asked for 3).
extension Connection {
    func replyOK() { RESPEncoder.ok(into: &output) }
    func replySimple(_ text: String) { RESPEncoder.simpleString(text, into: &output) }
    func replyError(_ error: ReplyError) { RESPEncoder.error(error.text, into: &output) }
    func replyInteger(_ value: Int) { RESPEncoder.integer(value, into: &output) }
    func replyInteger(_ value: Int64) { RESPEncoder.integer(value, into: &output) }
    func replyBulk(_ bytes: [UInt8]) { RESPEncoder.bulk(bytes, into: &output) }
    func replyBulk(_ bytes: ArraySlice<UInt8>) { RESPEncoder.bulk(bytes, into: &output) }
    func replyBulk(_ bytes: UnsafeRawBufferPointer) { RESPEncoder.bulk(bytes, into: &output) }
    func replyBulk(_ text: String) { RESPEncoder.bulk(text, into: &output) }
    func replyBulk(_ argument: Argument) { argument.withUnsafeBytes { RESPEncoder.bulk($0, into: &output) } }
    func replyNull() { RESPEncoder.null(into: &output, version: protocolVersion) }
    func replyNullArray() { RESPEncoder.nullArray(into: &output, version: protocolVersion) }
    func replyArrayHeader(_ count: Int) { RESPEncoder.arrayHeader(count, into: &output) }
    func replyMapHeader(_ count: Int) { RESPEncoder.mapHeader(count, into: &output, version: protocolVersion) }
    func replyBulkArray(_ items: [[UInt8]]) { RESPEncoder.bulkArray(items, into: &output) }
    /// A HELP reply as Redis's `addReplyHelp` sends it: status lines, ending
    /// with Redis's own `HELP` entry (added when `lines` lack it).
    func replyHelp(_ lines: [String]) {
        let trailer = ["HELP", "    Prints this help."]
        let all = lines.suffix(2) == trailer[...] ? lines : lines + trailer
        replyArrayHeader(all.count)
        for line in all { replySimple(line) }
    }

    /// The same, with Redis's header line for `command` before `lines`.
    func replyHelp(_ command: String, _ lines: [String]) {
        replyHelp(["\(command.uppercased()) <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"] + lines)
    }
    func reply(_ value: RESPValue) { value.encode(into: &output, version: protocolVersion) }

    func replyOptionalBulk(_ bytes: [UInt8]?) {
        if let bytes { replyBulk(bytes) } else { replyNull() }
    }

    /// Free text (INFO, CLIENT LIST): a verbatim string in RESP3, a bulk string in RESP2.
    func replyVerbatim(_ text: String) {
        RESPEncoder.verbatim(text.keptBytes, format: "txt", into: &output, version: protocolVersion)
    }
}
