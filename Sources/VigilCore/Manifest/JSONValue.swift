import VigilBase

/// A JSON value as parsed by ``StrictJSON``: objects keep their members in document order and
/// never hold a key twice.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number, kept as its exact source text (RFC 8259 grammar) so no precision is lost.
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in document order; keys are unique.
    case object([(key: String, value: JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(b)
        case .number(let n): hasher.combine(n)
        case .string(let s): hasher.combine(s)
        case .array(let a): hasher.combine(a)
        case .object(let members):
            for member in members {
                hasher.combine(member.key)
                hasher.combine(member.value)
            }
        }
    }

    /// The value's kind, for error messages: `null`, `boolean`, `number`, `string`, `array`, `object`.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The member named `key` of an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// Serializes the value as UTF-8 JSON: objects keep their member order; with `indent`, one
    /// member or element per line (the style `vigil plugin sign` writes).
    public func serialized(indent: Int? = 2) -> [UInt8] {
        var out = ""
        write(into: &out, indent: indent, level: 0)
        if indent != nil { out += "\n" }
        return Array(out.utf8)
    }

    private func write(into out: inout String, indent: Int?, level: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += n
        case .string(let s): out += Self.quote(s)
        case .array(let elements):
            Self.writeList(elements, "[", "]", into: &out, indent: indent, level: level) { element, out in
                element.write(into: &out, indent: indent, level: level + 1)
            }
        case .object(let members):
            Self.writeList(members, "{", "}", into: &out, indent: indent, level: level) { member, out in
                out += Self.quote(member.key) + (indent == nil ? ":" : ": ")
                member.value.write(into: &out, indent: indent, level: level + 1)
            }
        }
    }

    /// `open`, the `items` (each written by `write`, one a line and a level deeper when indenting)
    /// separated by commas, then `close`; just `open` and `close` when there are none.
    private static func writeList<Item>(
        _ items: [Item], _ open: String, _ close: String, into out: inout String, indent: Int?, level: Int,
        _ write: (Item, inout String) -> Void
    ) {
        guard !items.isEmpty else {
            out += open + close
            return
        }
        let newline = indent == nil ? "" : "\n"
        func pad(_ l: Int) -> String { String(repeating: " ", count: (indent ?? 0) * l) }
        out += open + newline
        for (i, item) in items.enumerated() {
            out += pad(level + 1)
            write(item, &out)
            out += (i == items.count - 1 ? "" : ",") + newline
        }
        out += pad(level) + close
    }

    /// A JSON string literal for `s`, escaping quotes, backslashes, control characters and
    /// bidirectional controls.
    public static func quote(_ s: String) -> String { StrictJSONParser.quote(s) }
}
