"""ACL as Redis 7.0.15 has it: the cases of Redis's tests/unit/acl.tcl and
acl-v2.tcl (which cannot run against an external server: every block starts
a server of its own), brought in as a table of steps (who runs what, and the
reply expected). The same table runs against redis-server with
KVCACHE_TARGET=redis, which shows the expectations are Redis's.

Each case runs on the module's server after a reset: every user but
`default` deleted, `default` back to `on nopass ~* &* +@all`, ACL LOG
emptied, keys flushed. A step is (who, command, expected):

- who: "a" (an admin connection, as `default`), "c" (the case's client,
  which AUTHs as the case's users), "new" (a fresh connection for this step).
- expected: a literal reply, Err(glob) for an error reply whose text matches,
  Has(fn) for a predicate, ANY, or CLOSED (the connection was closed).
"""
import fnmatch
import os
import shutil
import subprocess
import tempfile
import time

import pytest
import redis

from conftest import REDIS, Server, RawConnection, fail_on, require_tool


class Err:
    def __init__(self, pattern):
        self.pattern = pattern

    def check(self, reply):
        return isinstance(reply, tuple) and reply[0] == "error" and fnmatch.fnmatchcase(reply[1], self.pattern)

    def __repr__(self):
        return "Err(%r)" % self.pattern


class Has:
    def __init__(self, predicate, what=""):
        self.predicate, self.what = predicate, what

    def check(self, reply):
        try:
            return bool(self.predicate(reply))
        except Exception:  # noqa: BLE001  a reply of the wrong shape is a mismatch
            return False

    def __repr__(self):
        return "Has(%s)" % self.what


ANY = Has(lambda r: True, "anything")
CLOSED = "CLOSED"
NOPERM_KEYS = Err("NOPERM this user has no permissions to access one of the keys used as arguments")
NOPERM_CHANNELS = Err("NOPERM this user has no permissions to access one of the channels used as arguments")


def noperm(command):
    return Err("NOPERM this user has no permissions to run the '%s' command" % command)


def modifier(op, reason):
    return Err("ERR Error in ACL SETUSER modifier '%s': %s" % (op, reason))


def as_dict(flat):
    """A RESP2 map (flat list) as a dict with text keys."""
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def field(name, value):
    """ACL GETUSER's `name` field equals `value` (text)."""
    return Has(lambda r: as_dict(r)[name] == (value.encode() if isinstance(value, str) else value),
               "%s == %r" % (name, value))


def field_matches(name, pattern):
    return Has(lambda r: fnmatch.fnmatchcase(as_dict(r)[name].decode(), pattern), "%s ~ %r" % (name, pattern))


def selector(index, name, value):
    return Has(lambda r: as_dict(as_dict(r)["selectors"][index])[name] == value.encode(),
               "selectors[%d].%s == %r" % (index, name, value))


def selector_count(n):
    return Has(lambda r: len(as_dict(r)["selectors"]) == n, "%d selectors" % n)


def log_entry(**fields):
    """ACL LOG's newest entry has these fields."""
    def check(reply):
        entry = as_dict(reply[0])
        for k, v in fields.items():
            got = entry[k.replace("_", "-")]
            if isinstance(got, bytes):
                got = got.decode()
            if got != v:
                return False
        return True
    return Has(check, "log[0] has %r" % fields)


def length(n):
    return Has(lambda r: len(r) == n, "length %d" % n)


def contains(item):
    return Has(lambda r: item in r, "contains %r" % item)


def lacks(item):
    return Has(lambda r: item not in r, "lacks %r" % item)


def list_line(user, pattern):
    """ACL LIST's line for `user` matches the glob."""
    def check(reply):
        lines = [l.decode() for l in reply if l.decode().startswith("user %s " % user)]
        return len(lines) == 1 and fnmatch.fnmatchcase(lines[0], pattern)
    return Has(check, "ACL LIST %s ~ %r" % (user, pattern))


HASH4 = "34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6"  # sha256("passwd4")
ANTIREZ = [("a", ["ACL", "SETUSER", "antirez", ">foo", "on", "+set", "~object:1234"], "OK"),
           ("a", ["ACL", "SETUSER", "antirez", "+eval", "+multi", "+exec"], "OK"),
           ("a", ["ACL", "SETUSER", "antirez", "resetchannels", "+publish"], "OK"),
           ("a", ["ACL", "LOG", "RESET"], "OK")]


def dryrun_rows(user, rows):
    return [("a", ["ACL", "DRYRUN", user] + cmd, expected) for cmd, expected in rows]


def key_msg(key):
    return b"This user has no permissions to access the '%s' key" % key.encode()


