internal import CSystemd
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The freedesktop notification service on the session bus, through sd-bus (libsystemd).
///
/// The only place that touches sd-bus. Every call runs on the bus's own thread (sd-bus
/// connections are not thread-safe, and their calls block).
final class SessionBus: Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private final class Handle: @unchecked Sendable {
        // Confined to `thread`.
        var bus: OpaquePointer?
    }

    private let thread = DedicatedThread(name: "vigil-session-bus")
    private let handle = Handle()
    private let address: String

    private static let service = "org.freedesktop.Notifications"
    private static let path = "/org/freedesktop/Notifications"
    private static let timeoutUsec: UInt64 = 2_000_000

    /// The session bus address from `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` if that
    /// socket exists; `nil` when there is no session bus.
    static func address(environment: [String: String]) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        if let runtime = environment["XDG_RUNTIME_DIR"] {
            var info = stat()
            let socket = runtime + "/bus"
            if stat(socket, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK { return "unix:path=" + socket }
        }
        return nil
    }

    init(address: String) {
        self.address = address
    }

    /// Connects; throws when the bus cannot be reached.
    func connect() async throws {
        let result: String? = await thread.run { [handle, address] in
            var bus: OpaquePointer?
            var r = sd_bus_new(&bus)
            if r >= 0 { r = sd_bus_set_address(bus, address) }
            if r >= 0 { r = sd_bus_set_bus_client(bus, 1) }
            if r >= 0 { r = sd_bus_start(bus) }
            if r < 0 {
                if let bus { sd_bus_flush_close_unref(bus) }
                return "cannot connect to the session bus at \(address): \(String(cString: strerror(-r)))"
            }
            handle.bus = bus
            return nil
        } ?? "the session bus thread was closed"
        if let result { throw Failure(description: result) }
    }

    /// `GetCapabilities`: what the notification server supports (`persistence`, `body`, …).
    func capabilities() async throws -> [String] {
        try await call("GetCapabilities", append: { _ in 0 }) { reply in
            var out: [String] = []
            var r = sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "a")), "s")
            while r > 0 {
                var value: UnsafePointer<CChar>?
                r = sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "s")), &value)
                if r > 0, let value { out.append(String(cString: value)) }
            }
            return out
        }
    }

    /// `Notify`: shows or (with `replacesID`) updates a notification; returns its id.
    func notify(
        appName: String, replacesID: UInt32, summary: String, body: String, urgency: UInt8, resident: Bool
    ) async throws -> UInt32 {
        try await call(
            "Notify",
            append: { m in
                var r = Self.appendString(m, appName)
                var replaces = replacesID
                if r >= 0 { r = sd_bus_message_append_basic(m, CChar(UInt8(ascii: "u")), &replaces) }
                if r >= 0 { r = Self.appendString(m, "") }  // app_icon
                if r >= 0 { r = Self.appendString(m, summary) }
                if r >= 0 { r = Self.appendString(m, body) }
                if r >= 0 { r = sd_bus_message_open_container(m, CChar(UInt8(ascii: "a")), "s") }  // actions
                if r >= 0 { r = sd_bus_message_close_container(m) }
                if r >= 0 { r = sd_bus_message_open_container(m, CChar(UInt8(ascii: "a")), "{sv}") }
                if r >= 0 {
                    var level = urgency
                    r = Self.appendHint(m, "urgency", type: "y") { sd_bus_message_append_basic($0, CChar(UInt8(ascii: "y")), &level) }
                }
                if r >= 0 && resident {
                    var yes: Int32 = 1
                    r = Self.appendHint(m, "resident", type: "b") { sd_bus_message_append_basic($0, CChar(UInt8(ascii: "b")), &yes) }
                }
                if r >= 0 { r = sd_bus_message_close_container(m) }
                var expire: Int32 = 0  // never expires
                if r >= 0 { r = sd_bus_message_append_basic(m, CChar(UInt8(ascii: "i")), &expire) }
                return r
            },
            read: { reply in
                var id: UInt32 = 0
                _ = sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "u")), &id)
                return id
            })
    }

    /// `CloseNotification`.
    func closeNotification(_ id: UInt32) async throws {
        try await call(
            "CloseNotification",
            append: { m in
                var value = id
                return sd_bus_message_append_basic(m, CChar(UInt8(ascii: "u")), &value)
            }, read: { _ in () })
    }

    /// Closes the connection and ends the thread.
    func disconnect() async {
        _ = await thread.run { [handle] in
            if let bus = handle.bus { sd_bus_flush_close_unref(bus) }
            handle.bus = nil
        }
        thread.close()
    }

    // MARK: - sd-bus plumbing (runs on `thread`)

    private static func appendString(_ m: OpaquePointer?, _ value: String) -> Int32 {
        value.withCString { sd_bus_message_append_basic(m, CChar(UInt8(ascii: "s")), $0) }
    }

    private static func appendHint(
        _ m: OpaquePointer?, _ key: String, type: String, value: (OpaquePointer?) -> Int32
    ) -> Int32 {
        var r = sd_bus_message_open_container(m, CChar(UInt8(ascii: "e")), "sv")
        if r >= 0 { r = appendString(m, key) }
        if r >= 0 { r = sd_bus_message_open_container(m, CChar(UInt8(ascii: "v")), type) }
        if r >= 0 { r = value(m) }
        if r >= 0 { r = sd_bus_message_close_container(m) }
        if r >= 0 { r = sd_bus_message_close_container(m) }
        return r
    }

    private func call<T: Sendable>(
        _ member: String,
        append: @escaping @Sendable (OpaquePointer?) -> Int32,
        read: @escaping @Sendable (OpaquePointer?) -> T
    ) async throws -> T {
        let result: Result<T, Failure>? = await thread.run { [handle] in
            guard let bus = handle.bus else { return .failure(Failure(description: "not connected")) }
            var message: OpaquePointer?
            var r = sd_bus_message_new_method_call(bus, &message, Self.service, Self.path, Self.service, member)
            if r >= 0 { r = append(message) }
            guard r >= 0 else {
                if let message { sd_bus_message_unref(message) }
                return .failure(Failure(description: "cannot build \(member): \(String(cString: strerror(-r)))"))
            }
            var error = sd_bus_error()
            var reply: OpaquePointer?
            r = sd_bus_call(bus, message, Self.timeoutUsec, &error, &reply)
            sd_bus_message_unref(message)
            defer {
                sd_bus_error_free(&error)
                if let reply { sd_bus_message_unref(reply) }
            }
            guard r >= 0 else {
                let name = error.name.map { String(cString: $0) } ?? String(cString: strerror(-r))
                let text = error.message.map { String(cString: $0) } ?? ""
                return .failure(Failure(description: "\(member) failed: \(name) \(text)"))
            }
            return .success(read(reply))
        }
        guard let result else { throw Failure(description: "the session bus thread was closed") }
        return try result.get()
    }
}
