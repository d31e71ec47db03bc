internal import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// Writes ``DBusValue``s into and reads them out of sd-bus messages. Runs on the bus thread only.
enum MessageCoding {
    private static func ch(_ c: Character) -> CChar { CChar(c.asciiValue!) }

    /// Appends `values` to `message`; returns a negative errno on failure.
    static func append(_ values: [DBusValue], to message: OpaquePointer?) -> Int32 {
        for value in values {
            let r = append(value, to: message)
            if r < 0 { return r }
        }
        return 0
    }

    static func append(_ value: DBusValue, to m: OpaquePointer?) -> Int32 {
        func basic<T: BitwiseCopyable>(_ type: Character, _ v: T) -> Int32 {
            var copy = v
            return sd_bus_message_append_basic(m, ch(type), &copy)
        }
        func container(_ type: Character, _ contents: String, _ body: () -> Int32) -> Int32 {
            var r = sd_bus_message_open_container(m, ch(type), contents)
            if r >= 0 { r = body() }
            if r >= 0 { r = sd_bus_message_close_container(m) }
            return r
        }
        switch value {
        case .byte(let v): return basic("y", v)
        case .bool(let v): return basic("b", Int32(v ? 1 : 0))
        case .int16(let v): return basic("n", v)
        case .uint16(let v): return basic("q", v)
        case .int32(let v): return basic("i", v)
        case .uint32(let v): return basic("u", v)
        case .int64(let v): return basic("x", v)
        case .uint64(let v): return basic("t", v)
        case .double(let v): return basic("d", v)
        case .unixFD(let v): return basic("h", v)
        case .string(let s): return s.withCString { sd_bus_message_append_basic(m, ch("s"), $0) }
        case .objectPath(let s): return s.withCString { sd_bus_message_append_basic(m, ch("o"), $0) }
        case .signature(let s): return s.withCString { sd_bus_message_append_basic(m, ch("g"), $0) }
        case .array(let element, let values):
            for v in values where v.signature != element { return -EINVAL }
            return container("a", element) { append(values, to: m) }
        case .dictionary(let key, let valueType, let entries):
            return container("a", "{" + key + valueType + "}") {
                for entry in entries {
                    guard entry.key.signature == key, entry.value.signature == valueType else { return -EINVAL }
                    let r = container("e", key + valueType) {
                        let r = append(entry.key, to: m)
                        return r < 0 ? r : append(entry.value, to: m)
                    }
                    if r < 0 { return r }
                }
                return 0
            }
        case .structure(let fields):
            return container("r", fields.map(\.signature).joined()) { append(fields, to: m) }
        case .variant(let inner):
            return container("v", inner.signature) { append(inner, to: m) }
        }
    }

    /// Reads every remaining value at the current level of `message`.
    static func readAll(_ m: OpaquePointer?) -> Result<[DBusValue], DBusError> {
        var out: [DBusValue] = []
        while true {
            switch readOne(m) {
            case .failure(let e): return .failure(e)
            case .success(nil): return .success(out)
            case .success(let v?): out.append(v)
            }
        }
    }