CASES = {
    # --- acl.tcl -------------------------------------------------------------------
    "connections start with the default user": [("c", ["ACL", "WHOAMI"], b"default")],
    "usernames cannot contain spaces": [
        ("a", ["ACL", "SETUSER", "a a"], Err("ERR Usernames can't contain spaces or null characters")),
    ],
    "new users start disabled": [
        ("a", ["ACL", "SETUSER", "newuser", ">passwd1"], "OK"),
        ("c", ["AUTH", "newuser", "passwd1"], Err("WRONGPASS invalid username-password pair or user is disabled.")),
        ("a", ["ACL", "SETUSER", "newuser", "on", "+acl"], "OK"),
        ("c", ["AUTH", "newuser", "passwd1"], "OK"),
        ("c", ["ACL", "WHOAMI"], b"newuser"),
    ],
    "only the set of correct passwords works": [
        ("a", ["ACL", "SETUSER", "newuser", "on", ">passwd1", ">passwd2"], "OK"),
        ("c", ["AUTH", "newuser", "passwd1"], "OK"),
        ("c", ["AUTH", "newuser", "passwd2"], "OK"),
        ("c", ["AUTH", "newuser", "passwd3"], Err("WRONGPASS*")),
        ("a", ["ACL", "SETUSER", "newuser", "<passwd1"], "OK"),
        ("c", ["AUTH", "newuser", "passwd1"], Err("WRONGPASS*")),
        ("a", ["ACL", "SETUSER", "newuser", "<passwd1"],
         modifier("<passwd1", "The password you are trying to remove from the user does not exist")),
    ],
    "password hashes": [
        ("a", ["ACL", "SETUSER", "newuser", "on", "#" + HASH4], "OK"),
        ("c", ["AUTH", "newuser", "passwd4"], "OK"),
        ("a", ["ACL", "SETUSER", "newuser", "#" + HASH4[:-1]],
         modifier("#" + HASH4[:-1], "The password hash must be exactly 64 characters and contain only lowercase "
                                    "hexadecimal characters")),
        ("a", ["ACL", "SETUSER", "newuser", "#" + HASH4[:-1] + "q"], Err("*Error in ACL SETUSER modifier*")),
        ("a", ["ACL", "GETUSER", "newuser"], field("passwords", [HASH4.encode()])),
        ("a", ["ACL", "SETUSER", "newuser", "!" + HASH4], "OK"),
        ("a", ["ACL", "GETUSER", "newuser"], field("passwords", [])),
        ("c", ["AUTH", "newuser", "passwd4"], Err("WRONGPASS*")),
    ],
    "no commands and no keys by default": [
        ("a", ["ACL", "SETUSER", "newuser", "on", "nopass"], "OK"),
        ("c", ["AUTH", "newuser", "x"], "OK"),
        ("c", ["SET", "foo", "bar"], noperm("set")),
        ("a", ["ACL", "SETUSER", "newuser", "+set"], "OK"),
        ("c", ["SET", "foo", "bar"], NOPERM_KEYS),
        ("a", ["ACL", "SETUSER", "newuser", "allcommands", "~foo:*", "~bar:*"], "OK"),
        ("c", ["SET", "foo:1", "a"], "OK"),
        ("c", ["SET", "bar:2", "b"], "OK"),
        ("c", ["SET", "zap:3", "c"], NOPERM_KEYS),
        ("c", ["MSET", "foo:1", "a", "zap:3", "c"], NOPERM_KEYS),
        ("c", ["MGET", "foo:1", "bar:2"], [b"a", b"b"]),
        ("c", ["MGET", "foo:1", "zap:3"], NOPERM_KEYS),
        ("c", ["RENAME", "foo:1", "zap:1"], NOPERM_KEYS),
        ("c", ["RENAME", "foo:1", "bar:1"], "OK"),
        ("c", ["EVAL", "return 1", "1", "zap:1"], NOPERM_KEYS),
        ("c", ["EVAL", "return 1", "1", "foo:9"], 1),
        ("c", ["SORT", "foo:1", "STORE", "zap:1"], NOPERM_KEYS),
        ("a", ["ACL", "SETUSER", "newuser", "allkeys"], "OK"),
        ("c", ["SET", "zap:3", "c"], "OK"),
    ],
    "only default may publish and subscribe by default": [
        ("c", ["PUBLISH", "foo", "bar"], 0),
        ("a", ["ACL", "SETUSER", "psuser", "on", ">pspass", "+acl", "+client", "+@pubsub"], "OK"),
        ("c", ["AUTH", "psuser", "pspass"], "OK"),
        ("c", ["PUBLISH", "foo", "bar"], NOPERM_CHANNELS),
        ("c", ["SPUBLISH", "foo", "bar"], NOPERM_CHANNELS),
        ("c", ["SUBSCRIBE", "foo"], NOPERM_CHANNELS),
        ("c", ["PSUBSCRIBE", "bar*"], NOPERM_CHANNELS),
    ],
    "a subset of channels": [
        ("a", ["ACL", "SETUSER", "psuser", "on", ">pspass", "+acl", "+client", "+@pubsub", "resetchannels", "&foo:1",
               "&bar:*"], "OK"),
        ("c", ["AUTH", "psuser", "pspass"], "OK"),
        ("c", ["PUBLISH", "foo:1", "somemessage"], 0),
        ("c", ["PUBLISH", "bar:2", "anothermessage"], 0),
        ("c", ["PUBLISH", "zap:3", "nosuchmessage"], NOPERM_CHANNELS),
        ("c", ["SPUBLISH", "bar:2", "anothermessage"], 0),
        ("c", ["SPUBLISH", "zap:3", "nosuchmessage"], NOPERM_CHANNELS),
        ("c", ["PSUBSCRIBE", "foo:1"], [b"psubscribe", b"foo:1", 1]),
        ("c", ["PSUBSCRIBE", "bar:*"], [b"psubscribe", b"bar:*", 2]),
        # A pattern must equal a channel rule literally (Redis 7.0).
        ("c", ["PSUBSCRIBE", "bar:baz"], NOPERM_CHANNELS),
    ],
    "subscribing to a subset of channels": [
        ("a", ["ACL", "SETUSER", "psuser", "on", ">pspass", "+@all", "resetchannels", "&foo:1", "&bar:*"], "OK"),
        ("c", ["AUTH", "psuser", "pspass"], "OK"),
        ("c", ["SUBSCRIBE", "foo:1"], [b"subscribe", b"foo:1", 1]),
        ("c", ["SUBSCRIBE", "bar:2"], [b"subscribe", b"bar:2", 2]),
        ("c", ["SUBSCRIBE", "zap:3"], NOPERM_CHANNELS),
    ],
    "resetchannels comes first in ACL LIST": [
        ("a", ["ACL", "SETUSER", "hpuser", "on", "nopass", "resetchannels", "&foo", "+@all"], "OK"),
        ("a", ["ACL", "LIST"], list_line("hpuser", "user hpuser on nopass resetchannels &foo +@all")),
        ("c", ["AUTH", "hpuser", "pass"], "OK"),
        ("c", ["PUBLISH", "foo", "bar"], 0),
        ("c", ["PUBLISH", "bar", "game"], NOPERM_CHANNELS),
    ],
    "channel refusals inside MULTI": [
        ("a", ["ACL", "SETUSER", "psuser", "on", ">pspass", "+@pubsub", "+multi", "+discard", "resetchannels",
               "&foo:1"], "OK"),
        ("c", ["AUTH", "psuser", "pspass"], "OK"),
        ("c", ["MULTI"], "OK"),
        ("c", ["PUBLISH", "notexits", "helloworld"], NOPERM_CHANNELS),
        ("c", ["SUBSCRIBE", "notexits", "foo:1"], NOPERM_CHANNELS),
        ("c", ["PSUBSCRIBE", "notexits:*", "bar:*"], NOPERM_CHANNELS),
        ("c", ["DISCARD"], "OK"),
    ],
    "subscribers are killed when their channel rights are revoked": [
        ("a", ["ACL", "SETUSER", "psuser", "on", ">pspass", "+@all", "resetchannels", "&foo:1"], "OK"),
        ("c", ["AUTH", "psuser", "pspass"], "OK"),
        ("c", ["CLIENT", "SETNAME", "deathrow"], "OK"),
        ("c", ["SUBSCRIBE", "foo:1"], [b"subscribe", b"foo:1", 1]),
        ("a", ["ACL", "SETUSER", "psuser", "resetchannels"], "OK"),
        ("a", ["CLIENT", "LIST"], Has(lambda r: b"deathrow" not in r, "no deathrow")),
    ],
    "subscribers keep literal rights, or gain allchannels": [
        ("a", ["ACL", "SETUSER", "psuser", "on", ">pspass", "+@all", "resetchannels", "&foo:1", "&bar:*"], "OK"),
        ("c", ["AUTH", "psuser", "pspass"], "OK"),
        ("c", ["CLIENT", "SETNAME", "pardoned"], "OK"),
        ("c", ["PSUBSCRIBE", "bar:*"], [b"psubscribe", b"bar:*", 1]),
        ("a", ["ACL", "SETUSER", "psuser", "resetchannels", "&foo:1", "&bar:*", "&baz:qaz"], "OK"),
        ("a", ["CLIENT", "LIST"], Has(lambda r: b"pardoned" in r, "pardoned")),
        ("a", ["ACL", "SETUSER", "psuser", "allchannels"], "OK"),
        ("a", ["CLIENT", "LIST"], Has(lambda r: b"pardoned" in r, "pardoned")),
    ],
    "commands and categories": [
        ("a", ["ACL", "SETUSER", "newuser", "on", "nopass", "allkeys", "+@all", "-ping"], "OK"),
        ("c", ["AUTH", "newuser", "x"], "OK"),
        ("c", ["INCR", "mycounter"], 1),
        ("c", ["PING"], noperm("ping")),
        ("a", ["ACL", "SETUSER", "newuser", "-@all", "+@set", "+acl"], "OK"),
        ("c", ["SADD", "myset", "a", "b", "c"], 3),
        ("a", ["ACL", "SETUSER", "newuser", "+@all", "-@string"], "OK"),
        ("c", ["SADD", "myset", "d"], 1),
        ("c", ["SET", "foo", "bar"], noperm("set")),
    ],
    "single subcommands": [
        ("a", ["ACL", "SETUSER", "newuser", "on", "nopass", "allkeys", "+@all", "-client"], "OK"),
        ("a", ["ACL", "SETUSER", "newuser", "+client|id", "+client|setname"], "OK"),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "+@all*-client*+client|id*")),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "+@all*-client*+client|setname*")),
        ("c", ["AUTH", "newuser", "x"], "OK"),
        ("c", ["CLIENT", "ID"], Has(lambda r: isinstance(r, int), "an id")),
        ("c", ["CLIENT", "SETNAME", "foo"], "OK"),
        ("c", ["CLIENT", "KILL", "type", "master"], noperm("client|kill")),
        ("a", ["ACL", "SETUSER", "newuser", "+@all", "-client|kill"], "OK"),
        ("a", ["ACL", "GETUSER", "newuser"], field("commands", "+@all -client|kill")),
        ("c", ["CLIENT", "KILL", "type", "master"], noperm("client|kill")),
        ("a", ["ACL", "SETUSER", "newuser", "-@all", "+acl", "+config", "-config|set"], "OK"),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*+config*")),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*-config|set*")),
        ("c", ["CONFIG", "GET", "loglevel"], ANY),
        ("c", ["CONFIG", "SET", "loglevel", "debug"], noperm("config|set")),
    ],
    "rules that are refused": [
        ("a", ["ACL", "SETUSER", "newuser", "+@all", "-config|get"], "OK"),
        ("a", ["ACL", "SETUSER", "newuser", "+config|get|appendonly"],
         modifier("+config|get|appendonly", "Allowing first-arg of a subcommand is not supported")),
        ("a", ["ACL", "SETUSER", "newuser", "+@all", "+config|asdf"], Err("*Unknown command or category name in ACL*")),
        ("a", ["ACL", "SETUSER", "newuser", "+@all", "-config|asdf"], Err("*Unknown command or category name in ACL*")),
        ("a", ["ACL", "SETUSER", "newuser", "+@all", "+get|key1|key2"], Err("*Unknown command or category name in ACL*")),
        ("a", ["ACL", "SETUSER", "newuser", "-get|key1|key2"], Err("*Unknown command or category name in ACL*")),
        ("a", ["ACL", "SETUSER", "newuser", "-select|0"], modifier("-select|0", "Unknown command or category name in ACL")),
        ("a", ["ACL", "SETUSER", "newuser", "+select|"], modifier("+select|", "Syntax error")),
        ("a", ["ACL", "SETUSER", "newuser", "+nosuch"], modifier("+nosuch", "Unknown command or category name in ACL")),
        ("a", ["ACL", "SETUSER", "newuser", "+@nosuch"], modifier("+@nosuch", "Unknown command or category name in ACL")),
        ("a", ["ACL", "SETUSER", "newuser", "foo"], modifier("foo", "Syntax error")),
        ("a", ["ACL", "SETUSER", "newuser", "~a", "allkeys", "~b"],
         modifier("~b", "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have "
                        "any effect. Try 'resetkeys' to start with an empty list of patterns")),
        ("a", ["ACL", "SETUSER", "newuser", "&a", "allchannels", "&b"],
         modifier("&b", "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not "
                        "have any effect. Try 'resetchannels' to start with an empty list of channels")),
        # A refused SETUSER changes nothing.
        ("a", ["ACL", "SETUSER", "fresh", "on", "+get", "+nosuch"], Err("*Unknown command*")),
        ("a", ["ACL", "GETUSER", "fresh"], None),
    ],
    "first-argument rules": [
        ("a", ["ACL", "SETUSER", "newuser", "on", "nopass", "~*", "-@all", "+acl", "+select|0"], "OK"),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*+select|0*")),
        ("c", ["AUTH", "newuser", "x"], "OK"),
        ("c", ["SELECT", "0"], "OK"),
        ("c", ["SELECT", "1"], noperm("select")),
        ("a", ["ACL", "SETUSER", "newuser", "-@all", "+acl", "+incr", "+debug|object"], "OK"),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*+debug|object*")),
        ("c", ["INCR", "key"], 1),
        ("c", ["GET", "key"], noperm("get")),
    ],
    "full commands engulf subcommands": [
        ("a", ["ACL", "SETUSER", "bob", "+memory|doctor"], "OK"),
        ("a", ["ACL", "GETUSER", "bob"], field("commands", "-@all +memory|doctor")),
        ("a", ["ACL", "SETUSER", "bob", "+memory"], "OK"),
        ("a", ["ACL", "GETUSER", "bob"], field("commands", "-@all +memory")),
        ("a", ["ACL", "SETUSER", "bob", "+@all", "+client|id"], "OK"),
        ("a", ["ACL", "GETUSER", "bob"], field("commands", "+@all")),
        ("a", ["ACL", "SETUSER", "alice", "+@all", "-memory|doctor", ">passwd1", "on"], "OK"),
        ("a", ["ACL", "GETUSER", "alice"], field("commands", "+@all -memory|doctor")),
        ("c", ["AUTH", "alice", "passwd1"], "OK"),
        ("c", ["MEMORY", "DOCTOR"], noperm("memory|doctor")),
        ("c", ["MEMORY", "STATS"], ANY),
        ("a", ["ACL", "SETUSER", "alice", "+@all", "-memory"], "OK"),
        ("a", ["ACL", "GETUSER", "alice"], field("commands", "+@all -memory")),
        ("c", ["MEMORY", "STATS"], noperm("memory|stats")),
        ("a", ["ACL", "SETUSER", "alice", "-@all"], "OK"),
        ("a", ["ACL", "GETUSER", "alice"], field("commands", "-@all")),
        ("c", ["GET", "key"], noperm("get")),
    ],
    "GETUSER translates command rules back": [
        ("a", ["ACL", "SETUSER", "newuser", "reset", "+@all", "~*", "-@string", "+incr", "-debug", "+debug|digest"], "OK"),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*+@all*")),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*-@string*")),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*+incr*")),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*-debug +debug|digest*")),
        ("a", ["ACL", "SETUSER", "newuser", "reset", "+@string", "-incr", "+acl", "+debug|digest", "+debug|segfault"], "OK"),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "-@all*")),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*+@string*")),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*-incr*")),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*+debug|digest*")),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*+debug|segfault*")),
        ("a", ["ACL", "GETUSER", "newuser"], field_matches("commands", "*+acl*")),
        ("a", ["ACL", "LIST"], list_line("newuser", "user newuser off sanitize-payload resetchannels -@all +@string *")),
    ],
    "ACL CAT": [
        ("a", ["ACL", "CAT"], [c.encode() for c in (
            "keyspace read write set sortedset list hash string bitmap hyperloglog geo stream pubsub admin fast slow "
            "blocking dangerous connection transaction scripting").split()]),
        ("a", ["ACL", "CAT", "NON_EXISTS"], Err("ERR Unknown category 'NON_EXISTS'")),
        ("a", ["ACL", "CAT", "NON_EXISTS", "NON_EXISTS2"],
         Err("ERR unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP.")),
        ("a", ["ACL", "CAT", "transaction"], contains(b"multi")),
        ("a", ["ACL", "CAT", "scripting"], contains(b"function|list")),
        ("a", ["ACL", "CAT", "keyspace"], lacks(b"set")),
        ("a", ["ACL", "CAT", "stream"], lacks(b"get")),
        ("a", ["ACL", "CAT", "read"], contains(b"get")),
        ("a", ["ACL", "CAT", "write"], contains(b"set")),
    ],
    "EVAL_RO, EVALSHA_RO and FCALL_RO need scripting rights": [
        ("a", ["ACL", "SETUSER", "scripter", "on", "nopass", "+readonly"], "OK"),
    ] + dryrun_rows("scripter", [
        (["EVAL_RO", "", "0"], b"This user has no permissions to run the 'eval_ro' command"),
        (["EVALSHA_RO", "", "0"], b"This user has no permissions to run the 'evalsha_ro' command"),
        (["FCALL_RO", "", "0"], b"This user has no permissions to run the 'fcall_ro' command"),
    ]),
    "ACL LOG: a command at the top level": ANTIREZ + [
        ("c", ["AUTH", "antirez", "foo"], "OK"),
        ("c", ["GET", "foo"], noperm("get")),
        ("a", ["ACL", "LOG"], log_entry(username="antirez", context="toplevel", reason="command", object="get", count=1)),
        ("c", ["GET", "foo"], noperm("get")),
        ("c", ["GET", "foo"], noperm("get")),
        ("a", ["ACL", "LOG"], log_entry(count=3)),
        ("c", ["SET", "somekeynotallowed", "1234"], NOPERM_KEYS),
        ("a", ["ACL", "LOG"], log_entry(reason="key", object="somekeynotallowed")),
        ("c", ["PUBLISH", "somechannelnotallowed", "nullmsg"], NOPERM_CHANNELS),
        ("a", ["ACL", "LOG"], log_entry(reason="channel", object="somechannelnotallowed")),
        ("a", ["ACL", "LOG", "2"], length(2)),
        ("a", ["ACL", "LOG", "-1"], []),
        ("a", ["ACL", "LOG", "x"], Err("ERR value is not an integer or out of range")),
        ("a", ["ACL", "LOG", "RESET"], "OK"),
        ("a", ["ACL", "LOG"], []),
    ],
    "ACL LOG: a subcommand": [
        ("a", ["ACL", "SETUSER", "demo", "on", "nopass"], "OK"),
        ("a", ["ACL", "LOG", "RESET"], "OK"),
        ("c", ["AUTH", "demo", ""], "OK"),
        ("c", ["SCRIPT", "HELP"], noperm("script|help")),
        ("a", ["ACL", "LOG"], log_entry(username="demo", context="toplevel", reason="command", object="script|help")),
    ],
    "ACL LOG: transactions": ANTIREZ + [
        ("c", ["AUTH", "antirez", "foo"], "OK"),
        ("c", ["MULTI"], "OK"),
        ("c", ["INCR", "foo"], noperm("incr")),
        ("c", ["EXEC"], Err("EXECABORT Transaction discarded because of previous errors.")),
        ("a", ["ACL", "LOG"], log_entry(context="multi", object="incr")),
        ("a", ["ACL", "SETUSER", "antirez", "+incr"], "OK"),
        ("c", ["MULTI"], "OK"),
        ("c", ["INCR", "object:1234"], "QUEUED"),
        ("a", ["ACL", "SETUSER", "antirez", "-incr"], "OK"),
        ("c", ["EXEC"], [("error", "NOPERM ACLs rules changed between the moment the transaction was accumulated and "
                                   "the EXEC call. This command is no longer allowed for the following reason: no "
                                   "permission to execute the command or subcommand")]),
        ("a", ["ACL", "LOG"], log_entry(context="multi", object="incr")),
    ],
    "ACL LOG: scripts": ANTIREZ + [
        ("c", ["AUTH", "antirez", "foo"], "OK"),
        ("c", ["EVAL", "redis.call('incr','foo')", "0"],
         Err("ERR The user executing the script can't run this command or subcommand *")),
        ("a", ["ACL", "LOG"], log_entry(context="lua", object="incr", reason="command")),
        ("c", ["EVAL", "return redis.call('set','nothere', 1)", "0"],
         Err("ERR The user executing the script can't access at least one of the keys mentioned in the command "
             "arguments *")),
        ("a", ["ACL", "LOG"], log_entry(context="lua", object="nothere", reason="key")),
    ],
    "ACL LOG: failed AUTH and the length bound": ANTIREZ + [
        ("c", ["AUTH", "antirez", "wrong-password"], Err("WRONGPASS*")),
        ("a", ["ACL", "LOG"], log_entry(context="toplevel", reason="auth", object="AUTH", username="antirez")),
        ("a", ["CONFIG", "SET", "acllog-max-len", "5"], "OK"),
        ("c", ["AUTH", "antirez", "foo"], "OK"),
    ] + [("c", ["SET", "obj:%d" % j, "123"], NOPERM_KEYS) for j in range(10)] + [
        ("a", ["ACL", "LOG"], length(5)),
    ],
    "a disabled default user makes new connections unauthenticated": [
        ("a", ["ACL", "SETUSER", "default", "off"], "OK"),
        ("new", ["PING"], Err("NOAUTH Authentication required.")),
        ("a", ["ACL", "SETUSER", "default", "on"], "OK"),
        ("new", ["PING"], "PONG"),
    ],
    "HELLO AUTH works for other users when default has no commands": [
        ("a", ["ACL", "SETUSER", "secure-user", ">supass", "on", "+@all"], "OK"),
        ("a", ["ACL", "SETUSER", "default", "-@all"], "OK"),
        ("c", ["HELLO", "2", "AUTH", "secure-user", "supass"], Has(lambda r: r[0] == b"server", "HELLO")),
        ("c", ["ACL", "WHOAMI"], b"secure-user"),
        ("new", ["PING"], noperm("ping")),
    ],
    "ACL HELP, GENPASS, DELUSER, LOAD without a file": [
        ("a", ["ACL", "HELP", "xxx"], Err("ERR wrong number of arguments for 'acl|help' command")),
        ("a", ["ACL", "HELP"], Has(lambda r: r[0].startswith("ACL <subcommand>"), "help")),
        ("a", ["ACL", "NOSUCH"], Err("ERR unknown subcommand 'NOSUCH'. Try ACL HELP.")),
        ("a", ["ACL", "GENPASS", "-236"], Err("ERR ACL GENPASS argument must be the number of bits for the output "
                                              "password, a positive number up to 4096")),
        ("a", ["ACL", "GENPASS", "5000"], Err("*ACL GENPASS argument must be the number*")),
        ("a", ["ACL", "GENPASS"], Has(lambda r: len(r) == 64 and int(r, 16) >= 0, "64 hex")),
        ("a", ["ACL", "GENPASS", "5"], Has(lambda r: len(r) == 2, "2 hex")),
        ("a", ["ACL", "SETUSER", "not_used", "on", ">passwd"], "OK"),
        ("a", ["ACL", "DELUSER", "not_used", "nobody"], 1),
        ("a", ["PING"], "PONG"),
        ("a", ["ACL", "DELUSER", "default"], Err("ERR The 'default' user cannot be removed")),
        ("a", ["ACL", "LOAD"], Err("*Redis instance is not configured to use an ACL file*")),
        ("a", ["ACL", "SAVE"], Err("*Redis instance is not configured to use an ACL file*")),
        ("a", ["ACL", "GETUSER", "nosuch"], None),
        ("a", ["ACL", "WHOAMI", "x"], Err("ERR wrong number of arguments for 'acl|whoami' command")),
    ],
    "deleting the user a client is using closes it": [
        ("a", ["ACL", "SETUSER", "using", "on", "+acl", ">passwd"], "OK"),
        ("c", ["AUTH", "using", "passwd"], "OK"),
        ("c", ["ACL", "DELUSER", "using"], 1),
        ("c", ["PING"], CLOSED),
    ],
    "ACL USERS and LIST": [
        ("a", ["ACL", "SETUSER", "zed"], "OK"),
        ("a", ["ACL", "SETUSER", "amy", "on", ">x", "~k*", "&c", "+get"], "OK"),
        ("a", ["ACL", "USERS"], [b"amy", b"default", b"zed"]),
        ("a", ["ACL", "LIST"], [
            b"user amy on #2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881 ~k* resetchannels &c -@all +get",
            b"user default on nopass sanitize-payload ~* &* +@all",
            b"user zed off resetchannels -@all"]),
    ],
    # --- acl-v2.tcl ----------------------------------------------------------------
    "multiple selectors": [
        ("a", ["ACL", "SETUSER", "selector-1", "on", "-@all", "resetkeys", "nopass"], "OK"),
        ("c", ["AUTH", "selector-1", "password"], "OK"),
        ("c", ["PING"], Err("*NOPERM*command*")),
        ("c", ["SET", "write::foo", "bar"], Err("*NOPERM*command*")),
        ("a", ["ACL", "SETUSER", "selector-1", "(+@write ~write::*)", "(+@read ~read::*)"], "OK"),
        ("c", ["SET", "write::foo", "bar"], "OK"),
        ("c", ["GET", "read::foo"], None),
        ("c", ["GET", "write::foo"], NOPERM_KEYS),
        ("c", ["SET", "read::foo", "bar"], NOPERM_KEYS),
    ],
    "selectors start with no permissions": [
        ("a", ["ACL", "SETUSER", "selector-default", "reset", "()"], "OK"),
        ("a", ["ACL", "GETUSER", "selector-default"], selector_count(1)),
        ("a", ["ACL", "GETUSER", "selector-default"], selector(0, "keys", "")),
        ("a", ["ACL", "GETUSER", "selector-default"], selector(0, "channels", "")),
        ("a", ["ACL", "GETUSER", "selector-default"], selector(0, "commands", "-@all")),
        ("a", ["ACL", "SETUSER", "selector-del", "on", "(~added-selector)"], "OK"),
        ("a", ["ACL", "GETUSER", "selector-del"], selector(0, "keys", "~added-selector")),
        ("a", ["ACL", "SETUSER", "selector-del", "clearselectors"], "OK"),
        ("a", ["ACL", "GETUSER", "selector-del"], selector_count(0)),
    ],
    "selector syntax": [
        ("a", ["ACL", "SETUSER", "selector-syntax", "on", "(this-is-invalid)"],
         modifier("(this-is-invalid)", "Syntax error")),
        ("a", ["ACL", "SETUSER", "selector-syntax", "on", "(&* &fail)"],
         Err("ERR Error in ACL SETUSER modifier '(&* &fail)': Adding a pattern after the*")),
        ("a", ["ACL", "GETUSER", "selector-syntax"], None),
        ("a", ["ACL", "SETUSER", "selector-2", "(~key1 +get )", "( ~key2 +get )", "( ~key3 +get)", "(~key4 +get)"], "OK"),
        ("a", ["ACL", "SETUSER", "selector-2", "(~key5", "+get", ")", "(", "~key6", "+get", ")", "(", "~key7", "+get)",
               "(~key8", "+get)"], "OK"),
    ] + [("a", ["ACL", "GETUSER", "selector-2"], selector(i, "keys", "~key%d" % (i + 1))) for i in range(8)] + [
        ("a", ["ACL", "SETUSER", "invalid-selector", " () "], Err("ERR*Syntax error*")),
        ("a", ["ACL", "SETUSER", "invalid-selector", "("], Err("ERR Unmatched parenthesis in acl selector starting at '('.")),
        ("a", ["ACL", "SETUSER", "invalid-selector", ")"], Err("ERR*Syntax error")),
    ],
    "read and write key permissions": [
        ("a", ["SET", "readstr", "bar"], "OK"),
        ("a", ["SET", "read", "bar"], "OK"),
        ("a", ["ACL", "SETUSER", "key-permission-R", "on", "nopass", "%R~read*", "+@all"], "OK"),
        ("c", ["AUTH", "key-permission-R", "password"], "OK"),
        ("c", ["PING"], "PONG"),
        ("c", ["GET", "readstr"], b"bar"),
        ("c", ["SET", "readstr", "bar"], NOPERM_KEYS),
        ("c", ["GET", "notread"], NOPERM_KEYS),
        ("a", ["ACL", "SETUSER", "key-permission-W", "on", "nopass", "%W~write*", "+@all"], "OK"),
        ("c", ["AUTH", "key-permission-W", "password"], "OK"),
        ("c", ["LPUSH", "writelist", "10"], 1),
        ("c", ["GET", "writestr"], NOPERM_KEYS),
        ("c", ["LPUSH", "notwrite", "10"], NOPERM_KEYS),
        ("a", ["ACL", "SETUSER", "key-permission-RW", "on", "nopass", "%R~read*", "%W~write*", "+@all"], "OK"),
        ("c", ["AUTH", "key-permission-RW", "password"], "OK"),
        ("c", ["COPY", "read", "write"], 1),
        ("c", ["COPY", "write", "read"], NOPERM_KEYS),
        ("a", ["ACL", "SETUSER", "key-permission-RW", "%~"], modifier("%~", "Syntax error")),
        ("a", ["ACL", "SETUSER", "key-permission-RW", "%"], modifier("%", "Syntax error")),
        ("a", ["ACL", "SETUSER", "key-permission-RW2", "on", "nopass", "%RW~", "+@all"], "OK"),
        ("c", ["AUTH", "key-permission-RW2", "password"], "OK"),
        ("c", ["SET", "x", "5"], NOPERM_KEYS),
        ("a", ["ACL", "SETUSER", "key-permission-RW3", "on", "nopass", "%RW", "+@all"], "OK"),
        ("a", ["ACL", "LIST"], list_line("key-permission-RW3", "user key-permission-RW3 on nopass ~ resetchannels +@all")),
        ("a", ["ACL", "SETUSER", "g2", "%RW~*"], "OK"),
        ("a", ["ACL", "GETUSER", "g2"], field("keys", "~*")),
    ],
    "read and write permissions in different selectors do not add up": [
        ("a", ["SET", "readstr", "bar"], "OK"),
        ("a", ["ACL", "SETUSER", "sel", "on", "nopass", "(%R~read* +@all)", "(%W~write* +@all)"], "OK"),
        ("c", ["AUTH", "sel", "password"], "OK"),
        ("c", ["LPUSH", "writelist", "10"], 1),
        ("c", ["GET", "writestr"], NOPERM_KEYS),
        ("c", ["LPUSH", "notwrite", "10"], NOPERM_KEYS),
        ("c", ["GET", "readstr"], b"bar"),
        ("c", ["SET", "readstr", "bar"], NOPERM_KEYS),
        ("c", ["GET", "notread"], NOPERM_KEYS),
        ("c", ["COPY", "readstr", "write"], NOPERM_KEYS),
        ("c", ["COPY", "write", "readstr"], NOPERM_KEYS),
    ],
    "SET with separate read and write permissions": [
        ("a", ["ACL", "SETUSER", "r", "on", "nopass", "%R~read*", "+@all"], "OK"),
        ("c", ["AUTH", "r", "password"], "OK"),
        ("c", ["GET", "readstr"], None),
        ("c", ["SET", "readstr", "bar"], NOPERM_KEYS),
        ("c", ["SET", "readstr", "bar", "get"], NOPERM_KEYS),
        ("c", ["SET", "readstr", "bar", "ex", "100"], NOPERM_KEYS),
        ("c", ["SET", "readstr", "bar", "keepttl", "nx"], NOPERM_KEYS),
        ("a", ["ACL", "SETUSER", "w", "on", "nopass", "%W~write*", "+@all"], "OK"),
        ("c", ["AUTH", "w", "password"], "OK"),
        ("c", ["SET", "writestr", "bar"], "OK"),
        ("c", ["SET", "writestr", "get"], "OK"),
        ("c", ["SET", "get", "writestr"], NOPERM_KEYS),
        ("c", ["SET", "writestr", "bar", "get"], NOPERM_KEYS),
        ("c", ["SET", "writestr", "bar", "get", "ex", "100"], NOPERM_KEYS),
        ("c", ["SET", "writestr", "bar", "ex", "get"], NOPERM_KEYS),
        ("a", ["ACL", "SETUSER", "rw", "on", "nopass", "%RW~readwrite*", "+@all"], "OK"),
        ("c", ["AUTH", "rw", "password"], "OK"),
        ("c", ["SET", "readwrite_str", "bar", "ex", "get"], Err("ERR * not an integer *")),
        ("c", ["SET", "readwrite_str", "bar"], "OK"),
        ("c", ["SET", "readwrite_str", "bar2", "get"], b"bar"),
        ("c", ["SET", "readwrite_str", "bar3", "get", "ex", "10"], b"bar2"),
    ],
    "BITFIELD with separate read and write permissions": [
        ("a", ["ACL", "SETUSER", "r", "on", "nopass", "%R~read*", "+@all"], "OK"),
        ("c", ["AUTH", "r", "password"], "OK"),
        ("c", ["BITFIELD", "readstr", "get", "u4", "0"], [0]),
        ("c", ["BITFIELD", "readstr", "set", "u4", "0", "1"], NOPERM_KEYS),
        ("c", ["BITFIELD", "readstr", "get", "u4", "0", "set", "u4", "0", "1"], NOPERM_KEYS),
        ("c", ["BITFIELD", "readstr", "incrby", "u4", "0", "1"], NOPERM_KEYS),
        ("a", ["ACL", "SETUSER", "w", "on", "nopass", "%W~write*", "+@all"], "OK"),
        ("c", ["AUTH", "w", "password"], "OK"),
        ("c", ["BITFIELD", "writestr", "get", "u4", "0"], NOPERM_KEYS),
        ("c", ["BITFIELD", "writestr", "set", "u4", "0", "1"], NOPERM_KEYS),
        ("a", ["ACL", "SETUSER", "rw", "on", "nopass", "%RW~readwrite*", "+@all"], "OK"),
        ("c", ["AUTH", "rw", "password"], "OK"),
        ("c", ["BITFIELD", "readwrite_str", "set", "u4", "0", "1"], [0]),
        ("c", ["BITFIELD", "readwrite_str", "incrby", "u4", "0", "1"], [2]),
    ],
    "ACL LOG names the relevant item with selectors": [
        ("a", ["ACL", "SETUSER", "sel", "on", "nopass", "+mget", "~key", "(+mget ~key ~otherkey)"], "OK"),
        ("c", ["AUTH", "sel", "password"], "OK"),
        ("c", ["GET", "key"], Err("*NOPERM*command*")),
        ("a", ["ACL", "LOG"], log_entry(username="sel", context="toplevel", reason="command", object="get")),
        ("a", ["ACL", "LOG", "RESET"], "OK"),
        ("c", ["MGET", "otherkey", "someotherkey"], NOPERM_KEYS),
        ("a", ["ACL", "LOG"], log_entry(reason="key", object="someotherkey")),
        ("a", ["ACL", "LOG", "RESET"], "OK"),
        ("c", ["MGET", "key", "otherkey", "someotherkey"], NOPERM_KEYS),
        ("a", ["ACL", "LOG"], log_entry(reason="key", object="someotherkey")),
    ],
    "GETUSER with selectors, and LIST": [
        ("a", ["ACL", "SETUSER", "selector-info", "-@all", "+get", "resetchannels", "&channel1", "%R~foo1", "%W~bar1",
               "~baz1"], "OK"),
        ("a", ["ACL", "SETUSER", "selector-info", "(-@all +set resetchannels &channel2 %R~foo2 %W~bar2 ~baz2)"], "OK"),
        ("a", ["ACL", "GETUSER", "selector-info"], field("keys", "%R~foo1 %W~bar1 ~baz1")),
        ("a", ["ACL", "GETUSER", "selector-info"], field("channels", "&channel1")),
        ("a", ["ACL", "GETUSER", "selector-info"], field("commands", "-@all +get")),
        ("a", ["ACL", "GETUSER", "selector-info"], field("flags", [b"off"])),
        ("a", ["ACL", "GETUSER", "selector-info"], selector(0, "keys", "%R~foo2 %W~bar2 ~baz2")),
        ("a", ["ACL", "GETUSER", "selector-info"], selector(0, "channels", "&channel2")),
        ("a", ["ACL", "GETUSER", "selector-info"], selector(0, "commands", "-@all +set")),
        ("a", ["ACL", "LIST"], list_line("selector-info", "user selector-info off %R~foo1 %W~bar1 ~baz1 resetchannels "
                                                          "&channel1 -@all +get (%R~foo2 %W~bar2 ~baz2 resetchannels "
                                                          "&channel2 -@all +set)")),
        ("a", ["ACL", "SETUSER", "selector-rw-info", "%R~foo", "%W~foo", "%RW~bar"], "OK"),
        ("a", ["ACL", "GETUSER", "selector-rw-info"], field("keys", "~foo ~bar")),
    ],
    "DRYRUN": [
        ("a", ["ACL", "SETUSER", "command-test", "+@all", "%R~read*", "%W~write*", "%RW~rw*"], "OK"),
        ("a", ["ACL", "DRYRUN", "command-test", "GET", "read"], "OK"),
        ("a", ["ACL", "DRYRUN", "not-a-user", "GET", "read"], Err("ERR User 'not-a-user' not found")),
        ("a", ["ACL", "DRYRUN", "command-test", "not-a-command", "read"], Err("ERR Command 'not-a-command' not found")),
        ("a", ["ACL", "DRYRUN", "command-test", "SET", "v"], Err("ERR wrong number of arguments for 'set' command")),
    ] + dryrun_rows("command-test", [
        (["SORT", "read", "STORE", "write"], "OK"),
        (["SORT", "read", "STORE", "read"], key_msg("read")),
        (["SORT", "write", "STORE", "write"], key_msg("write")),
        (["EVAL", "", "1", "rw1"], "OK"),
        (["EVAL", "", "1", "read"], key_msg("read")),
        (["EVAL_RO", "", "1", "rw1"], "OK"),
        (["EVAL_RO", "", "1", "read"], "OK"),
        (["EVAL", "", "0", "read"], "OK"),
        (["EVAL", "", "-1", "read"], "OK"),
        (["EVAL", "", "3", "rw", "rw"], "OK"),
        (["EVAL", "", "3", "rw", "read"], "OK"),
        (["GEORADIUS", "read", "longitude", "latitude", "radius", "M", "STOREDIST", "write"], "OK"),
        (["GEORADIUS", "read", "longitude", "latitude", "radius", "M"], "OK"),
        (["GEORADIUS", "read1", "longitude", "latitude", "radius", "M", "STOREDIST", "read2"], key_msg("read2")),
        (["GEORADIUS", "write1", "longitude", "latitude", "radius", "M", "STOREDIST", "write2"], key_msg("write1")),
        (["GEORADIUS", "read", "longitude", "latitude", "radius", "M", "STORE", "write"], "OK"),
        (["GEORADIUS", "read1", "longitude", "latitude", "radius", "M", "STORE", "read2"], key_msg("read2")),
        (["HEXISTS", "read", "foo"], "OK"),
        (["HEXISTS", "write", "foo"], "OK"),
        (["HEXISTS", "nothing", "foo"], key_msg("nothing")),
        (["HSTRLEN", "write", "foo"], "OK"),
        (["SISMEMBER", "write", "foo"], "OK"),
        (["SINTERCARD", "2", "read", "read"], "OK"),
        (["SINTERCARD", "2", "write", "read"], key_msg("write")),
        (["ZCOUNT", "write", "0", "1"], key_msg("write")),
        (["PFCOUNT", "read", "read"], "OK"),
        (["PFCOUNT", "write", "read"], key_msg("write")),
        (["ZINTERCARD", "2", "nothing", "read"], key_msg("nothing")),
        (["TOUCH", "write"], "OK"),
        (["EXISTS", "write"], "OK"),
        (["EXISTS", "nothing"], key_msg("nothing")),
        (["MEMORY", "USAGE", "write"], "OK"),
        (["MEMORY", "USAGE", "nothing"], key_msg("nothing")),
        (["TYPE", "read"], "OK"),
        (["MSET", "rw1", "a", "write2", "b"], "OK"),
        (["MSET", "rw1", "a", "read", "b"], key_msg("read")),
        (["RENAME", "rw1", "write2"], "OK"),
        (["RENAME", "write1", "rw2"], key_msg("write1")),
    ] + [([cmd, key], "OK") for cmd in ("STRLEN", "HLEN", "LLEN", "SCARD", "ZCARD") for key in ("read", "write", "rw")]
      + [([cmd, "nothing"], key_msg("nothing")) for cmd in ("STRLEN", "HLEN", "LLEN", "SCARD", "ZCARD")]) + [
        ("a", ["ACL", "SETUSER", "command-test", "-@all"], "OK"),
    ] + dryrun_rows("command-test", [
        (["SET", "somekey", "somevalue"], b"This user has no permissions to run the 'set' command"),
        (["GET", "somekey"], b"This user has no permissions to run the 'get' command"),
    ]),
    "sharded channel permissions": [
        ("a", ["ACL", "SETUSER", "test-channels", "+@all", "resetchannels", "&channel"], "OK"),
    ] + dryrun_rows("test-channels", [
        (["SPUBLISH", "channel", "foo"], "OK"),
        (["SSUBSCRIBE", "channel"], "OK"),
        (["SUNSUBSCRIBE"], "OK"),
        (["SUNSUBSCRIBE", "otherchannel"], "OK"),
        (["SPUBLISH", "otherchannel", "foo"], b"This user has no permissions to access the 'otherchannel' channel"),
        (["SSUBSCRIBE", "otherchannel", "foo"], b"This user has no permissions to access the 'otherchannel' channel"),
        (["PSUBSCRIBE", "channel", "chan*"], b"This user has no permissions to access the 'chan*' channel"),
    ]),
    "SORT BY and GET need access to every key": [
        ("a", ["SET", "v1", "1"], "OK"),
        ("a", ["LPUSH", "mylist", "1"], 1),
        ("a", ["ACL", "SETUSER", "test-sort-acl", "on", "nopass", "(+sort ~mylist)"], "OK"),
        ("c", ["AUTH", "test-sort-acl", "nopass"], "OK"),
        ("c", ["SORT", "mylist", "BY", "v*"], Err("ERR BY option of SORT denied due to insufficient ACL permissions.")),
        ("c", ["SORT", "mylist", "GET", "v*"], Err("ERR GET option of SORT denied due to insufficient ACL permissions.")),
        ("c", ["SORT", "mylist", "BY", "nosort"], [b"1"]),
        ("a", ["ACL", "SETUSER", "test-sort-acl", "(+sort ~mylist ~v*)"], "OK"),
        ("c", ["SORT", "mylist", "BY", "v*"], Err("ERR BY option of SORT denied due to insufficient ACL permissions.")),
        ("a", ["ACL", "SETUSER", "test-sort-acl", "(+sort ~mylist %W~*)"], "OK"),
        ("c", ["SORT", "mylist", "GET", "v*"], Err("ERR GET option of SORT denied due to insufficient ACL permissions.")),
        ("a", ["ACL", "SETUSER", "test-sort-acl", "(+sort ~mylist %R~*)"], "OK"),
        ("c", ["SORT", "mylist", "BY", "v*"], [b"1"]),
    ],
    # --- other.tcl, scripting.tcl ------------------------------------------------------
    "RESET clears the authenticated state": [
        ("a", ["ACL", "SETUSER", "user1", "on", ">secret", "+@all"], "OK"),
        ("c", ["AUTH", "user1", "secret"], "OK"),
        ("c", ["ACL", "WHOAMI"], b"user1"),
        ("c", ["RESET"], "RESET"),
        ("c", ["ACL", "WHOAMI"], b"default"),
    ],
    "redis.acl_check_cmd": [
        ("a", ["ACL", "SETUSER", "bob", "on", ">123", "+@scripting", "+set", "~x*"], "OK"),
        ("c", ["AUTH", "bob", "123"], "OK"),
        ("c", ["EVAL", "return redis.acl_check_cmd('set','xx',1)", "1", "xx"], 1),
        ("c", ["EVAL", "return redis.acl_check_cmd('hset','xx','f',1)", "1", "xx"], None),
        ("c", ["EVAL", "return redis.acl_check_cmd('set','yy',1)", "0"], None),
        ("c", ["EVAL", "return redis.acl_check_cmd('invalid-cmd','arg')", "0"],
         Err("ERR *Invalid command passed to redis.acl_check_cmd()*")),
    ],
    "CLIENT LIST names the user, CLIENT KILL USER": [
        ("a", ["ACL", "SETUSER", "lister", "on", "nopass", "+@all"], "OK"),
        ("c", ["AUTH", "lister", "x"], "OK"),
        ("c", ["CLIENT", "INFO"], Has(lambda r: b" user=lister " in r, "user=lister")),
        ("a", ["CLIENT", "KILL", "USER", "nobody"], Err("ERR No such user 'nobody'")),
        ("a", ["CLIENT", "KILL", "USER", "lister"], 1),
        ("c", ["PING"], CLOSED),
    ],
    "AUTH forms": [
        ("c", ["AUTH", "x"], Err("ERR AUTH <password> called without any password configured for the default user. "
                                 "Are you sure your configuration is correct?")),
        ("c", ["AUTH", "default", "anything"], "OK"),
        ("c", ["AUTH", "nobody", "x"], Err("WRONGPASS invalid username-password pair or user is disabled.")),
        ("a", ["ACL", "SETUSER", "default", "resetpass", ">pw"], "OK"),
        ("new", ["PING"], Err("NOAUTH Authentication required.")),
        ("c", ["AUTH", "pw"], "OK"),
        ("c", ["AUTH", "default", "pw"], "OK"),
    ],
}

