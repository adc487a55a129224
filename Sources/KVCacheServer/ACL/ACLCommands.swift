import RESP

/// ACL, as Redis 7.0's aclCommand: SETUSER GETUSER DELUSER LIST USERS
/// WHOAMI CAT GENPASS LOG DRYRUN SAVE LOAD HELP.
let aclCommands: [Command] = [
    Command(name: "acl", arity: -2, flags: [], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "A container for Access List Control commands.", handler: acl,
            subcommands: ["cat", "deluser", "dryrun", "genpass", "getuser", "help", "list", "load", "log", "save",
                          "setuser", "users", "whoami"]),
]

/// Each subcommand's arity (Redis's table), and the ones whose handler
/// answers a bad count with "unknown subcommand or wrong number of arguments".
private let arities: [String: Int] = ["cat": -2, "deluser": -3, "dryrun": -4, "genpass": -2, "getuser": 3, "help": 2,
                                      "list": 2, "load": 2, "log": -2, "save": 2, "setuser": -3, "users": 2, "whoami": 2]
private let maxArguments: [String: Int] = ["cat": 3, "genpass": 3, "log": 3]

private let helpLines = [
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
]

private func acl(_ ctx: CommandContext) throws {
    let sub = ctx.option(1)
    guard let arity = arities[sub] else { throw ReplyError.unknownSubcommand(ctx.args[1], of: "acl") }
    guard arity >= 0 ? ctx.args.count == arity : ctx.args.count >= -arity else { throw ReplyError.wrongArity("acl|\(sub)") }
    if let most = maxArguments[sub], ctx.args.count > most {
        throw ReplyError("ERR unknown subcommand or wrong number of arguments for '\(ctx.quoted(1))'. Try ACL HELP.")
    }
    let server = ctx.server, c = ctx.connection, registry = server.acl
    switch sub {
    case "setuser":
        try setUser(ctx)
    case "getuser":
        guard let user = registry.user(ctx.text(2)) else { return c.replyNull() }
        replyUser(user, to: c)
    case "deluser":
        var deleted = 0
        var gone: [ACLUser] = []
        for i in 2..<ctx.args.count {
            let name = ctx.text(i)
            if name == "default" { throw ReplyError("ERR The 'default' user cannot be removed") }
        }
        for i in 2..<ctx.args.count {
            if let user = registry.remove(ctx.text(i)) {
                deleted += 1
                gone.append(user)
            }
        }
        server.closeClients(of: gone, current: c)
        c.replyInteger(deleted)
    case "list":
        c.replyBulkArray(registry.lines.map { Array($0.utf8) })
    case "users":
        c.replyBulkArray(registry.users.keys.sorted().map { Array($0.utf8) })
    case "whoami":
        c.replyBulk(c.user?.name ?? "default")
    case "cat":
        if ctx.args.count == 2 {
            c.replyBulkArray(ACLCategory.names.map { Array($0.utf8) })
        } else {
            guard let bit = ACLCategory.bits[ctx.text(2).lowercased()] else {
                throw ReplyError("ERR Unknown category '\(ctx.quoted(2))'")
            }
            c.replyBulkArray(ACLCommandCatalog.all.filter { $0.categories & bit != 0 }.map { Array($0.fullName.utf8) })
        }
    case "genpass":
        var bits = 256
        if ctx.args.count == 3 {
            let given = try ctx.integer(2)
            guard given > 0 && given <= 4096 else {
                throw ReplyError("ERR ACL GENPASS argument must be the number of bits for the output password, "
                    + "a positive number up to 4096")
            }
            bits = Int(given)
        }
        c.replyBulk(randomHex(characters: (bits + 3) / 4))
    case "log":
        try log(ctx)
    case "dryrun":
        try dryRun(ctx)
    case "save":
        guard !server.config.aclFile.isEmpty else {
            throw ReplyError("ERR This Redis instance is not configured to use an ACL file. You may want to specify "
                + "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis "
                + "configuration file set) in order to store users in the Redis configuration.")
        }
        do {
            try registry.save(to: server.config.aclFilePath)
        } catch {
            throw ReplyError("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
        }
        c.replyOK()
    case "load":
        guard !server.config.aclFile.isEmpty else {
            throw ReplyError("ERR This Redis instance is not configured to use an ACL file. You may want to specify "
                + "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis "
                + "configuration file set) in order to store users in the Redis configuration.")
        }
        if let problem = server.loadACLFile(current: c) { throw ReplyError("ERR \(problem)") }
        c.replyOK()
    default:
        c.replyHelp("acl", helpLines)
    }
}

/// ACL SETUSER name rule…: applied to a copy, kept only if every rule applies.
private func setUser(_ ctx: CommandContext) throws {
    let server = ctx.server
    let name = ctx.text(2)
    do {
        try ACLRegistry.checkName(name)
    } catch {
        throw ReplyError("ERR " + error.text)
    }
    let existing = server.acl.user(name)
    let base = existing ?? ACLUser(name: name, allChannels: server.pubsubDefaultAll)
    let rules = (3..<ctx.args.count).map { ctx.text($0) }
    let updated: ACLUser
    do {
        updated = try ACLRegistry.build(base, rules: rules, allChannels: server.pubsubDefaultAll)
    } catch {
        throw ReplyError("ERR " + error.text)
    }
    if let existing {
        existing.assign(from: updated)
        server.closeSubscribersIfRevoked(existing, current: ctx.connection)
    } else {
        server.acl.store(updated)
    }
    ctx.connection.replyOK()
}

/// ACL GETUSER's map: flags, passwords, the root selector's commands,
/// keys and channels, and the other selectors.
private func replyUser(_ user: ACLUser, to c: Connection) {
    c.replyMapHeader(user.cacheRules.isEmpty ? 6 : 7)
    c.replyBulk("flags")
    c.reply(.set(user.flagNames.map { .bulk(Array($0.utf8)) }))
    c.replyBulk("passwords")
    c.replyBulkArray(user.passwords.map { Array($0.utf8) })
    replySelector(user.root, to: c, header: false)
    c.replyBulk("selectors")
    c.replyArrayHeader(user.selectors.count - 1)
    for selector in user.selectors.dropFirst() { replySelector(selector, to: c, header: true) }
    if !user.cacheRules.isEmpty {
        c.replyBulk("caches")
        c.replyBulk(user.cacheRules.joined(separator: " "))
    }
}

private func replySelector(_ selector: ACLSelector, to c: Connection, header: Bool) {
    if header { c.replyMapHeader(3) }
    c.replyBulk("commands")
    c.replyBulk(selector.commandsDescription)
    c.replyBulk("keys")
    c.replyBulk(selector.keysDescription)
    c.replyBulk("channels")
    c.replyBulk(selector.channelsDescription)
}

/// ACL LOG [count | RESET].
private func log(_ ctx: CommandContext) throws {
    let c = ctx.connection
    var count = Int.max
    if ctx.args.count == 3 {
        if ctx.option(2) == "reset" {
            ctx.server.acl.log.removeAll()
            return c.replyOK()
        }
        let given = try ctx.integer(2)
        count = given < 0 ? 0 : Int(given)
    }
    let now = Server.nowMilliseconds()
    let entries = ctx.server.acl.log.prefix(count)
    c.replyArrayHeader(entries.count)
    for entry in entries {
        c.replyMapHeader(7)
        c.replyBulk("count"); c.replyInteger(entry.count)
        c.replyBulk("reason"); c.replyBulk(entry.reason)
        c.replyBulk("context"); c.replyBulk(entry.context)
        c.replyBulk("object"); c.replyBulk(entry.object)
        c.replyBulk("username"); c.replyBulk(entry.username)
        c.replyBulk("age-seconds"); c.reply(.double(Double(now - entry.createdAt) / 1000))
        c.replyBulk("client-info"); c.replyBulk(entry.clientInfo)
    }
}

/// ACL DRYRUN user command arg…: whether the user could run it, in Redis's verbose words.
private func dryRun(_ ctx: CommandContext) throws {
    let server = ctx.server
    guard let user = server.acl.user(ctx.text(2)) else { throw ReplyError("ERR User '\(ctx.quoted(2))' not found") }
    let rest = Array(ctx.args.dropFirst(3))
    guard let command = server.commands.lookup(rest[0]) else {
        throw ReplyError("ERR Command '\(ctx.quoted(3))' not found")
    }
    try Arguments.withCopy(of: rest.map(\.bytes)) { args in
        guard command.accepts(argumentCount: args.count) else { throw ReplyError.wrongArity(command.name) }
        let entry = command.aclEntry.resolve(args)
        if let (denial, index) = server.aclDenial(user, entry, args) {
            let text = Server.aclMessage(denial, entry, args[index].text, verbose: true)
            ctx.connection.replyBulk("T" + text.dropFirst())
        } else {
            ctx.connection.replyOK()
        }
    }
}

/// `characters` hex digits from OpenSSL's RAND_bytes.
private func randomHex(characters: Int) -> String {
    String(Digest.hex(Digest.randomBytes((characters + 1) / 2)).prefix(characters))
}
