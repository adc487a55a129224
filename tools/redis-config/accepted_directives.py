#!/usr/bin/env python3
"""Prints the Swift table of Redis 7.0's config directives that this server
accepts without acting on them (Sources/KVCacheServer/Config/
RedisAcceptedDirectives.swift), read from Redis's src/config.c: every
directive of Redis's standardConfig table that ConfigDirectives.swift does
not define, with Redis's type, bounds, default, aliases, and whether CONFIG
SET may change it (not IMMUTABLE_CONFIG) or CONFIG GET lists it
(HIDDEN_CONFIG).

    python3 tools/redis-config/accepted_directives.py SRC/config.c SRC/server.h OURS.txt > FILE
    python3 tools/redis-config/accepted_directives.py --conf SRC/config.c SRC/server.h OURS.txt

--conf prints instead the block of commented lines (each directive at its
default) that ends kvcache.conf.

OURS.txt: the names this server's own table defines, one per line (the
names a `CONFIG GET <name>` answers, aliases included). The Redis tree is
the one tools/redis-tests/run.py fetches (~/.cache/kvcache/redis-7.0.15-tests).
"""
import re
import sys

conf = "--conf" in sys.argv
config_c, server_h, ours_path = [a for a in sys.argv[1:] if a != "--conf"][:3]
conf_lines = []


def conf_word(value):
    value = str(value)
    return '""' if value == "" else ('"%s"' % value if " " in value else value)

src = open(config_c).read()
defines = {}
for path in (server_h, config_c):
    for m in re.finditer(r"^#define\s+([A-Z0-9_]+)\s+\(?([-0-9*x ()<]+?)\)?\s*(/\*.*)?$", open(path).read(), re.M):
        defines[m.group(1)] = m.group(2)
strings = dict(re.findall(r'^#define\s+([A-Z0-9_]+)\s+"([^"]*)"', open(server_h).read(), re.M))
ours = {line.strip() for line in open(ours_path) if line.strip()}
limits = {"INT_MAX": 2**31 - 1, "INT_MIN": -2**31, "LONG_MAX": 2**63 - 1, "LONG_MIN": -2**63,
          "LLONG_MAX": 2**63 - 1, "LLONG_MIN": -2**63, "UINT_MAX": 2**32 - 1, "ULONG_MAX": 2**63 - 1,
          "ULLONG_MAX": 2**63 - 1, "SIZE_MAX": 2**63 - 1}


def number(expr):
    expr = expr.strip()
    for _ in range(5):
        expr = re.sub(r"\b([A-Z][A-Z0-9_]+)\b", lambda m: str(limits.get(m.group(1), defines.get(m.group(1), m.group(1)))), expr)
    expr = re.sub(r"(\d)(U?L{0,2})\b", r"\1", expr)
    expr = re.sub(r"\b0(\d+)", r"0o\1", expr)  # C's octal
    value = eval(expr, {"__builtins__": {}})  # arithmetic on numbers only
    return min(int(value), 2**63 - 1)


enums = {}
for m in re.finditer(r"configEnum (\w+)\[\] = \{(.*?)\};", src, re.S):
    enums[m.group(1)] = re.findall(r'\{"([^"]+)",\s*([^}]+?)\}', m.group(2))


def args(call):
    out, depth, cur = [], 0, ""
    for ch in call:
        if ch == "," and depth == 0:
            out.append(cur.strip()); cur = ""; continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    out.append(cur.strip())
    return out


def swift_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