# "ACL GETUSER provides reasonable results": every category alone, on top of +@all and of -@all.
for _category in ("keyspace read write set sortedset list hash string bitmap hyperloglog geo stream pubsub admin fast "
                  "slow blocking dangerous connection transaction scripting").split():
    CASES["one category: %s" % _category] = [
        ("a", ["ACL", "SETUSER", "additive", "reset", "+@all", "-@" + _category], "OK"),
        ("a", ["ACL", "GETUSER", "additive"], field("commands", "+@all -@" + _category)),
        ("a", ["ACL", "SETUSER", "restrictive", "reset", "-@all", "+@" + _category], "OK"),
        ("a", ["ACL", "GETUSER", "restrictive"], field("commands", "-@all +@" + _category)),
    ]


ADMIN = "acl-test-admin"  # the table's own admin: it survives any case's changes to `default`


@pytest.fixture(scope="module")
def acl_server():
    s = Server().start()
    a = s.raw()
    assert a.command("ACL", "SETUSER", ADMIN, "on", "nopass", "~*", "&*", "+@all") == "OK"
    a.close()
    yield s
    fail_on(s.cleanup(), "the module's server")


def reset_acl(server):
    """Every user but `default` (and the table's admin) gone, `default` as
    Redis starts it, ACL LOG empty, no keys. Returns the admin connection."""
    a = server.raw()
    assert a.command("AUTH", ADMIN, "x") == "OK"
    assert a.command("ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*", "+@all") == "OK"
    for user in a.command("ACL", "USERS"):
        if user not in (b"default", ADMIN.encode()):
            a.command("ACL", "DELUSER", user)
    a.command("ACL", "LOG", "RESET")
    a.command("CONFIG", "SET", "acllog-max-len", "128")
    a.command("FLUSHALL")
    return a


