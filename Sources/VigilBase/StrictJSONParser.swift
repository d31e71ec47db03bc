/// The one strict RFC 8259 JSON parser, under both readers of signed JSON: the core's
/// `StrictJSON` (plugin manifests, key rotations, revocation lists, rollback records) and the
/// TUF client's canonical JSON. Each reader builds its own tree (a ``StrictJSONTree``) and may
/// refuse numbers its documents do not use; the grammar, the refusals and the limits are this
/// one's.
///
/// Foundation's decoders disagree on duplicate keys (`JSONDecoder` keeps the first value,
/// `JSONSerialization` the last) and neither rejects them, so two readers of the same signed
/// bytes could see different documents. This parser refuses duplicate keys (byte-equal or
/// canonically equivalent: Swift's `String` equality), invalid UTF-8, lone surrogates, a
/// byte-order mark, trailing data, leading zeros and every other deviation from RFC 8259, and it
/// limits nesting depth and input size.
package enum StrictJSONParser {
    /// A syntax error: what is wrong and where (byte offset, line and column, JSON path).
    package struct SyntaxError: Error, Sendable, Hashable {
        /// What is wrong.
        package let reason: String
        /// The byte offset of the offending input.
        package let offset: Int
        /// 1-based line of the offending byte.
        package let line: Int
        /// 1-based column (in bytes) of the offending byte.
        package let column: Int
        /// The JSON path of the value being read, for example `$.settings.mode`.
        package let path: String
    }

    /// Why a reader refuses a number that RFC 8259's grammar allows (a fraction where only
    /// integers are signed, say).
    package struct NumberRefusal: Error, Sendable {
        package let reason: String
        package init(_ reason: String) { self.reason = reason }
    }

    /// Parses `bytes` as one JSON document into a `Tree`.
    ///
    /// - Parameters:
    ///   - bytes: UTF-8 JSON text.
    ///   - maxDepth: The deepest nesting of arrays and objects accepted.
    ///   - maxSize: The largest input accepted, in bytes.
    /// - Throws: ``SyntaxError``.
    package static func parse<Tree: StrictJSONTree>(
        _ bytes: [UInt8], as tree: Tree.Type = Tree.self, maxDepth: Int, maxSize: Int = .max
    ) throws(SyntaxError) -> Tree {
        var parser = Parser<Tree>(bytes: bytes, maxDepth: maxDepth)
        guard bytes.count <= maxSize else {
            throw parser.error("the document is \(bytes.count) bytes, more than the limit of \(maxSize)")
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw parser.error("unexpected byte-order mark at the start of the document, which JSON does not allow")
        }
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }

    /// A JSON string literal for `s`, escaping quotes, backslashes, control characters and
    /// bidirectional controls.
    package static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                // C0, DEL, C1, line separators and bidirectional controls as \u escapes: the
                // parsed value is exact, and the raw document is still safe on a terminal.
                let v = scalar.value
                if v < 0x20 || v == 0x7F || (0x80..<0xA0).contains(v) || v == 0x2028 || v == 0x2029
                    || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v) || v == 0x200E || v == 0x200F
                    || v == 0x061C
                {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Formats a path from components: strings are member names, integers array indexes.
    package static func format(path: [PathComponent]) -> String {
        var out = "$"
        for component in path {
            switch component {
            case .index(let i): out += "[\(i)]"
            case .key(let k):
                if let first = k.unicodeScalars.first,
                    first == "_" || (first.properties.isAlphabetic && first.isASCII),
                    k.unicodeScalars.allSatisfy({
                        $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
                    })
                {
                    out += "." + k
                } else {
                    out += "[" + quote(k) + "]"
                }
            }
        }
        return out
    }

    /// A step in a JSON path: a member name or an array index.
    package enum PathComponent: Hashable, Sendable {
        case key(String)
        case index(Int)
    }

    private struct Parser<Tree: StrictJSONTree> {
        let bytes: [UInt8]
        let maxDepth: Int
        var index = 0
        var path: [PathComponent] = []

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        func error(_ reason: String, at offset: Int? = nil) -> SyntaxError {
            let end = min(offset ?? index, bytes.count)
            var line = 1
            var column = 1
            for b in bytes[..<end] {
                if b == 0x0A {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            }
            return SyntaxError(
                reason: reason, offset: end, line: line, column: column, path: StrictJSONParser.format(path: path))
        }

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        func describe(_ byte: UInt8) -> String {
            (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        }

        mutating func parseValue(depth: Int) throws(SyntaxError) -> Tree {
            guard index < bytes.count else { throw error("unexpected end of the document; a value was expected") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
            case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
            case UInt8(ascii: "\""): return .jsonString(try parseString())
            case UInt8(ascii: "t"): try literal("true"); return .jsonBool(true)
            case UInt8(ascii: "f"): try literal("false"); return .jsonBool(false)
            case UInt8(ascii: "n"): try literal("null"); return .jsonNull
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let start = index
                let text = try parseNumber()
                do throws(NumberRefusal) {
                    return try .jsonNumber(text)
                } catch {
                    throw self.error(error.reason, at: start)
                }
            default: throw error("unexpected \(describe(bytes[index])); a JSON value was expected")
            }
        }

        mutating func literal(_ word: String) throws(SyntaxError) {
            let w = Array(word.utf8)
            guard bytes.count - index >= w.count, Array(bytes[index..<index + w.count]) == w else {
                throw error("invalid literal; expected \(word)")
            }
            index += w.count
        }

        mutating func parseObject(depth: Int) throws(SyntaxError) -> Tree {
            guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
            index += 1
            var members: [(key: String, value: Tree)] = []
            var seen: Set<String> = []
            skipWhitespace()
            if consume(UInt8(ascii: "}")) { return .jsonObject(members) }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw error(index < bytes.count ? "expected a member name in double quotes" : "unterminated object")
                }
                let keyOffset = index
                let key = try parseString()
                path.append(.key(key))
                guard seen.insert(key).inserted else {
                    throw error(
                        "duplicate key \(StrictJSONParser.quote(key)); each key may appear only once", at: keyOffset)
                }
                skipWhitespace()
                guard consume(UInt8(ascii: ":")) else { throw error("expected ':' after the member name") }
                skipWhitespace()
                let value = try parseValue(depth: depth)
                members.append((key, value))
                path.removeLast()
                skipWhitespace()
                if try endsContainer("}", "object") { return .jsonObject(members) }
            }
        }

        mutating func parseArray(depth: Int) throws(SyntaxError) -> Tree {
            guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
            index += 1
            var elements: [Tree] = []
            skipWhitespace()
            if consume(UInt8(ascii: "]")) { return .jsonArray(elements) }
            while true {
                skipWhitespace()
                path.append(.index(elements.count))
                elements.append(try parseValue(depth: depth))
                path.removeLast()
                skipWhitespace()
                if try endsContainer("]", "array") { return .jsonArray(elements) }
            }
        }

        /// Consumes `byte` if it comes next.
        mutating func consume(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// After a member or an element: consumes `,` (false: another follows) or `close` (true:
        /// the `container` ends); anything else is an error.
        mutating func endsContainer(_ close: Unicode.Scalar, _ container: String) throws(SyntaxError) -> Bool {
            guard index < bytes.count else { throw error("unterminated \(container)") }
            if consume(UInt8(ascii: ",")) { return false }
            if consume(UInt8(ascii: close)) { return true }
            throw error("unexpected \(describe(bytes[index])); expected ',' or '\(close)'")
        }

        mutating func parseNumber() throws(SyntaxError) -> String {
            let start = index
            func digit(_ i: Int) -> Bool { i < bytes.count && (0x30...0x39).contains(bytes[i]) }
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digit(index) else { throw error("invalid number: a digit must follow '-'") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if digit(index) { throw error("invalid number: leading zeros are not allowed") }
            } else {
                while digit(index) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digit(index) else { throw error("invalid number: a digit must follow '.'") }
                while digit(index) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard digit(index) else { throw error("invalid number: the exponent has no digits") }
                while digit(index) { index += 1 }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func parseString() throws(SyntaxError) -> String {
            let open = index
            index += 1
            var scalars = String.UnicodeScalarView()
            while true {
                guard index < bytes.count else { throw error("unterminated string", at: open) }
                let b = bytes[index]
                switch b {
                case UInt8(ascii: "\""):
                    index += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    index += 1
                    guard index < bytes.count else { throw error("unterminated escape") }
                    let e = bytes[index]
                    index += 1
                    if let scalar = StringEscape.scalar(for: e) {
                        scalars.append(scalar)
                        continue
                    }
                    switch e {
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "u"):
                        let first = try hex4()
                        if (0xD800...0xDBFF).contains(first) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                                bytes[index + 1] == UInt8(ascii: "u")
                            else { throw error("lone high surrogate escape; a low surrogate escape must follow it") }
                            index += 2
                            let second = try hex4()
                            guard (0xDC00...0xDFFF).contains(second) else {
                                throw error("lone high surrogate escape; a low surrogate escape must follow it")
                            }
                            let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                            scalars.append(Unicode.Scalar(value)!)
                        } else if (0xDC00...0xDFFF).contains(first) {
                            throw error("lone low surrogate escape")
                        } else {
                            scalars.append(Unicode.Scalar(first)!)
                        }
                    default:
                        throw error("invalid escape '\\\(describe(e))'", at: index - 2)
                    }
                case 0x00..<0x20:
                    throw error("control character \(describe(b)) in a string; it must be escaped")
                case 0x00..<0x80:
                    scalars.append(Unicode.Scalar(b))
                    index += 1
                default:
                    scalars.append(try utf8Scalar())
                }
            }
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw error("truncated \\u escape") }
            var value: UInt32 = 0
            for b in bytes[index..<index + 4] {
                let d: UInt32
                switch b {
                case 0x30...0x39: d = UInt32(b - 0x30)
                case 0x41...0x46: d = UInt32(b - 0x41 + 10)
                case 0x61...0x66: d = UInt32(b - 0x61 + 10)
                default: throw error("invalid hex digit in a \\u escape")
                }
                value = value << 4 | d
            }
            index += 4
            return value
        }

        /// Decodes one multi-byte UTF-8 sequence strictly (no overlongs, no surrogates, ≤ U+10FFFF).
        mutating func utf8Scalar() throws(SyntaxError) -> Unicode.Scalar {
            let b0 = bytes[index]
            let count: Int
            var value: UInt32
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch b0 {
            case 0xC2...0xDF: count = 2; value = UInt32(b0 & 0x1F)
            case 0xE0: count = 3; value = UInt32(b0 & 0x0F); low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: count = 3; value = UInt32(b0 & 0x0F)
            case 0xED: count = 3; value = UInt32(b0 & 0x0F); high = 0x9F
            case 0xF0: count = 4; value = UInt32(b0 & 0x07); low = 0x90
            case 0xF1...0xF3: count = 4; value = UInt32(b0 & 0x07)
            case 0xF4: count = 4; value = UInt32(b0 & 0x07); high = 0x8F
            default: throw error("invalid UTF-8 byte 0x\(String(b0, radix: 16))")
            }
            guard index + count <= bytes.count else { throw error("truncated UTF-8 sequence") }
            for i in 1..<count {
                let b = bytes[index + i]
                let (lo, hi) = i == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
                guard b >= lo && b <= hi else { throw error("invalid UTF-8 sequence") }
                value = value << 6 | UInt32(b & 0x3F)
            }
            index += count
            return Unicode.Scalar(value)!
        }
    }
}

/// A tree ``StrictJSONParser`` builds: how a reader represents each kind of JSON value.
package protocol StrictJSONTree {
    static var jsonNull: Self { get }
    static func jsonBool(_ value: Bool) -> Self
    /// A number in RFC 8259's grammar, as its exact text; throws when the reader's documents
    /// never hold such a number.
    static func jsonNumber(_ text: String) throws(StrictJSONParser.NumberRefusal) -> Self
    static func jsonString(_ value: String) -> Self
    static func jsonArray(_ elements: [Self]) -> Self
    /// Members in document order; no key is there twice.
    static func jsonObject(_ members: [(key: String, value: Self)]) -> Self
}
