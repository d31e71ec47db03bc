/// One D-Bus value with its type, for method arguments, replies, properties and signals.
///
/// Containers carry their element signatures, so an empty array still has a type:
/// `.array("s", [])` is `as`, `.dictionary(key: "s", value: "v", [])` is `a{sv}`.
public indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A Unix file descriptor (`h`). When sent, the bus library sends a duplicate and the caller
    /// keeps its own; when received, the value is a fresh close-on-exec duplicate the receiver owns
    /// and must close.
    case unixFD(Int32)
    /// An array of values of signature `element` (each value must have that signature).
    case array(String, [DBusValue])
    /// A dictionary `a{key value}`.
    case dictionary(key: String, value: String, [DBusDictEntry])
    /// A struct `( … )`.
    case structure([DBusValue])
    /// A variant `v`: any value with its signature.
    case variant(DBusValue)

    /// The value's D-Bus type signature, for example `a{sv}`.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    /// An `a{sv}` dictionary (the usual property map), entries sorted by key.
    public static func stringVariantMap(_ map: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: "s", value: "v",
            map.keys.sorted().map { DBusDictEntry(key: .string($0), value: .variant(map[$0]!)) })
    }

    /// An `as` array.
    public static func stringArray(_ strings: [String]) -> DBusValue {
        .array("s", strings.map { .string($0) })
    }

    /// The contents of a variant, or the value itself.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    /// The text of a string, object path or signature (looking through variants).
    public var string: String? {
        switch unwrapped {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    /// The number as a `Double`, for any numeric type (looking through variants).
    public var double: Double? {
        switch unwrapped {
        case .double(let v): v
        case .byte(let v): Double(v)
        case .int16(let v): Double(v)
        case .uint16(let v): Double(v)
        case .int32(let v): Double(v)
        case .uint32(let v): Double(v)
        case .int64(let v): Double(v)
        case .uint64(let v): Double(v)
        default: nil
        }
    }

    /// The number as an `Int64` for integer types that fit (looking through variants).
    public var integer: Int64? {
        switch unwrapped {
        case .byte(let v): Int64(v)
        case .int16(let v): Int64(v)
        case .uint16(let v): Int64(v)
        case .int32(let v): Int64(v)
        case .uint32(let v): Int64(v)
        case .int64(let v): v
        case .uint64(let v): Int64(exactly: v)
        default: nil
        }
    }

    /// The boolean (looking through variants).
    public var bool: Bool? {
        if case .bool(let b) = unwrapped { return b }
        return nil
    }

    /// The elements of an array (looking through variants).
    public var array: [DBusValue]? {
        if case .array(_, let values) = unwrapped { return values }
        return nil
    }

    /// A dictionary with string keys as a Swift dictionary (values as they are, variants kept).
    public var stringKeyedDictionary: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var out: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            out[key] = entry.value
        }
        return out
    }
}

/// One key/value pair of a ``DBusValue/dictionary(key:value:_:)``.
public struct DBusDictEntry: Sendable, Hashable {
    public var key: DBusValue
    public var value: DBusValue

    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

extension DBusValue: CustomStringConvertible {
    public var description: String {
        switch self {
        case .byte(let v): "byte \(v)"
        case .bool(let v): "\(v)"
        case .int16(let v): "int16 \(v)"
        case .uint16(let v): "uint16 \(v)"
        case .int32(let v): "int32 \(v)"
        case .uint32(let v): "uint32 \(v)"
        case .int64(let v): "int64 \(v)"
        case .uint64(let v): "uint64 \(v)"
        case .double(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .objectPath(let v): "objpath \(v)"
        case .signature(let v): "signature \(v)"
        case .unixFD(let v): "fd \(v)"
        case .array(_, let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(_, _, let entries):
            "{" + entries.map { "\($0.key.description): \($0.value.description)" }.joined(separator: ", ") + "}"
        case .structure(let fields): "(" + fields.map(\.description).joined(separator: ", ") + ")"
        case .variant(let inner): "<\(inner.description)>"
        }
    }
}
