import VigilBase

/// TUF delegation path patterns: the target path and the pattern are split at `/` into the same
/// number of segments and each segment matches like Python's `fnmatch.fnmatchcase` (`*`, `?`,
/// `[seq]`, `[!seq]`), so `*` never matches a `/` (python-tuf's rule, checked by the suite).
public enum PathPattern {
    public static func matches(_ target: String, pattern: String) -> Bool {
        let t = target.split(separator: "/", omittingEmptySubsequences: false)
        let p = pattern.split(separator: "/", omittingEmptySubsequences: false)
        guard t.count == p.count else { return false }
        return zip(t, p).allSatisfy { segment(Array($0.unicodeScalars), Array($1.unicodeScalars)) }
    }

    /// Glob match of one segment (iterative, with backtracking to the last `*`: linear-ish, no recursion).
    static func segment(_ s: [Unicode.Scalar], _ p: [Unicode.Scalar]) -> Bool {
        var si = 0
        var pi = 0
        var star: (p: Int, s: Int)?
        while si < s.count {
            if pi < p.count {
                switch p[pi] {
                case "*":
                    star = (pi, si)
                    pi += 1
                    continue
                case "?":
                    si += 1
                    pi += 1
                    continue
                case "[":
                    if let (matched, next) = bracket(p, pi, s[si]) {
                        if matched {
                            si += 1
                            pi = next
                            continue
                        }
                    } else if s[si] == "[" {  // an unterminated `[` is a literal, as in fnmatch
                        si += 1
                        pi += 1
                        continue
                    }
                default:
                    if p[pi] == s[si] {
                        si += 1
                        pi += 1
                        continue
                    }
                }
            }
            guard let st = star else { return false }
            pi = st.p + 1
            si = st.s + 1
            star = (st.p, st.s + 1)
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }

    /// Matches `c` against the bracket expression starting at `p[start]`; nil when it is not terminated.
    static func bracket(_ p: [Unicode.Scalar], _ start: Int, _ c: Unicode.Scalar) -> (Bool, Int)? {
        var i = start + 1
        var negate = false
        if i < p.count, p[i] == "!" {
            negate = true
            i += 1
        }
        var matched = false
        var first = true
        while i < p.count {
            if p[i] == "]" && !first { return (matched != negate, i + 1) }
            first = false
            if i + 2 < p.count, p[i + 1] == "-", p[i + 2] != "]" {
                if p[i].value <= c.value && c.value <= p[i + 2].value { matched = true }
                i += 3
            } else {
                if p[i] == c { matched = true }
                i += 1
            }
        }
        return nil
    }
}