def without_admin(reply):
    return [item for item in reply if ADMIN.encode() not in item]


@pytest.mark.parametrize("name", list(CASES))
def test_acl_case(acl_server, name):
    admin = reset_acl(acl_server)
    client = acl_server.raw()
    try:
        for number, (who, command, expected) in enumerate(CASES[name]):
            conn = {"a": admin, "c": client}.get(who) or acl_server.raw()
            where = "step %d: %s %r" % (number, who, command)
            if expected == CLOSED:
                assert conn.is_closed(), "%s: expected the connection to be closed" % where
                continue
            reply = conn.command(*command)
            if command[:2] in (["ACL", "USERS"], ["ACL", "LIST"]):
                reply = without_admin(reply)
            if isinstance(expected, (Err, Has)):
                assert expected.check(reply), "%s: expected %r, got %r" % (where, expected, reply)
            else:
                assert reply == expected, "%s: expected %r, got %r" % (where, expected, reply)
            if who == "new":
                conn.close()
    finally:
        client.close()
        admin.close()


# --- end to end: tools, clients, files, restarts ----------------------------------------

def test_redis_cli_user_and_pass(fresh_server):
    require_tool("redis-cli")
    s = fresh_server()
    a = s.raw()
    assert a.command("ACL", "SETUSER", "cli", "on", ">clipass", "~cli:*", "+@all") == "OK"
    base = ["redis-cli", "-p", str(s.port), "--user", "cli", "--pass", "clipass", "--no-auth-warning"]
    assert subprocess.run(base + ["SET", "cli:1", "v"], capture_output=True, text=True, timeout=10).stdout == "OK\n"
    assert subprocess.run(base + ["ACL", "WHOAMI"], capture_output=True, text=True, timeout=10).stdout == "cli\n"
    out = subprocess.run(base + ["SET", "other", "v"], capture_output=True, text=True, timeout=10)
    assert "NOPERM this user has no permissions to access one of the keys used as arguments" in out.stdout + out.stderr
    wrong = subprocess.run(["redis-cli", "-p", str(s.port), "--user", "cli", "--pass", "nope", "--no-auth-warning",
                            "PING"], capture_output=True, text=True, timeout=10)
    assert "WRONGPASS" in wrong.stdout + wrong.stderr


