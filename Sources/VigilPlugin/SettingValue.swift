/// A setting value, from a manifest's JSON `settings` or a plugin table in `vigil.toml`.
public enum SettingValue: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case integer(Int)
    case double(Double)
    case bool(Bool)
    case array([SettingValue])
    case table([String: SettingValue])

    /// The value's kind as users write it in `vigil.toml`: `string`, `integer`, `number`, ….
    public var kindName: String {
        switch self {
        case .string: "string"
        case .integer: "integer"
        case .double: "number"
        case .bool: "boolean"
        case .array: "array"
        case .table: "table"
        }
    }

    public var description: String {
        switch self {
        case .string(let s): "\"\(s)\""
        case .integer(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): String(b)
        case .array(let a): "[" + a.map(\.description).joined(separator: ", ") + "]"
        case .table(let t):
            "{" + t.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: ", ") + "}"
        }
    }
}
