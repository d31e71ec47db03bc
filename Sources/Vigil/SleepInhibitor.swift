import Logging
import Synchronization
import VigilDBus

#if canImport(Glibc)
import Glibc
#endif

/// The host's side of systemd-logind's sleep handling, on the system bus: sleep inhibitor locks
/// (`Inhibit("sleep", who, why, mode)`, each held as the file descriptor logind hands out) and
/// the `PrepareForSleep` signal.
///
/// Opened by ``VigilHost`` on each system bus connection its ``DBusKeeper`` makes and closed when
/// the host goes down or the connection is lost; `onPrepareForSleep`
/// runs on the bus thread, in signal order, and must not block.
final class SleepInhibitor: Sendable {
    /// A sleep inhibitor lock's mode.
    enum Mode: String, Sendable, CaseIterable {
        /// Delays sleep until the lock is released (at most logind's `InhibitDelayMaxSec`).
        case delay
        /// Keeps the machine from sleeping while the lock is held.
        case block
    }

    static let service = "org.freedesktop.login1"
    static let path = "/org/freedesktop/login1"
    static let manager = "org.freedesktop.login1.Manager"

    private let connection: DBusConnection
    private let subscription: DBusSubscription
    private let who: String
    private let locks = Mutex<[Mode: Int32]>([:])
    private let logger: Logger

    private init(connection: DBusConnection, subscription: DBusSubscription, who: String, logger: Logger) {
        self.connection = connection
        self.subscription = subscription
        self.who = who
        self.logger = logger
    }

    /// Checks that logind is on the system bus `connection` leads to and follows `PrepareForSleep`
    /// there. The connection stays the caller's (a ``DBusKeeper``'s), which closes it.
    ///
    /// - Throws: a ``DBusError`` saying why there is no sleep handling (no logind, a bus that does
    ///   not answer within the call's deadline).
    static func open(
        connection: DBusConnection, who: String, logger: Logger,
        onPrepareForSleep: @escaping @Sendable (Bool) -> Void
    ) async throws(DBusError) -> SleepInhibitor {
        // NameHasOwner, not a call to logind: a call would ask the bus to activate logind,
        // which can take the whole call timeout where it cannot start.
        guard try await connection.nameHasOwner(service, timeout: .seconds(5)) else {
            throw DBusError(
                code: .callFailed, name: DBusErrorName.serviceUnknown,
                message: "systemd-logind (\(service)) is not on the system bus at \(connection.address)")
        }
        let subscription = try await connection.subscribe(
            matchRule: "type='signal',path='\(path)',interface='\(manager)',member='PrepareForSleep'"
        ) { message in
            if case .bool(let start)? = message.arguments.first { onPrepareForSleep(start) }
        }
        return SleepInhibitor(connection: connection, subscription: subscription, who: who, logger: logger)
    }

    /// The modes of the locks held now, delay first.
    var held: [Mode] {
        let current = locks.withLock { $0 }
        return Mode.allCases.filter { current[$0] != nil }
    }

    /// Takes a sleep lock of `mode` (nothing when one is held already).
    func take(_ mode: Mode, why: String) async throws(DBusError) {
        if locks.withLock({ $0[mode] != nil }) { return }
        let reply = try await connection.call(
            destination: Self.service, path: Self.path, interface: Self.manager, member: "Inhibit",
            arguments: [.string("sleep"), .string(who), .string(why), .string(mode.rawValue)],
            timeout: .seconds(5))
        guard case .unixFD(let fd)? = reply.first else {
            throw DBusError(code: .invalidMessage, message: "Inhibit: logind answered \(reply), not a file descriptor")
        }
        let previous = locks.withLock { locks -> Int32? in
            defer { locks[mode] = fd }
            return locks[mode]
        }
        if let previous { Glibc.close(previous) }
        logger.debug("sleep \(mode.rawValue) lock taken", metadata: ["vigil.sleep_lock": "\(mode.rawValue)"])
    }

    /// Releases the lock of `mode` (closes its descriptor); nothing when none is held.
    func release(_ mode: Mode) {
        guard let fd = locks.withLock({ $0.removeValue(forKey: mode) }) else { return }
        Glibc.close(fd)
        logger.debug("sleep \(mode.rawValue) lock released", metadata: ["vigil.sleep_lock": "\(mode.rawValue)"])
    }

    /// Releases every lock and stops following `PrepareForSleep` (the connection stays open).
    func close() async {
        for mode in Mode.allCases { release(mode) }
        await subscription.cancel()
    }

    deinit {
        for fd in locks.withLock({ Array($0.values) }) { Glibc.close(fd) }
    }
}
