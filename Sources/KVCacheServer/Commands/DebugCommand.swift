#if canImport(Glibc)
import Glibc
#endif
import RESP

/// DEBUG, for tests and operators, refused unless `enable-debug-command`
/// allows it (as in Redis 7: `no` by default, `yes`, or `local` for
/// loopback clients only).
let debugCommands: [Command] = [
    Command(name: "debug", arity: -2, flags: ["admin", "noscript", "loading", "stale"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "A container for debugging commands.", handler: debug,
            subcommands: ["protocol", "reload", "set-active-expire", "sleep"]),
]

private func debug(_ ctx: CommandContext) throws {
    let setting = ctx.server.config.enableDebugCommand
    guard setting == "yes" || (setting == "local" && ctx.connection.peerIsLoopback) else {
        throw ReplyError("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
            + "you can run it from a local connection, otherwise you need to set this option in the configuration "
            + "file, and then restart the server.")
    }
    switch ctx.option(1) {
    case "set-active-expire":
        guard ctx.args.count == 3, let flag = parseStrictInt64(ctx.args[2]) else { throw ReplyError.syntax }
        ctx.server.activeExpire = flag != 0
        ctx.connection.replyOK()
    case "sleep":
        guard ctx.args.count == 3, let seconds = Double(ctx.text(2)), seconds >= 0 else { throw ReplyError.syntax }
        usleep(UInt32(min(seconds, 60) * 1_000_000))
        ctx.connection.replyOK()
    case "protocol":
        guard ctx.args.count == 3 else { throw ReplyError.syntax }
        try debugProtocol(ctx)
    case "reload":
        ctx.server.reloadCaches()
        ctx.connection.replyOK()
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "debug")
    }
}

/// DEBUG PROTOCOL <type>: one reply of each RESP3 type, for client tests.
private func debugProtocol(_ ctx: CommandContext) throws {
    let c = ctx.connection
    let resp3 = c.protocolVersion >= 3
    switch ctx.option(2) {
    case "string": c.replyBulk("Hello World")
    case "integer": c.replyInteger(12345)
    case "double": c.reply(.double(3.141))
    case "bignum":
        if resp3 { c.output.append(contentsOf: Array("(1234567999999999999999999999999999999\r\n".utf8)) }
        else { c.replyBulk("1234567999999999999999999999999999999") }
    case "null": c.replyNull()
    case "array": c.reply(.array([.integer(0), .integer(1), .integer(2)]))
    case "set": c.reply(.set([.integer(0), .integer(1), .integer(2)]))
    case "map": c.reply(.map([(.integer(0), .boolean(false)), (.integer(1), .boolean(true)), (.integer(2), .boolean(false))]))
    case "attrib":
        if resp3 {
            c.output.append(contentsOf: Array("|1\r\n".utf8))
            c.replyBulk("key-popularity")
            c.reply(.array([.bulk(Array("key:123".utf8)), .integer(90)]))
        }
        c.replyBulk("Some real reply following the attribute")
    case "push":
        guard resp3 else { throw ReplyError("ERR RESP2 is not supported by this command") }
        c.output.append(contentsOf: Array(">2\r\n".utf8))
        c.replyBulk("server-cpu-usage")
        c.replyInteger(42)
        c.replyBulk("Some real reply following the push reply")
    case "true": c.reply(.boolean(true))
    case "false": c.reply(.boolean(false))
    case "verbatim": c.reply(.verbatim(format: "txt", Array("This is a verbatim\nstring".utf8)))
    default:
        throw ReplyError("ERR Wrong protocol type name. Please use one of the following: "
            + "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
    }
}