    /// Reads the next value, or `nil` at the end of the current container.
    static func readOne(_ m: OpaquePointer?) -> Result<DBusValue?, DBusError> {
        var type: CChar = 0
        var contentsPointer: UnsafePointer<CChar>?
        let r = sd_bus_message_peek_type(m, &type, &contentsPointer)
        if r == 0 { return .success(nil) }
        if r < 0 { return .failure(decodeError(r)) }
        let contents = contentsPointer.map { String(cString: $0) } ?? ""
        func basic<T: BitwiseCopyable>(_ initial: T) -> Result<T, DBusError> {
            var v = initial
            let r = sd_bus_message_read_basic(m, type, &v)
            return r < 0 ? .failure(decodeError(r)) : .success(v)
        }
        func text() -> Result<String, DBusError> {
            var p: UnsafePointer<CChar>?
            let r = sd_bus_message_read_basic(m, type, &p)
            guard r >= 0, let p else { return .failure(decodeError(r < 0 ? r : -EBADMSG)) }
            return .success(String(cString: p))
        }
        func inside(_ body: () -> Result<DBusValue, DBusError>) -> Result<DBusValue?, DBusError> {
            var r = sd_bus_message_enter_container(m, type, contents)
            guard r > 0 else { return .failure(decodeError(r < 0 ? r : -EBADMSG)) }
            let value = body()
            r = sd_bus_message_exit_container(m)
            if r < 0 { return .failure(decodeError(r)) }
            return value.map { $0 }
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "y"): return basic(UInt8(0)).map { .byte($0) }
        case UInt8(ascii: "b"): return basic(Int32(0)).map { .bool($0 != 0) }
        case UInt8(ascii: "n"): return basic(Int16(0)).map { .int16($0) }
        case UInt8(ascii: "q"): return basic(UInt16(0)).map { .uint16($0) }
        case UInt8(ascii: "i"): return basic(Int32(0)).map { .int32($0) }
        case UInt8(ascii: "u"): return basic(UInt32(0)).map { .uint32($0) }
        case UInt8(ascii: "x"): return basic(Int64(0)).map { .int64($0) }
        case UInt8(ascii: "t"): return basic(UInt64(0)).map { .uint64($0) }
        case UInt8(ascii: "d"): return basic(Double(0)).map { .double($0) }
        case UInt8(ascii: "s"): return text().map { .string($0) }
        case UInt8(ascii: "o"): return text().map { .objectPath($0) }
        case UInt8(ascii: "g"): return text().map { .signature($0) }
        case UInt8(ascii: "h"):
            return basic(Int32(-1)).flatMap { fd in
                do throws(SystemCallError) {
                    return .success(.unixFD(try SystemCallError.check("fcntl") { fcntl(fd, F_DUPFD_CLOEXEC, 3) }))
                } catch {
                    return .failure(
                        DBusError(
                            code: .invalidMessage, cause: error, message: "cannot duplicate a received file descriptor")
                    )
                }
            }
        case UInt8(ascii: "v"):
            return inside {
                switch readOne(m) {
                case .failure(let e): return .failure(e)
                case .success(nil): return .failure(decodeError(-EBADMSG))
                case .success(let v?): return .success(.variant(v))
                }
            }
        case UInt8(ascii: "r"):
            return inside { readAll(m).map { .structure($0) } }
        case UInt8(ascii: "a"):
            if contents.hasPrefix("{") {
                let inner = String(contents.dropFirst().dropLast())
                let keyType = String(inner.prefix(1))
                let valueType = String(inner.dropFirst())
                return inside {
                    var entries: [DBusDictEntry] = []
                    while true {
                        var r = sd_bus_message_enter_container(m, ch("e"), inner)
                        if r == 0 { break }
                        if r < 0 { return .failure(decodeError(r)) }
                        guard case .success(let pair) = readAll(m), pair.count == 2 else {
                            return .failure(decodeError(-EBADMSG))
                        }
                        entries.append(DBusDictEntry(key: pair[0], value: pair[1]))
                        r = sd_bus_message_exit_container(m)
                        if r < 0 { return .failure(decodeError(r)) }
                    }
                    return .success(.dictionary(key: keyType, value: valueType, entries))
                }
            }
            return inside { readAll(m).map { .array(contents, $0) } }
        default:
            return .failure(
                DBusError(
                    code: .invalidMessage,
                    message: "unsupported D-Bus type '\(Character(UnicodeScalar(UInt8(bitPattern: type))))'"))
        }
    }

    static func decodeError(_ r: Int32, function: String = #function) -> DBusError {
        .failed(.invalidMessage, call: "sd_bus_message_read", result: r, "malformed D-Bus message", function: function)
    }

    /// The error carried by a method-error reply, or `nil` for a method return.
    static func replyError(_ reply: OpaquePointer?, member: String) -> DBusError? {
        guard let error = sd_bus_message_get_error(reply) else { return nil }
        let name = error.pointee.name.map { String(cString: $0) } ?? DBusErrorName.failed
        let text = error.pointee.message.map { String(cString: $0) } ?? ""
        let code: DBusError.Code =
            name == DBusErrorName.noReply || name == "org.freedesktop.DBus.Error.Timeout"
            ? .timedOut
            : name == "org.freedesktop.DBus.Error.Disconnected" ? .disconnected : .callFailed
        return DBusError(code: code, name: name, message: "\(member) failed: \(text.isEmpty ? name : text)")
    }
}
