import RESP

/// COMMAND GETKEYS: the key arguments of a command, as Redis 7.0's
/// commandGetKeysCommand finds them: the first/last/step positions of the
/// command's key range, or, for the commands whose keys follow a count
/// (EVAL, FCALL, ZUNIONSTORE…), the keys that count names.
func commandGetKeys(_ ctx: CommandContext) throws {
    guard ctx.args.count >= 3 else { throw ReplyError.wrongArity("command|getkeys") }
    guard let command = ctx.server.commands.lookup(ctx.args[2]) else {
        throw ReplyError("ERR Invalid command specified")
    }
    let args = Array(ctx.args.dropFirst(2))
    let name = command.name
    // Where the count of keys is, and where the keys start (relative to
    // the count); plus any key before it (a destination).
    let counted: (countAt: Int, leading: [Int])? = switch name {
    case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro": (2, [])
    case "zunionstore", "zinterstore", "zdiffstore": (2, [1])
    case "zunion", "zinter", "zdiff", "sintercard", "zintercard", "lmpop", "zmpop": (1, [])
    case "blmpop", "bzmpop": (2, [])
    default: nil
    }
    let movable = counted != nil
    guard movable || command.firstKey > 0 else { throw ReplyError("ERR The command has no key arguments") }
    guard command.arity > 0 ? args.count == command.arity : args.count >= -command.arity else {
        throw ReplyError("ERR Invalid number of arguments specified for command")
    }
    var positions: [Int] = []
    if let counted {
        positions = counted.leading
        let count = Int(String(decoding: args[counted.countAt], as: UTF8.self)) ?? -1
        guard count >= 0, counted.countAt + count < args.count else {
            throw ReplyError("ERR Invalid arguments specified for command")
        }
        positions += Array(stride(from: counted.countAt + 1, through: counted.countAt + count, by: 1))
    } else {
        let last = command.lastKey < 0 ? args.count + command.lastKey : command.lastKey
        if command.step > 0 && last >= command.firstKey {
            positions = Array(stride(from: command.firstKey, through: min(last, args.count - 1), by: command.step))
        }
    }
    if positions.isEmpty {
        if command.flags.contains("no_mandatory_keys") {
            ctx.connection.replyArrayHeader(0)
            return
        }
        throw ReplyError("ERR Invalid arguments specified for command")
    }
    ctx.connection.replyBulkArray(positions.map { args[$0].bytes })
}
