import FoundationEssentials

#if canImport(Glibc)
import Glibc
#endif

/// Which bus to connect to.
public enum DBusBus: Sendable, Hashable, CustomStringConvertible {
    /// The user's session bus: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` if that socket exists.
    case session
    /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS`, else `unix:path=/run/dbus/system_bus_socket`.
    case system
    /// A bus at an explicit address such as `unix:path=/tmp/bus`.
    case address(String)

    /// The address this bus resolves to in `environment` (the host's variables; nothing here reads
    /// the process environment), or `nil` when there is none (no session bus).
    public func resolve(environment: [String: String]) -> String? {
        switch self {
        case .address(let address):
            return address.isEmpty ? nil : address
        case .system:
            if let address = environment["DBUS_SYSTEM_BUS_ADDRESS"], !address.isEmpty { return address }
            return "unix:path=/run/dbus/system_bus_socket"
        case .session:
            if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
            if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
                var info = stat()
                let socket = runtime + "/bus"
                if stat(socket, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK { return "unix:path=" + socket }
            }
            return nil
        }
    }

    public var description: String {
        switch self {
        case .session: "session bus"
        case .system: "system bus"
        case .address(let address): "bus at \(address)"
        }
    }
}
