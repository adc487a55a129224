/// Redis's glob matching (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a]`,
/// `[a-c]`, and `\` escaping the next character; optionally case-insensitive.
func globMatch(_ pattern: [UInt8], _ string: [UInt8], caseInsensitive: Bool = false) -> Bool {
    pattern.withUnsafeBufferPointer { p in
        string.withUnsafeBufferPointer { s in
            var skipLongerMatches = false
            return globMatch(p[...], s[...], caseInsensitive, &skipLongerMatches, nesting: 0)
        }
    }
}

/// The same over raw bytes (no copies: ACL checks match a key in the read buffer).
func globMatch(_ pattern: UnsafeBufferPointer<UInt8>, _ string: UnsafeBufferPointer<UInt8>) -> Bool {
    var skipLongerMatches = false
    return globMatch(pattern[...], string[...], false, &skipLongerMatches, nesting: 0)
}

private func globMatch(_ pattern: Slice<UnsafeBufferPointer<UInt8>>, _ string: Slice<UnsafeBufferPointer<UInt8>>,
                       _ nocase: Bool, _ skipLongerMatches: inout Bool, nesting: Int) -> Bool {
    func fold(_ c: UInt8) -> UInt8 { nocase ? asciiLower(c) : c }
    if nesting > 1000 { return false }  // Redis's guard against abusive patterns
    var p = pattern.startIndex
    var s = string.startIndex
    let pEnd = pattern.endIndex
    let sEnd = string.endIndex
    while p < pEnd && s < sEnd {
        switch pattern[p] {
        case UInt8(ascii: "*"):
            while p + 1 < pEnd && pattern[p + 1] == UInt8(ascii: "*") { p += 1 }
            if p + 1 == pEnd { return true }
            var k = s
            while k < sEnd {
                if globMatch(pattern[(p + 1)...], string[k...], nocase, &skipLongerMatches, nesting: nesting + 1) {
                    return true
                }
                if skipLongerMatches { return false }
                k += 1
            }
            // No match for the rest anywhere in the rest of the string: an
            // earlier `*` matching more cannot help either.
            skipLongerMatches = true
            return false
        case UInt8(ascii: "?"):
            s += 1
        case UInt8(ascii: "["):
            p += 1
            let negate = p < pEnd && pattern[p] == UInt8(ascii: "^")
            if negate { p += 1 }
            var matched = false
            while true {
                if p >= pEnd {
                    p -= 1  // unterminated class: as Redis, treat the end as closing it
                    break
                }
                let c = pattern[p]
                if c == UInt8(ascii: "\\") && p + 1 < pEnd {
                    p += 1
                    if pattern[p] == string[s] { matched = true }
                } else if c == UInt8(ascii: "]") {
                    break
                } else if p + 2 < pEnd && pattern[p + 1] == UInt8(ascii: "-") {
                    var start = fold(c)
                    var end = fold(pattern[p + 2])
                    if start > end { swap(&start, &end) }
                    let value = fold(string[s])
                    p += 2
                    if value >= start && value <= end { matched = true }
                } else if fold(c) == fold(string[s]) {
                    matched = true
                }
                p += 1
            }
            if negate { matched.toggle() }
            if !matched { return false }
            s += 1
        case UInt8(ascii: "\\") where p + 1 < pEnd:
            p += 1
            if fold(pattern[p]) != fold(string[s]) { return false }
            s += 1
        default:
            if fold(pattern[p]) != fold(string[s]) { return false }
            s += 1
        }
        p += 1
        if s == sEnd {
            while p < pEnd && pattern[p] == UInt8(ascii: "*") { p += 1 }
            break
        }
    }
    return p == pEnd && s == sEnd
}
