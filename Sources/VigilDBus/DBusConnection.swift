internal import CSystemd
import Dispatch
import FoundationEssentials
public import Logging
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// A connection to a D-Bus bus through sd-bus (libsystemd), served by a thread it owns.
///
/// sd-bus connections are not thread-safe, so every sd-bus call runs on the connection's own
/// thread, which sleeps in `poll` between messages; the async methods queue their work there
/// and return when the reply arrives. Handlers (signals, exported methods and properties) run
/// on that thread too and must not block.
///
/// Call ``close()`` when done; the connection then answers every pending call with
/// ``DBusError/Code/disconnected`` and its thread ends.
public final class DBusConnection: Sendable {
    /// The bus this connection was opened to.
    public let bus: DBusBus
    /// The address it resolved to.
    public let address: String
    /// This connection's unique name on the bus (`:1.42`).
    public let uniqueName: String

    let loop: BusLoop

    private init(bus: DBusBus, address: String, uniqueName: String, loop: BusLoop) {
        self.bus = bus
        self.address = address
        self.uniqueName = uniqueName
        self.loop = loop
    }

    deinit { loop.close() }

    /// How long ``connect(to:environment:timeout:logger:)`` waits by default for a bus to accept
    /// the connection, authenticate it and answer `Hello`: a bus that accepts and never answers
    /// costs at most this, never sd-bus's own 90 s authentication timeout.
    public static let defaultConnectTimeout: Duration = .seconds(5)

    /// Connects to `bus` (its address resolved in `environment`, the host's variables: nothing here
    /// reads the process environment, so `.session` needs `environment` to name one) and says hello,
    /// within `timeout` and on the connection's own thread. Cancelling the calling task ends the
    /// wait at once.
    ///
    /// sd-bus's calls made while connected (`AddMatch` among them) are bounded by `timeout` too.
    /// - Throws: ``DBusError/Code/noBus`` when there is no such bus, ``DBusError/Code/connectFailed``
    ///   when it cannot be reached, ``DBusError/Code/timedOut`` when it does not answer within
    ///   `timeout`, ``DBusError/Code/cancelled`` when the calling task is cancelled.
    public static func connect(
        to bus: DBusBus, environment: [String: String] = [:], timeout: Duration = defaultConnectTimeout,
        logger: Logger
    ) async throws(DBusError) -> DBusConnection {
        guard let address = bus.resolve(environment: environment) else {
            throw DBusError(
                code: .noBus,
                message: "there is no \(bus): set DBUS_SESSION_BUS_ADDRESS or start a session (dbus-run-session)")
        }
        let loop: BusLoop
        do throws(SystemCallError) {
            loop = try BusLoop(name: "vigil-dbus", logger: logger)
        } catch {
            throw DBusError(
                code: .connectFailed, cause: error,
                message: "cannot create the bus thread's wake-up descriptor — raise the open-files limit (ulimit -n)")
        }
        let usec = BusLoop.microseconds(timeout)
        let result: Result<String, DBusError> = await withTaskCancellationHandler {
            await loop.run { loop in loop.open(bus: bus, address: address, usec: usec) }
                ?? .failure(DBusError(code: .disconnected, message: "the bus thread ended"))
        } onCancel: {
            loop.abortOpen()
        }
        switch result {
        case .success(let unique):
            return DBusConnection(bus: bus, address: address, uniqueName: unique, loop: loop)
        case .failure(let error):
            loop.close()
            throw error
        }
    }

    /// True until the bus hangs up or ``close()`` is called.
    public var isConnected: Bool { loop.isConnected }

    /// Returns once the bus hangs up or ``close()`` is called (at once when that happened already),
    /// or when the calling task is cancelled. Watch a connection with it to reconnect after the
    /// bus restarts.
    public func disconnection() async {
        await loop.disconnection()
    }

