import Testing
@testable import KVCacheServer

/// ACL rules, their description, and key finding, without a server.
@Suite("ACL")
struct ACLTests {
    /// Rules as given → the command rules ACL GETUSER shows (one rule each, so the order is Redis's too).
    @Test(arguments: [
        (["+memory|doctor"], "-@all +memory|doctor"),
        (["+memory|doctor", "+memory"], "-@all +memory"),
        (["+@all", "+client|id"], "+@all"),
        (["+@all", "-client|kill"], "+@all -client|kill"),
        (["+@all", "-@string"], "+@all -@string"),
        (["-@all", "+@hash"], "-@all +@hash"),
        (["allcommands", "nocommands"], "-@all"),
        (["-@all", "+select|0"], "-@all +select|0"),
    ])
    func commandRulesAreDescribedAsRedisDoes(rules: [String], described: String) throws {
        let selector = ACLSelector(allChannels: false)
        for rule in rules { try selector.apply(rule) }
        #expect(selector.commandsDescription == described)
    }

    @Test(arguments: [
        (["%R~a", "%W~a", "%RW~b"], "~a ~b"),
        (["%R~*"], "%R~*"),
        (["%RW~*"], "~*"),
        (["~x", "resetkeys", "%W~y"], "%W~y"),
    ])
    func keyPatternsMergeTheirRights(rules: [String], described: String) throws {
        let selector = ACLSelector(allChannels: false)
        for rule in rules { try selector.apply(rule) }
        #expect(selector.keysDescription == described)
    }

    @Test(arguments: ["%", "%~", "%X~a", "foo", "+select|", "+nosuch", "+@nosuch", "+config|get|x"])
    func badRulesAreRefused(rule: String) {
        let selector = ACLSelector(allChannels: false)
        #expect(throws: ACLRuleError.self) { try selector.apply(rule) }
    }

    /// The key arguments ACL checks: every one, from Redis's key specs or procedures.
    @Test(arguments: [
        (["MGET", "a", "b", "c"], [1, 2, 3]),
        (["MSET", "a", "1", "b", "2"], [1, 3]),
        (["RENAME", "a", "b"], [1, 2]),
        (["SORT", "a", "LIMIT", "0", "1", "STORE", "b"], [1, 6]),
        (["EVAL", "return 1", "2", "a", "b", "arg"], [3, 4]),
        (["EVAL", "return 1", "3", "a"], []),
        (["ZUNIONSTORE", "d", "2", "a", "b"], [1, 3, 4]),
        (["GEORADIUS", "a", "0", "0", "1", "m", "STORE", "b"], [1, 7]),
        (["SET", "k", "v", "GET"], [1]),
        (["PING"], []),
    ])
    func keyArgumentsAreFound(argv: [String], expected: [Int]) throws {
        let command = try #require(CommandTable.standard.lookup(Array(argv[0].utf8)))
        var found: [Int] = []
        Arguments.withCopy(of: argv.map { Array($0.utf8) }) { args in
            command.aclEntry.resolve(args).keys.forEachKey(args) { index, _ in
                found.append(index)
                return true
            }
        }
        #expect(found == expected)
    }

    @Test func passwordsAreKeptAsDigestsAndCompared() throws {
        let user = ACLUser(name: "u", allChannels: false)
        try user.apply(">secret", allChannels: false)
        #expect(user.passwords == [ACLUser.sha256Hex(Array("secret".utf8))])
        #expect(user.accepts(password: Array("secret".utf8)))
        #expect(!user.accepts(password: Array("Secret".utf8)))
        try user.apply("nopass", allChannels: false)
        #expect(user.accepts(password: []))
    }

    @Test func onlyAUserWithEveryRightTakesTheFastPath() throws {
        let user = ACLUser(name: "u", allChannels: true)
        for rule in ["+@all", "~*", "&*"] { try user.apply(rule, allChannels: true) }
        #expect(user.unrestricted)
        try user.apply("-get", allChannels: true)
        #expect(!user.unrestricted)
        try user.apply("+@all", allChannels: true)
        try user.apply("resetcaches", allChannels: true)
        #expect(!user.unrestricted)
    }
}
