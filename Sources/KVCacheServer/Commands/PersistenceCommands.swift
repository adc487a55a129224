import RESP

/// SAVE, BGSAVE, BGREWRITEAOF, LASTSAVE: Redis's persistence commands,
/// meaning the nearest true thing here. SQLite is the store of record, so
/// a "save" applies what memory holds to it; an AOF "rewrite" does the same
/// and so cuts the append-only log down to nothing.
let persistenceCommands: [Command] = [
    Command(name: "save", arity: 1, flags: ["admin", "noscript", "no_async_loading", "no_multi"],
            firstKey: 0, lastKey: 0, step: 0, group: "server",
            summary: "Applies every change held in memory to SQLite, waiting for it.", handler: save),
    Command(name: "bgsave", arity: -1, flags: ["admin", "noscript", "no_async_loading"],
            firstKey: 0, lastKey: 0, step: 0, group: "server",
            summary: "Applies every change held in memory to SQLite in the background.", handler: bgsave),
    Command(name: "bgrewriteaof", arity: 1, flags: ["admin", "noscript", "no_async_loading"],
            firstKey: 0, lastKey: 0, step: 0, group: "server",
            summary: "Applies every change to SQLite in the background and cuts the append-only log.",
            handler: bgrewriteaof),
    Command(name: "lastsave", arity: 1, flags: ["loading", "stale", "fast"], firstKey: 0, lastKey: 0, step: 0,
            group: "server", summary: "Returns the Unix time of the last change set applied to SQLite.", handler: lastsave),
]

/// SAVE: blocks until SQLite holds every change (as Redis's SAVE blocks).
private func save(_ ctx: CommandContext) throws {
    guard ctx.server.persistence.applyAll() else {
        throw ReplyError("ERR Background save already in progress")  // Redis's text when it cannot save now
    }
    ctx.connection.replyOK()
}

/// BGSAVE [SCHEDULE]
private func bgsave(_ ctx: CommandContext) throws {
    guard ctx.args.count <= 2 else { throw ReplyError.syntax }
    let schedule = ctx.args.count == 2
    if schedule && ctx.option(1) != "schedule" { throw ReplyError.syntax }
    let persistence: Persistence = ctx.server.persistence
    if persistence.busy {
        guard schedule else { throw ReplyError("ERR Background save already in progress") }
        persistence.requestSeal()
        ctx.connection.replySimple("Background saving scheduled")
        return
    }
    persistence.requestSeal()
    ctx.connection.replySimple("Background saving started")
}

private func bgrewriteaof(_ ctx: CommandContext) throws {
    let persistence: Persistence = ctx.server.persistence
    if persistence.rewriteRequested {
        throw ReplyError("ERR Background append only file rewriting already in progress")
    }
    let scheduled = persistence.busy
    persistence.requestSeal(rewrite: true)
    ctx.connection.replySimple(scheduled ? "Background append only file rewriting scheduled"
                                         : "Background append only file rewriting started")
}

private func lastsave(_ ctx: CommandContext) throws {
    ctx.connection.replyInteger(ctx.server.persistence.lastSaveTime)
}
