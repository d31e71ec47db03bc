import VigilBase

/// A strict RFC 8259 JSON parser for signed documents: VigilBase's ``StrictJSONParser`` (the one
/// the TUF client uses too) building a ``JSONValue``, numbers kept as their text.
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
        do throws(StrictJSONParser.SyntaxError) {
            return try StrictJSONParser.parse(bytes, maxDepth: maxDepth, maxSize: maxSize)
        } catch {
            throw ParseError(reason: error.reason, path: error.path, line: error.line, column: error.column)
        }
    }

    /// A step in a JSON path: a member name or an array index.
    typealias PathComponent = StrictJSONParser.PathComponent

    /// Formats a path from components: `$.settings.mode`, `$.resources[0]`.
    static func format(path: [PathComponent]) -> String { StrictJSONParser.format(path: path) }
}

extension JSONValue: StrictJSONTree {
    package static var jsonNull: JSONValue { .null }
    package static func jsonBool(_ value: Bool) -> JSONValue { .bool(value) }
    package static func jsonNumber(_ text: String) -> JSONValue { .number(text) }
    package static func jsonString(_ value: String) -> JSONValue { .string(value) }
    package static func jsonArray(_ elements: [JSONValue]) -> JSONValue { .array(elements) }
    package static func jsonObject(_ members: [(key: String, value: JSONValue)]) -> JSONValue { .object(members) }
}
