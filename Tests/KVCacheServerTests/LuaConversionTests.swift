import Testing
@testable import KVCacheServer

/// A host whose commands answer canned RESP replies.
private final class CannedHost: LuaInterpreter.Host {
    var replies: [String: String] = [:]
    var calls: [[String]] = []

    func call(_ args: [[UInt8]], resp: Int) -> (isError: Bool, bytes: [UInt8]) {
        let words = args.map { String(decoding: $0, as: UTF8.self) }
        calls.append(words)
        guard let reply = replies[words[0].lowercased() + (resp == 3 ? "/3" : "")] ?? replies[words[0].lowercased()] else {
            return (true, Array("Unknown Redis command called from script".utf8))
        }
        return (false, Array(reply.utf8))
    }
    func interrupt() -> Bool { false }
    func aclCheck(_ args: [[UInt8]]) -> Bool? { true }
    func log(level: Int, _ message: String) {}
    func registerFunction(name: [UInt8], description: [UInt8]?, flags: UInt64, ref: Int32) -> String? { nil }
}

private func run(_ script: String, _ host: CannedHost, resp: Int = 2, args: [String] = []) -> LuaInterpreter.Outcome {
    let lua = LuaInterpreter(forFunctions: false, host: host)
    let body = Array(script.utf8)
    let sha = LuaInterpreter.sha1Hex(body)
    #expect(lua.compile(sha: sha, body: body, skip: 0) == nil)
    return lua.run(sha: sha, name: sha, keys: [], args: args.map { Array($0.utf8) }, callerResp: resp, hook: false)
}

private func reply(_ outcome: LuaInterpreter.Outcome) -> String? {
    if case .reply(let bytes) = outcome { return String(decoding: bytes, as: UTF8.self) }
    return nil
}

private func error(_ outcome: LuaInterpreter.Outcome) -> String? {
    if case .error(let text, _) = outcome { return text }
    return nil
}

/// Redis's conversions between RESP and Lua (script_lua.c), both ways, as
/// the interpreter does them.
@Suite("Lua and RESP conversions")
struct LuaConversionTests {
    @Test(arguments: [
        ("return 'hello'", 2, "$5\r\nhello\r\n"),
        ("return 100.5", 2, ":100\r\n"),
        ("return -3.9", 2, ":-3\r\n"),
        ("return true", 2, ":1\r\n"),
        ("return false", 2, "$-1\r\n"),
        ("return false", 3, "_\r\n"),
        ("return nil", 2, "$-1\r\n"),
        ("return {ok='fine'}", 2, "+fine\r\n"),
        ("return {ok='a\\r\\nb'}", 2, "+a  b\r\n"),
        ("return {1,2,{3,'x'}}", 2, "*3\r\n:1\r\n:2\r\n*2\r\n:3\r\n$1\r\nx\r\n"),
        ("return {1,nil,3}", 2, "*1\r\n:1\r\n"),
        ("return {double=3.5}", 2, "$3\r\n3.5\r\n"),
        ("return {double=3.5}", 3, ",3.5\r\n"),
        ("return {big_number='123'}", 3, "(123\r\n"),
        ("return {map={a=1}}", 2, "*2\r\n$1\r\na\r\n:1\r\n"),
        ("return {map={a=1}}", 3, "%1\r\n$1\r\na\r\n:1\r\n"),
        ("return {set={a=true}}", 3, "~1\r\n$1\r\na\r\n"),
        ("return {verbatim_string={format='txt', string='hi'}}", 3, "=6\r\ntxt:hi\r\n"),
        ("redis.setresp(3) return true", 3, "#t\r\n"),
        ("redis.setresp(3) return false", 2, ":0\r\n"),
        ("return {1, {err='ERR inner'}}", 2, "*2\r\n:1\r\n-ERR inner\r\n"),
    ])
    func luaToRESP(script: String, resp: Int, expected: String) {
        #expect(reply(run(script, CannedHost(), resp: resp)) == expected)
    }

    @Test func topLevelErrors() {
        let host = CannedHost()
        #expect(error(run("return {err='ERR this is an error'}", host)) == "ERR this is an error")
        #expect(error(run("return redis.error_reply('MY code')", host)) == "MY code")
        let raised = error(run("error('boom')", host)) ?? ""
        #expect(raised.hasPrefix("ERR user_script:1: boom script: "))
        #expect(raised.hasSuffix(", on @user_script:1."))
    }

    @Test func respToLua() {
        let host = CannedHost()
        host.replies = [
            "int": ":42\r\n",
            "bulk": "$3\r\nabc\r\n",
            "nullbulk": "$-1\r\n",
            "status": "+OK\r\n",
            "err": "-WRONGTYPE Operation against a key\r\n",
            "array": "*3\r\n:1\r\n$1\r\nx\r\n*-1\r\n",
            "map/3": "%1\r\n$1\r\nk\r\n$1\r\nv\r\n",
            "double/3": ",1.5\r\n",
            "bool/3": "#t\r\n",
            "null/3": "_\r\n",
        ]
        #expect(reply(run("return redis.call('int') + 1", host)) == ":43\r\n")
        #expect(reply(run("return redis.call('bulk')", host)) == "$3\r\nabc\r\n")
        #expect(reply(run("return redis.call('nullbulk') == false", host)) == ":1\r\n")
        #expect(reply(run("return redis.call('status').ok", host)) == "$2\r\nOK\r\n")
        #expect(reply(run("return redis.pcall('err').err", host)) == "$33\r\nWRONGTYPE Operation against a key\r\n")
        #expect(error(run("return redis.call('err')", host))?.hasPrefix("WRONGTYPE Operation against a key script:") == true)
        #expect(reply(run("local a = redis.call('array') return {a[1], a[2], type(a[3])}", host))
            == "*3\r\n:1\r\n$1\r\nx\r\n$7\r\nboolean\r\n")
        #expect(reply(run("redis.setresp(3) return redis.call('map').map.k", host)) == "$1\r\nv\r\n")
        #expect(reply(run("redis.setresp(3) return redis.call('double').double * 2", host)) == ":3\r\n")
        #expect(reply(run("redis.setresp(3) return redis.call('bool') == true", host)) == ":1\r\n")
        #expect(reply(run("redis.setresp(3) return redis.call('null') == nil", host)) == ":1\r\n")
    }

    @Test func argumentsReachCommandsAsRedisFormatsThem() {
        let host = CannedHost()
        host.replies = ["set": "+OK\r\n"]
        _ = run("redis.call('set', 'k', 0.1, 10, 'x')", host)
        #expect(host.calls.last == ["set", "k", "0.10000000000000001", "10", "x"])
        #expect(error(run("redis.call('set', {})", host))?.hasPrefix("ERR Lua redis lib command arguments must be strings or integers") == true)
        #expect(error(run("redis.call()", host))?.hasPrefix("ERR Please specify at least one argument for this redis lib call") == true)
    }

    @Test func sandbox() {
        let host = CannedHost()
        #expect(error(run("a = 1", host))?.contains("Attempt to modify a readonly table") == true)
        #expect(error(run("return print", host))?.contains("nonexistent global variable 'print'") == true)
        #expect(error(run("return loadstring(string.dump(function() return 1 end))()", host))?
            .contains("attempt to call a nil value") == true)
        #expect(reply(run("return cjson.encode({a=1})", host)) == "$7\r\n{\"a\":1}\r\n")
        #expect(reply(run("return bit.bxor(1, 2)", host)) == ":3\r\n")
    }
}