def test_redis_py_username(fresh_server):
    s = fresh_server()
    assert s.raw().command("ACL", "SETUSER", "app", "on", ">apppass", "~app:*", "+@read", "+@write", "+ping") == "OK"
    r = redis.Redis(port=s.port, username="app", password="apppass")
    assert r.ping()
    assert r.set("app:k", "v") and r.get("app:k") == b"v"
    with pytest.raises(redis.exceptions.NoPermissionError):
        r.get("other")
    with pytest.raises(redis.exceptions.NoPermissionError):
        r.config_get("maxmemory")
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=s.port, username="app", password="wrong").ping()
    r3 = redis.Redis(port=s.port, username="app", password="apppass", protocol=3)
    assert r3.get("app:k") == b"v"


def test_acl_save_load_and_restart(fresh_server):
    s = fresh_server(config_text="aclfile users.acl\n", start=False)
    aclfile = os.path.join(s.dir if REDIS else s.data_dir(), "users.acl")
    os.makedirs(os.path.dirname(aclfile), exist_ok=True)
    with open(aclfile, "w") as f:
        f.write("user alice on allcommands allkeys &* >alice\nuser bob on -@all +@set +acl ~set* &* >bob\n"
                "user default on nopass ~* &* +@all\n")
    # A relative aclfile is under dir, as Redis's (it changes into dir).
    s.start()
    c = s.raw()
    assert c.command("AUTH", "bob", "bob") == "OK"
    assert c.command("SADD", "set", "1", "2", "3") == 3
    assert c.command("SET", "key", "value") == ("error", "NOPERM this user has no permissions to run the 'set' command")
    assert c.command("AUTH", "alice", "alice") == "OK"
    assert c.command("ACL", "SETUSER", "eve", "+get", "allkeys", ">eve", "on") == "OK"
    assert c.command("ACL", "SAVE") == "OK"
    saved = open(aclfile).read()
    assert "user eve on #" in saved and "user alice on #" in saved
    assert not [f for f in os.listdir(os.path.dirname(aclfile)) if f.startswith("users.acl.")]  # no temp file left
    # ACL LOAD frees the users it replaces: their clients are closed.
    assert c.command("ACL", "LOAD") == "OK"
    assert c.is_closed()
    d = s.raw()
    assert d.command("AUTH", "eve", "eve") == "OK"
    assert d.command("GET", "key") is None
    assert d.command("SET", "key", "v") == ("error", "NOPERM this user has no permissions to run the 'set' command")
    # A bad file changes nothing.
    with open(aclfile, "a") as f:
        f.write("user alice on nopass ~* -@all\n")
    d = s.raw()
    reply = d.command("ACL", "LOAD")
    assert reply[0] == "error" and "Duplicate user 'alice' found" in reply[1]
    assert as_dict(d.command("ACL", "GETUSER", "alice"))["commands"] == b"+@all"
    with open(aclfile, "w") as f:
        f.write(saved)
    # A restart keeps the users of the file.
    s.restart()
    e = s.raw()
    assert e.command("AUTH", "eve", "eve") == "OK"
    assert e.command("GET", "key") is None
    assert e.command("DEL", "key") == ("error", "NOPERM this user has no permissions to run the 'del' command")
    assert sorted(s.raw().command("ACL", "USERS")) == [b"alice", b"bob", b"default", b"eve"]


