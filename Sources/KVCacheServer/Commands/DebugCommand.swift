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
            subcommands: ["reload", "set-active-expire", "sleep"]),
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
    case "reload":
        ctx.server.reloadCaches()
        ctx.connection.replyOK()
    default:
        throw ReplyError.unknownSubcommand(ctx.args[1], of: "debug")
    }
}