lines = []
table = src[src.index("standardConfig static_configs[]"):]
for m in re.finditer(r"create(Bool|String|SDS|Enum|Int|UInt|Long|ULong|LongLong|ULongLong|SizeT|SSizeT|TimeT|OffT|Special)Config\((.*?)\),\s*(/\*.*?\*/)?\s*$",
                     table, re.M):
    kind, a = m.group(1), args(m.group(2))
    name = a[0].strip('"')
    alias = a[1].strip('"') if a[1] != "NULL" else None
    if name in ours or (alias and alias in ours):
        continue
    flags = a[2]
    opts = []
    if alias:
        opts.append(f"aliases: [{swift_string(alias)}]")
    live = "IMMUTABLE_CONFIG" not in flags
    if kind == "Bool":
        default = "true" if a[4] == "1" else "false"
        call = f".acceptedYesNo({swift_string(name)}, {', '.join(opts + ['default: ' + default])}, live: {str(live).lower()})"
    elif kind in ("String", "SDS"):
        default = a[5].strip('"') if a[5] != "NULL" else ""
        default = strings.get(default, default)
        call = f".acceptedText({swift_string(name)}, {', '.join(opts + ['default: ' + swift_string(default)])}, live: {str(live).lower()})"
    elif kind == "Enum":
        table_ = enums[a[3]]
        default = next((n for n, v in table_ if v.strip() == a[5].strip()), table_[0][0])
        choices = ", ".join(swift_string(n) for n, _ in table_)
        multi = "MULTI_ARG_CONFIG" in flags
        call = (f".acceptedChoice({swift_string(name)}, {', '.join(opts + ['default: ' + swift_string(default)])}, "
                f"[{choices}], flags: {str(multi).lower()}, live: {str(live).lower()})")
    elif kind == "Special" and name == "oom-score-adj-values":
        # Three values, -2000 to 2000 each (master, replica, background child).
        call = (f'.accepted({swift_string(name)}, default: "0 200 800", words: true) {{ args, given in\n'
                '            guard args.count == 3, args.allSatisfy({ Int($0).map { (-2000...2000).contains($0) } ?? false }) else {\n'
                '                throw ConfigError("Invalid oom-score-adj-values")\n'
                '            }\n'
                '            return args.joined(separator: " ")\n'
                '        }')
    elif kind == "Special":
        print(f"skipped special directive {name}", file=sys.stderr)
        continue
    else:
        lower, upper, default, form = number(a[3]), number(a[4]), number(a[6]), a[7]
        if "MEMORY_CONFIG" in form:
            call = f".acceptedSize({swift_string(name)}, default: {default}, live: {str(live).lower()})"
        elif "OCTAL_CONFIG" in form:
            call = f".acceptedOctal({swift_string(name)}, default: {default}, live: {str(live).lower()})"
        else:
            call = (f".acceptedInteger({swift_string(name)}, {', '.join(opts + ['default: ' + str(default)])}, "
                    f"{lower}...{upper}, live: {str(live).lower()})")
    if "HIDDEN_CONFIG" in flags:
        call += ".hiddenFromPatterns"
    shown = {"Bool": lambda: "yes" if a[4] == "1" else "no"}.get(kind, lambda: None)()
    if shown is None:
        shown = re.search(r'default: ("[^"]*"|-?\d+)', call).group(1).strip('"')
    conf_lines.append("# %s %s" % (name, conf_word(shown)))
    if alias:
        conf_lines.append("# %s (the older name of %s)" % (alias, name))
    lines.append("        " + call + ",")

if conf:
    print("""
######################### REDIS SETTINGS WITHOUT EFFECT #######################

# Redis 7.0's other directives (clustering, TLS session and replica
# settings, RDB and AOF-rewrite tuning, active defragmentation, process
# titles, syslog...) are accepted with Redis's types, bounds and errors, and
# CONFIG GET answers them, so a redis.conf written for Redis starts this
# server; they change nothing here. Each at Redis's default (generated by
# tools/redis-config/accepted_directives.py --conf):
#""")
    print("\n".join(conf_lines))
    sys.exit(0)

print("""// Generated by tools/redis-config/accepted_directives.py from Redis 7.0.15's
// src/config.c; edit the script, not this file.

extension ServerConfig {
    /// Redis 7.0's directives that change nothing here (clustering, TLS
    /// session and replica settings, RDB and AOF-rewrite tuning, active
    /// defragmentation, process titles, syslog…): accepted from a config
    /// file, the command line and CONFIG SET with Redis's type, bounds and
    /// errors, answered by CONFIG GET, so that a redis.conf written for
    /// Redis, or Redis's own test suite, starts this server unchanged.
    static let redisAcceptedDirectives: [ConfigDirective] = [""")
print("\n".join(lines))
print("""    ]
}""")