def test_users_from_config_lines(fresh_server):
    s = fresh_server(config_text='user default on nopass ~* +@all -flushdb\nuser worker on >w ~jobs:* +@list +ping\n')
    c = s.raw()
    assert c.command("FLUSHDB") == ("error", "NOPERM this user has no permissions to run the 'flushdb' command")
    # Redis 7.0's acl-pubsub-default is resetchannels: a config user without & has no channels.
    assert c.command("PUBLISH", "foo", "x") == ("error", "NOPERM this user has no permissions to access one of the "
                                                         "channels used as arguments")
    assert c.command("AUTH", "worker", "w") == "OK"
    assert c.command("LPUSH", "jobs:1", "a") == 1
    assert c.command("GET", "jobs:1") == ("error", "NOPERM this user has no permissions to run the 'get' command")


def test_duplicate_config_users_stop_the_start(fresh_server):
    s = fresh_server(config_text="user foo on\nuser foo off\n", start=False)
    with pytest.raises(RuntimeError):
        s.start()  # refused before it listens: no client connects
    assert "Duplicate user" in s.log()


def test_acl_pubsub_default_allchannels(fresh_server):
    s = fresh_server(args=["--acl-pubsub-default", "allchannels"])
    a = s.raw()
    assert a.command("ACL", "SETUSER", "pub", "on", "nopass", "+@all") == "OK"
    assert as_dict(a.command("ACL", "GETUSER", "pub"))["channels"] == b"&*"
    assert a.command("ACL", "SETUSER", "one", "&test") == ("error", "ERR Error in ACL SETUSER modifier '&test': Adding a "
        "pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try "
        "'resetchannels' to start with an empty list of channels")
    assert a.command("CONFIG", "SET", "acl-pubsub-default", "resetchannels") == "OK"
    assert as_dict(a.command("ACL", "GETUSER", "pub"))["channels"] == b"&*"  # existing users keep theirs
    assert a.command("ACL", "SETUSER", "later") == "OK"
    assert as_dict(a.command("ACL", "GETUSER", "later"))["channels"] == b""


