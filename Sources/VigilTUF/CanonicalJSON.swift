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

    /// Parses one JSON document strictly (RFC 8259, VigilBase's ``StrictJSONParser``, the core's
    /// manifest parser too): refuses duplicate keys (byte-equal or canonically equivalent), numbers
    /// with a fraction or exponent, `-0`, integers outside 64 bits, invalid UTF-8, lone surrogates,
    /// a byte-order mark and trailing data.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        do throws(StrictJSONParser.SyntaxError) {
            return try StrictJSONParser.parse(Array(bytes), maxDepth: maxDepth)
        } catch {
            throw JSONParseError(reason: error.reason, offset: error.offset)
        }
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

extension JSONValue: StrictJSONTree {
    package static var jsonNull: JSONValue { .null }
    package static func jsonBool(_ value: Bool) -> JSONValue { .bool(value) }
    package static func jsonString(_ value: String) -> JSONValue { .string(value) }
    package static func jsonArray(_ elements: [JSONValue]) -> JSONValue { .array(elements) }

    /// Integers only, each with one spelling, so the canonical form is the bytes received.
    package static func jsonNumber(_ text: String) throws(StrictJSONParser.NumberRefusal) -> JSONValue {
        guard !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) else {
            throw StrictJSONParser.NumberRefusal(
                "a number with a fraction or exponent (TUF metadata uses integers only)")
        }
        guard let value = Int64(text) else { throw StrictJSONParser.NumberRefusal("an integer outside 64 bits") }
        guard text != "-0" else {
            throw StrictJSONParser.NumberRefusal("-0 (whose canonical form would differ from the bytes received)")
        }
        return .integer(value)
    }

    /// Keys unique (the parser refuses a repeated one), so the dictionary loses nothing.
    package static func jsonObject(_ members: [(key: String, value: JSONValue)]) -> JSONValue {
        .object(Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first }))
    }
}

extension JSONValue {
    /// The canonical text, for messages (control characters escaped by the caller's renderer).
    public var canonicalText: String { String(decoding: canonicalBytes, as: UTF8.self) }
}
