import VigilBase

/// A JSON value as TUF metadata uses it: integers only (floats are refused), objects without
/// duplicate keys.
///
/// Signatures in TUF cover the OLPC canonical JSON form of `signed` (keys sorted, no whitespace,
/// only `"` and `\` escaped). The client parses the received bytes once with ``parse(_:)``, takes
/// the canonical bytes of that tree with ``canonicalBytes``, verifies the signatures over them,
/// and reads every field from the same tree: what is acted on is exactly what was verified.
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The deepest nesting of arrays and objects the parser accepts.
    public static let maxDepth = 64

    /// Parses one JSON document strictly (RFC 8259): refuses duplicate keys (byte-equal or
    /// canonically equivalent), numbers with a fraction or exponent, `-0`, integers outside
    /// 64 bits, invalid UTF-8, lone surrogates, a byte-order mark and trailing data.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: Array(bytes))
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.fail("unexpected data after the JSON value") }
        return value
    }

    /// The OLPC canonical JSON encoding (securesystemslib's `encode_canonical`), UTF-8.
    public var canonicalBytes: [UInt8] {
        var out: [UInt8] = []
        appendCanonical(to: &out)
        return out
    }

    private func appendCanonical(to out: inout [UInt8]) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .integer(let i): out += Array(String(i).utf8)
        case .string(let s): Self.appendCanonical(string: s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                item.appendCanonical(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            // Code-point order, which is UTF-8 byte order (Python's `sorted` on str).
            let sorted = members.map { (key: Array($0.key.utf8), name: $0.key, value: $0.value) }
                .sorted { $0.key.lexicographicallyPrecedes($1.key) }
            for (n, member) in sorted.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                Self.appendCanonical(string: member.name, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.appendCanonical(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func appendCanonical(string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// Why bytes are not strict JSON, and where (byte offset).
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public let reason: String
    /// The byte offset of the offending input.
    public let offset: Int

    public var description: String { "\(reason) at byte \(offset)" }
}

private struct JSONParser {
    let bytes: [UInt8]
    var index = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(reason: reason, offset: index) }

    mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= JSONValue.maxDepth else { throw fail("nesting deeper than \(JSONValue.maxDepth)") }
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .integer(try integer())
        default: throw fail("unexpected byte 0x\(String(bytes[index], radix: 16))")
        }
    }

    mutating func literal(_ word: String) throws(JSONParseError) {
        let w = Array(word.utf8)
        guard bytes.count - index >= w.count, Array(bytes[index..<index + w.count]) == w else {
            throw fail("invalid literal")
        }
        index += w.count
    }

    mutating func expect(_ byte: Character) throws(JSONParseError) {
        guard index < bytes.count, bytes[index] == byte.asciiValue else { throw fail("expected '\(byte)'") }
        index += 1
    }

    mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let start = index
            let key = try string()
            // Swift's String equality is canonical equivalence, so this also refuses two spellings
            // of one name that some readers would merge and others would not.
            guard members[key] == nil else {
                index = start
                throw fail("duplicate key \(JSONValue.string(key).canonicalText)")
            }
            skipWhitespace()
            try expect(":")
            skipWhitespace()
            members[key] = try value(depth: depth)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect("}")
            return .object(members)
        }
    }

    mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try value(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect("]")
            return .array(items)
        }
    }

    mutating func integer() throws(JSONParseError) -> Int64 {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        let digitsStart = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        guard index > digitsStart else { throw fail("a minus sign without digits") }
        if bytes[digitsStart] == UInt8(ascii: "0") && index - digitsStart > 1 {
            index = start
            throw fail("a number with a leading zero")
        }
        if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) {
            index = start
            throw fail("a number with a fraction or exponent (TUF metadata uses integers only)")
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Int64(text) else {
            index = start
            throw fail("an integer outside 64 bits")
        }
        if negative && value == 0 {
            index = start
            throw fail("-0 (whose canonical form would differ from the bytes received)")
        }
        return value
    }

    mutating func string() throws(JSONParseError) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unterminated escape") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    let high = try hex4()
                    var code = high
                    if (0xD800...0xDBFF).contains(high) {
                        guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw fail("a lone high surrogate") }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("a high surrogate without a low one") }
                        code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(high) {
                        throw fail("a lone low surrogate")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw fail("an invalid code point") }
                    scalars.append(scalar)
                default: throw fail("an invalid escape")
                }
            case 0x00..<0x20: throw fail("an unescaped control character in a string")
            case 0x00..<0x80:
                scalars.append(Unicode.Scalar(b))
                index += 1
            default: scalars.append(try utf8Scalar())
            }
        }
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw fail("a short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let d: UInt32
            switch b {
            case 0x30...0x39: d = UInt32(b - 0x30)
            case 0x41...0x46: d = UInt32(b - 0x41 + 10)
            case 0x61...0x66: d = UInt32(b - 0x61 + 10)
            default: throw fail("a non-hex digit in a \\u escape")
            }
            value = value << 4 | d
            index += 1
        }
        return value
    }

    /// One UTF-8 sequence of 2–4 bytes, refusing overlong forms, surrogates and values past U+10FFFF.
    mutating func utf8Scalar() throws(JSONParseError) -> Unicode.Scalar {
        let b0 = bytes[index]
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        let count: Int
        var value: UInt32
        switch b0 {
        case 0xC2...0xDF: count = 2; value = UInt32(b0 & 0x1F)
        case 0xE0: count = 3; value = UInt32(b0 & 0x0F); low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: count = 3; value = UInt32(b0 & 0x0F)
        case 0xED: count = 3; value = UInt32(b0 & 0x0F); high = 0x9F
        case 0xF0: count = 4; value = UInt32(b0 & 0x07); low = 0x90
        case 0xF1...0xF3: count = 4; value = UInt32(b0 & 0x07)
        case 0xF4: count = 4; value = UInt32(b0 & 0x07); high = 0x8F
        default: throw fail("invalid UTF-8")
        }
        guard bytes.count - index >= count else { throw fail("truncated UTF-8") }
        for n in 1..<count {
            let b = bytes[index + n]
            let (lo, hi) = n == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
            guard (lo...hi).contains(b) else { throw fail("invalid UTF-8") }
            value = value << 6 | UInt32(b & 0x3F)
        }
        index += count
        guard let scalar = Unicode.Scalar(value) else { throw fail("invalid UTF-8") }
        return scalar
    }
}

extension JSONValue {
    /// The canonical text, for messages (control characters escaped by the caller's renderer).
    public var canonicalText: String { String(decoding: canonicalBytes, as: UTF8.self) }
}