def test_requirepass_is_the_default_users_password(fresh_server):
    s = fresh_server(args=["--requirepass", "pw"])
    c = s.raw()
    assert c.command("PING") == ("error", "NOAUTH Authentication required.")
    assert c.command("AUTH", "default", "pw") == "OK"
    assert as_dict(c.command("ACL", "GETUSER", "default"))["passwords"] == [
        b"30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4"]
    assert c.command("CONFIG", "SET", "requirepass", "") == "OK"
    assert as_dict(c.command("ACL", "GETUSER", "default"))["flags"] == [b"on", b"nopass"]
    assert s.raw().command("PING") == "PONG"


# --- this server's additions: cache rights, failed-AUTH bound, listener users ------------

TENANTS = ("user tenant-a on >pa ~* &* +@all resetcaches cache:tenant-a cache:tenant-a-* "
           "defaultcache:tenant-a\n"
           "user tenant-b on >pb ~* &* +@all -@dangerous resetcaches cache:tenant-b defaultcache:tenant-b\n"
           "user nowhere on >pn ~* &* +@all resetcaches\n")


@pytest.fixture
def tenants(fresh_server):
    return fresh_server(config_text=TENANTS)


@pytest.mark.kvcache_only
def test_a_tenant_lands_in_its_cache_and_stays_there(tenants):
    a, b = tenants.raw(), tenants.raw()
    assert a.command("AUTH", "tenant-a", "pa") == "OK"
    assert b.command("AUTH", "tenant-b", "pb") == "OK"
    assert a.command("SET", "k", "from-a") == "OK"
    assert b.command("SET", "k", "from-b") == "OK"
    assert a.command("GET", "k") == b"from-a" and b.command("GET", "k") == b"from-b"
    assert a.command("CLIENT", "INFO").split(b" db=")[1].startswith(b"tenant-a ")
    denied_b = ("error", "NOPERM this user has no permissions to access the 'tenant-b' cache")
    assert a.command("SELECT", "tenant-b") == denied_b
    assert a.command("SELECT", "0") == ("error", "NOPERM this user has no permissions to access the 'db0' cache")
    assert a.command("SELECT", "tenant-a-sessions") == "OK"
    assert a.command("SET", "s", "1") == "OK"
    assert a.command("MOVE", "s", "tenant-a") == 1
    assert a.command("MOVE", "s", "tenant-b") == denied_b
    assert a.command("COPY", "s", "s2", "DB", "tenant-b") == denied_b
    assert a.command("SWAPDB", "tenant-a", "tenant-b") == denied_b
    # FLUSHALL, MONITOR, CLIENT LIST/KILL, SLOWLOG see every cache or client: refused to a confined user.
    for command in (["FLUSHALL"], ["MONITOR"], ["CLIENT", "LIST"], ["CLIENT", "KILL", "ID", "1"], ["SLOWLOG", "GET"]):
        reply = a.command(*command)
        assert reply[0] == "error" and reply[1].startswith("NOPERM this user is confined to some caches"), command
    assert b.command("GET", "k") == b"from-b"
    # INFO caches shows a confined user its own caches only.
    caches = a.command("INFO", "caches").decode()
    assert "cache_tenant-a:" in caches and "cache_tenant-b:" not in caches
    admin = tenants.raw()
    assert "cache_tenant-b:" in admin.command("INFO", "caches").decode()
    assert admin.command("SELECT", "tenant-b") == "OK" and admin.command("GET", "k") == b"from-b"


