/// A strict RFC 8259 JSON parser for signed documents.
///
/// Foundation's decoders disagree on duplicate keys (`JSONDecoder` keeps the first value,
/// `JSONSerialization` the last) and neither rejects them, so two readers of the same signed
/// bytes could see different documents. This parser refuses duplicate keys, invalid UTF-8, lone
/// surrogates, a byte-order mark, trailing data, leading zeros and every other deviation from
/// RFC 8259, and it limits nesting depth and input size.
public enum StrictJSON {
    /// A syntax error: what is wrong, where (JSON path and line/column).
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong.
        public let reason: String
        /// The JSON path of the value being read, for example `$.settings.mode`.
        public let path: String
        /// 1-based line of the offending byte.
        public let line: Int
        /// 1-based column (in bytes) of the offending byte.
        public let column: Int

        public var description: String { "\(reason) at \(path) (line \(line), column \(column))" }
    }

    /// The default nesting limit.
    public static let defaultMaxDepth = 32

    /// Parses `bytes` as one JSON document.
    ///
    /// - Parameters:
    ///   - bytes: UTF-8 JSON text.
    ///   - maxDepth: The deepest nesting of arrays and objects accepted.
    ///   - maxSize: The largest input accepted, in bytes.
    /// - Throws: ``ParseError``.
    public static func parse(
        _ bytes: [UInt8], maxDepth: Int = defaultMaxDepth, maxSize: Int = 64 * 1024
    ) throws(ParseError) -> JSONValue {
        var parser = Parser(bytes: bytes, maxDepth: maxDepth)
        guard bytes.count <= maxSize else {
            throw parser.error("the document is \(bytes.count) bytes, more than the limit of \(maxSize)")
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw parser.error("the document starts with a byte-order mark, which is not allowed")
        }
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }

    /// Formats a path from components: strings are member names, integers array indexes.
    static func format(path: [PathComponent]) -> String {
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
                    out += "[" + JSONValue.quote(k) + "]"
                }
            }
        }
        return out
    }

    enum PathComponent: Hashable, Sendable {
        case key(String)
        case index(Int)
    }

    private struct Parser {
        let bytes: [UInt8]
        let maxDepth: Int
        var index = 0
        var path: [PathComponent] = []

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        func error(_ reason: String, at offset: Int? = nil) -> ParseError {
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
            return ParseError(reason: reason, path: StrictJSON.format(path: path), line: line, column: column)
        }

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        func describe(_ byte: UInt8) -> String {
            (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        }

        mutating func parseValue(depth: Int) throws(ParseError) -> JSONValue {
            guard index < bytes.count else { throw error("unexpected end of the document; a value was expected") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
            case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
            default: throw error("unexpected \(describe(bytes[index])); a JSON value was expected")
            }
        }

        mutating func literal(_ word: String) throws(ParseError) {
            let w = Array(word.utf8)
            guard bytes.count - index >= w.count, Array(bytes[index..<index + w.count]) == w else {
                throw error("invalid literal; expected \(word)")
            }
            index += w.count
        }

        mutating func parseObject(depth: Int) throws(ParseError) -> JSONValue {
            guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
            index += 1
            var members: [(key: String, value: JSONValue)] = []
            var seen: Set<String> = []
            skipWhitespace()
            if consume(UInt8(ascii: "}")) { return .object(members) }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw error(index < bytes.count ? "expected a member name in double quotes" : "unterminated object")
                }
                let keyOffset = index
                let key = try parseString()
                path.append(.key(key))
                guard seen.insert(key).inserted else {
                    throw error("duplicate key \(JSONValue.quote(key)); each key may appear only once", at: keyOffset)
                }
                skipWhitespace()
                guard consume(UInt8(ascii: ":")) else { throw error("expected ':' after the member name") }
                skipWhitespace()
                let value = try parseValue(depth: depth)
                members.append((key, value))
                path.removeLast()
                skipWhitespace()
                if try endsContainer("}", "object") { return .object(members) }
            }
        }

        mutating func parseArray(depth: Int) throws(ParseError) -> JSONValue {
            guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if consume(UInt8(ascii: "]")) { return .array(elements) }
            while true {
                skipWhitespace()
                path.append(.index(elements.count))
                elements.append(try parseValue(depth: depth))
                path.removeLast()
                skipWhitespace()
                if try endsContainer("]", "array") { return .array(elements) }
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
        mutating func endsContainer(_ close: Unicode.Scalar, _ container: String) throws(ParseError) -> Bool {
            guard index < bytes.count else { throw error("unterminated \(container)") }
            if consume(UInt8(ascii: ",")) { return false }
            if consume(UInt8(ascii: close)) { return true }
            throw error("unexpected \(describe(bytes[index])); expected ',' or '\(close)'")
        }

        mutating func parseNumber() throws(ParseError) -> String {
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

        mutating func parseString() throws(ParseError) -> String {
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
                            else { throw error("a high surrogate escape must be followed by a low surrogate escape") }
                            index += 2
                            let second = try hex4()
                            guard (0xDC00...0xDFFF).contains(second) else {
                                throw error("a high surrogate escape must be followed by a low surrogate escape")
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

        mutating func hex4() throws(ParseError) -> UInt32 {
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
        mutating func utf8Scalar() throws(ParseError) -> Unicode.Scalar {
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
