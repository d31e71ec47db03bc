internal import CVigilHelper
import VigilCore
import VigilPlugin

/// One record of the host–helper protocol (vigil_helper.h): a `UInt32` type, then `UInt32`s and
/// strings (a `UInt32` length, then the bytes) in order, in the machine's byte order.
struct HelperRecord {
    private(set) var bytes: [UInt8] = []

    init(_ type: Int) { put(UInt32(type)) }

    mutating func put(_ value: UInt32) {
        withUnsafeBytes(of: value) { bytes.append(contentsOf: $0) }
    }

    mutating func put(_ text: String) { put(Array(text.utf8)) }

    mutating func put(_ raw: [UInt8]) {
        put(UInt32(raw.count))
        bytes.append(contentsOf: raw)
    }

    /// Whether it fits in one record.
    var fits: Bool { bytes.count <= Int(VIGIL_HELPER_MESSAGE_MAX) }
}

/// Reads the fields of a received record; every read after a malformed one returns nothing.
struct HelperRecordReader {
    private let bytes: ArraySlice<UInt8>
    private var offset: Int
    private(set) var malformed = false

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.offset = bytes.startIndex
    }

    mutating func u32() -> UInt32? {
        guard !malformed, bytes.endIndex - offset >= 4 else {
            malformed = true
            return nil
        }
        var value: UInt32 = 0
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes[offset..<offset + 4]) }
        offset += 4
        return value
    }

    /// A string field, decoded as UTF-8 (invalid bytes replaced); not yet sanitised.
    mutating func string() -> String? {
        guard let length = u32().map(Int.init), !malformed, bytes.endIndex - offset >= length else {
            malformed = true
            return nil
        }
        defer { offset += length }
        return String(decoding: bytes[offset..<offset + length], as: UTF8.self)
    }
}

/// What the helper sends: the reply to the request in flight, or something it says on its own.
enum HelperMessage {
    /// `code` empty when the request succeeded; `pairs` only for a details reply.
    case reply(code: String, variant: String, detail: String, pairs: [(String, String)])
    case event(kind: Int, reason: String)
    case log(level: Int, text: String)
    case denial(line: String)

    /// Decodes one record, or `nil` when it is malformed or of an unknown type.
    init?(_ bytes: ArraySlice<UInt8>) {
        var reader = HelperRecordReader(bytes)
        guard let type = reader.u32().map({ Int($0) }) else { return nil }
        switch type {
        case VIGIL_HELPER_REPLY:
            guard let code = reader.string(), let variant = reader.string(), let detail = reader.string() else {
                return nil
            }
            var pairs: [(String, String)] = []
            if let count = reader.u32() {
                for _ in 0..<count {
                    guard let key = reader.string(), let value = reader.string() else { return nil }
                    pairs.append((key, value))
                }
            }
            self = .reply(code: code, variant: variant, detail: detail, pairs: pairs)
        case VIGIL_HELPER_EVENT:
            guard let kind = reader.u32(), let reason = reader.string() else { return nil }
            self = .event(kind: Int(kind), reason: reason)
        case VIGIL_HELPER_LOG:
            guard let level = reader.u32(), let text = reader.string() else { return nil }
            self = .log(level: Int(Int32(bitPattern: level)), text: text)
        case VIGIL_HELPER_DENIAL:
            guard let line = reader.string() else { return nil }
            self = .denial(line: line)
        default:
            return nil
        }
    }
}

/// A setting as the C ABI passes it: strings as they are, scalars as text, arrays and tables as JSON.
enum SettingText {
    static func text(_ value: SettingValue) -> String {
        switch value {
        case .string(let s): s
        case .integer(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): b ? "true" : "false"
        case .array, .table: json(value)
        }
    }

    private static func json(_ value: SettingValue) -> String {
        switch value {
        case .string(let s): JSONValue.quote(s)
        case .integer(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): b ? "true" : "false"
        case .array(let a): "[" + a.map(json).joined(separator: ",") + "]"
        case .table(let t):
            "{"
                + t.sorted { $0.key < $1.key }.map { JSONValue.quote($0.key) + ":" + json($0.value) }.joined(
                    separator: ",") + "}"
        }
    }
}