@pytest.mark.kvcache_only
def test_every_key_command_is_confined_to_the_users_caches(tenants):
    """Table-driven from the command table: every command with a key
    argument, run by a user with no cache of its own, is refused."""
    c = tenants.raw()
    assert c.command("AUTH", "nowhere", "pn") == "OK"
    admin = tenants.raw()
    checked = 0
    for entry in admin.command("COMMAND"):
        name, arity, first_key = entry[0].decode(), entry[1], entry[3]
        if first_key <= 0 or name in ("auth", "hello"):
            continue
        argc = arity if arity > 0 else -arity
        args = [name] + ["k%d" % i for i in range(1, max(argc, 2))]
        reply = c.command(*args)
        assert reply[0] == "error" and reply[1].startswith("NOPERM this user has no permissions to access the '") \
            and reply[1].endswith("' cache"), (args, reply)
        checked += 1
    assert checked > 100
    assert c.command("PING") == "PONG"  # connection commands still answer


@pytest.mark.kvcache_only
def test_cache_rules_in_acl_list_and_getuser(tenants):
    a = tenants.raw()
    line = [l for l in a.command("ACL", "LIST") if l.startswith(b"user tenant-a ")][0].decode()
    assert line.endswith("resetcaches cache:tenant-a cache:tenant-a-* defaultcache:tenant-a")
    assert as_dict(a.command("ACL", "GETUSER", "tenant-a"))["caches"] == \
        b"resetcaches cache:tenant-a cache:tenant-a-* defaultcache:tenant-a"
    assert a.command("ACL", "SETUSER", "tenant-a", "allcaches") == "OK"
    assert b" cache:" not in [l for l in a.command("ACL", "LIST") if l.startswith(b"user tenant-a ")][0]


@pytest.mark.kvcache_only
def test_listener_user(fresh_server):
    from conftest import free_port
    port = free_port()
    s = fresh_server(config_text=TENANTS.replace("user tenant-a on >pa", "user tenant-a on nopass")
                     + "listener-user %d tenant-a\n" % port, start=False)
    s.port = port
    s.start()
    c = s.raw()
    assert c.command("ACL", "WHOAMI") == b"tenant-a"
    assert c.command("SET", "k", "v") == "OK"
    assert c.command("CLIENT", "INFO").split(b" db=")[1].startswith(b"tenant-a ")


@pytest.mark.kvcache_only
def test_failed_auth_is_bounded_per_address(fresh_server):
    s = fresh_server(args=["--auth-max-failures", "3", "--auth-failure-window", "2",
                           "--auth-failure-exempt-loopback", "no"])
    c = s.raw()
    assert c.command("ACL", "SETUSER", "u", "on", ">right", "+@all") == "OK"
    for _ in range(3):
        assert c.command("AUTH", "u", "guess") == ("error", "WRONGPASS invalid username-password pair or user is disabled.")
    # The fourth try, even with the right password, is refused until the window ends.
    refused = c.command("AUTH", "u", "right")
    assert refused[0] == "error" and refused[1].startswith("ERR too many failed authentication attempts")
    assert s.raw().command("AUTH", "u", "right")[0] == "error"  # the address, not the connection
    time.sleep(2.2)
    assert c.command("AUTH", "u", "right") == "OK"
    assert as_dict(c.command("ACL", "LOG")[0])["reason"] == b"auth"


README_EXAMPLE = """user default off
user admin on >admin-secret ~* &* +@all
user shop on >shop-secret ~* &* +@all -@dangerous resetcaches cache:shop cache:shop-* defaultcache:shop
user blog on >blog-secret ~post:* ~user:* +@read +@write +@keyspace -@dangerous resetcaches cache:blog defaultcache:blog
"""


@pytest.mark.kvcache_only
def test_the_readmes_two_tenants(fresh_server):
    s = fresh_server(config_text=README_EXAMPLE)
    anon = s.raw()
    assert anon.command("PING") == ("error", "NOAUTH Authentication required.")
    shop, blog, admin = s.raw(), s.raw(), s.raw()
    assert shop.command("AUTH", "shop", "shop-secret") == "OK"
    assert blog.command("AUTH", "blog", "blog-secret") == "OK"
    assert admin.command("AUTH", "admin", "admin-secret") == "OK"
    assert shop.command("SET", "cart:1", "x") == "OK"
    assert shop.command("SELECT", "shop-sessions") == "OK"
    assert shop.command("SELECT", "blog") == ("error", "NOPERM this user has no permissions to access the 'blog' cache")
    assert blog.command("SET", "post:1", "hello") == "OK"
    assert blog.command("SET", "cart:1", "y") == ("error", "NOPERM this user has no permissions to access one of the "
                                                           "keys used as arguments")
    assert blog.command("FLUSHALL") == ("error", "NOPERM this user has no permissions to run the 'flushall' command")
    assert admin.command("SELECT", "shop") == "OK" and admin.command("GET", "cart:1") == b"x"
    assert admin.command("SELECT", "blog") == "OK" and admin.command("GET", "post:1") == b"hello"