    /// Calls `interface.member` on `path` at `destination` and returns the reply's values.
    /// - Throws: ``DBusError/Code/callFailed`` with the peer's error ``DBusError/name``,
    ///   ``DBusError/Code/timedOut``, ``DBusError/Code/disconnected``, or
    ///   ``DBusError/Code/invalidMessage`` when an argument does not match its declared type.
    public func call(
        destination: String?, path: String, interface: String?, member: String, arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> [DBusValue] {
        let usec = BusLoop.microseconds(timeout)
        let id = loop.newCallID()
        let loop = self.loop
        let result: Result<[DBusValue], DBusError> = await withTaskCancellationHandler {
            await Handoff.value { handoff in
                // Cancelled before the call was queued: its cancellation job would run too early.
                if Task.isCancelled {
                    handoff.deliver(.failure(DBusError(code: .cancelled, message: "\(member): cancelled")))
                    return
                }
                let queued = loop.enqueue { loop in
                    loop.startCall(
                        id: id, destination: destination, path: path, interface: interface, member: member,
                        arguments: arguments, usec: usec, handoff: handoff)
                }
                if !queued {
                    handoff.deliver(
                        .failure(DBusError(code: .disconnected, message: "\(member): the connection is closed")))
                }
            }
        } onCancel: {
            loop.enqueue { loop in loop.cancelCall(id) }
        }
        return try result.get()
    }

    /// Asks the bus for `name`; returns what the bus answered (check ``DBusNameReply/owns``).
    public func requestName(_ name: String, flags: DBusNameFlags = [.doNotQueue]) async throws(DBusError)
        -> DBusNameReply
    {
        let reply = try await callBus("RequestName", [.string(name), .uint32(flags.rawValue)])
        guard case .uint32(let raw)? = reply.first, let answer = DBusNameReply(rawValue: raw) else {
            throw DBusError(code: .invalidMessage, message: "RequestName: unexpected reply \(reply)")
        }
        return answer
    }

    /// Gives `name` back to the bus. Returns false when this connection did not own it.
    @discardableResult
    public func releaseName(_ name: String, timeout: Duration = .seconds(25)) async throws(DBusError) -> Bool {
        let reply = try await callBus("ReleaseName", [.string(name)], timeout: timeout)
        return reply.first == .uint32(1)
    }

    /// Whether anyone owns `name` on the bus.
    public func nameHasOwner(_ name: String, timeout: Duration = .seconds(25)) async throws(DBusError) -> Bool {
        let reply = try await callBus("NameHasOwner", [.string(name)], timeout: timeout)
        return reply.first == .bool(true)
    }

    /// Calls `member` of the bus itself (`org.freedesktop.DBus`).
    private func callBus(_ member: String, _ arguments: [DBusValue], timeout: Duration = .seconds(25))
        async throws(DBusError) -> [DBusValue]
    {
        try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: member, arguments: arguments, timeout: timeout)
    }

    /// Calls `handler` on the connection's thread for every message matching `matchRule`
    /// (for example `type='signal',interface='org.freedesktop.login1.Manager',member='PrepareForSleep'`).
    /// The rule is installed on the bus before this returns.
    public func subscribe(
        matchRule: String, _ handler: @escaping @Sendable (DBusSignalMessage) -> Void
    ) async throws(DBusError) -> DBusSubscription {
        let id = try await loop.perform("subscribe") { loop in loop.addMatch(matchRule, handler: handler) }
        return DBusSubscription { [loop] in _ = await loop.run { $0.removeRegistration(id) } }
    }

    /// Serves `interfaces` (plus Introspectable and Properties) on the object `path` until the
    /// returned object is ``DBusExportedObject/unexport()``ed or the connection closes.
    public func export(path: String, interfaces: [DBusInterface]) async throws(DBusError) -> DBusExportedObject {
        let object = ExportedObject(path: path, interfaces: interfaces, logger: loop.logger)
        let id = try await loop.perform("export") { loop in loop.addObject(object) }
        return DBusExportedObject(loop: loop, object: object, registration: id)
    }

    /// Sends the signal `interface.member` from `path`.
    public func emit(path: String, interface: String, member: String, arguments: [DBusValue] = [])
        async throws(DBusError)
    {
        try await loop.perform(member) { loop in
            loop.sendSignal(path: path, interface: interface, member: member, arguments: arguments)
        }
    }

    /// Closes the connection: pending calls fail with ``DBusError/Code/disconnected``,
    /// subscriptions and exports end, the thread exits. Safe to call twice.
    public func close() async {
        _ = await loop.run { $0.shutdown() }
        loop.close()
    }
}

/// An object served by ``DBusConnection/export(path:interfaces:)``.
public final class DBusExportedObject: Sendable {
    /// The object path.
    public var path: String { object.path }
    private let loop: BusLoop
    private let object: ExportedObject
    private let registration: UInt64

    init(loop: BusLoop, object: ExportedObject, registration: UInt64) {
        self.loop = loop
        self.object = object
        self.registration = registration
    }

    /// Sends `org.freedesktop.DBus.Properties.PropertiesChanged` for `names` of `interface`,
    /// with their current values (or as invalidated, per their ``DBusProperty/ChangeSignal``).
    /// Properties declared ``DBusProperty/ChangeSignal/none`` or `const` are left out.
    public func propertiesChanged(interface: String, _ names: [String]) async throws(DBusError) {
        let object = self.object
        try await loop.perform("PropertiesChanged") { loop in
            guard let arguments = object.propertiesChangedArguments(interface: interface, names: names) else {
                return .success(())
            }
            return loop.sendSignal(
                path: object.path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                arguments: arguments)
        }
    }

    /// Sends the signal `interface.signal` from this object.
    public func emit(interface: String, signal: String, arguments: [DBusValue] = []) async throws(DBusError) {
        let path = object.path
        try await loop.perform(signal) { loop in
            loop.sendSignal(path: path, interface: interface, member: signal, arguments: arguments)
        }
    }

    /// Stops serving the object. Safe to call twice.
    public func unexport() async {
        let id = registration
        _ = await loop.run { $0.removeRegistration(id) }
    }
}
