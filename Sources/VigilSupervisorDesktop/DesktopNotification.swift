public import Logging
import VigilDBus
public import VigilSupervisor

/// The supervisor's notification on the desktop (freedesktop Notifications over the session bus):
/// give it to ``VigilSupervisor/SupervisorPlugin/implementation(notifier:)``. `Vigil`'s built-in
/// supervisor uses it.
public struct DesktopNotifier: SupervisorNotifier {
    /// Creates the notifier.
    public init() {}

    public func show(
        environment: [String: String], appName: String, summary: String, body: String, logger: Logger
    ) async -> (any SupervisorNotification)? {
        await DesktopNotification.show(
            environment: environment, appName: appName, summary: summary, body: body, logger: logger)
    }
}

/// The one "running in background" notification (freedesktop Notifications): urgency low,
/// `resident` when the server advertises `persistence`, never expiring, updated in place through
/// `replaces_id`, closed on stop.
actor DesktopNotification: SupervisorNotification {
    private let bus: DBusConnection
    private let appName: String
    private let summary: String
    private let logger: Logger
    private var id: UInt32 = 0
    private var resident = false
    private var shownBody: String?

    private static let service = "org.freedesktop.Notifications"
    private static let path = "/org/freedesktop/Notifications"

    private init(bus: DBusConnection, appName: String, summary: String, logger: Logger) {
        self.bus = bus
        self.appName = appName
        self.summary = summary
        self.logger = logger
    }

    /// Shows the notification; `nil` (logged, not an error) when there is no session bus or no
    /// notification server.
    static func show(
        environment: [String: String], appName: String, summary: String, body: String, logger: Logger
    ) async -> DesktopNotification? {
        guard let address = DBusBus.session.resolve(environment: environment) else {
            logger.debug("no session bus: the desktop notification channel is off")
            return nil
        }
        let bus: DBusConnection
        do {
            bus = try await DBusConnection.connect(to: .address(address), logger: logger)
        } catch {
            logger.info("no desktop notification: \(error)", metadata: ["dbus.address": "\(address)"])
            return nil
        }
        do {
            let capabilities = try await call(bus, "GetCapabilities").first?.array?.compactMap(\.string) ?? []
            let notification = DesktopNotification(bus: bus, appName: appName, summary: summary, logger: logger)
            try await notification.open(body: body, resident: capabilities.contains("persistence"))
            return notification
        } catch {
            logger.info("no desktop notification: \(error)", metadata: ["dbus.address": "\(address)"])
            await bus.close()
            return nil
        }
    }

    private static func call(_ bus: DBusConnection, _ member: String, _ arguments: [DBusValue] = [])
        async throws(DBusError)
        -> [DBusValue]
    {
        try await bus.call(
            destination: service, path: path, interface: service, member: member, arguments: arguments,
            timeout: .seconds(2))
    }

    /// `Notify`: shows or (with `replacesID`) updates the notification; returns its id.
    private func notify(replacesID: UInt32, body: String) async throws(DBusError) -> UInt32 {
        var hints: [String: DBusValue] = ["urgency": .byte(0)]
        if resident { hints["resident"] = .bool(true) }
        let reply = try await Self.call(
            bus, "Notify",
            [
                .string(appName), .uint32(replacesID), .string(""), .string(summary), .string(body), .stringArray([]),
                .stringVariantMap(hints), .int32(0),  // never expires
            ])
        guard case .uint32(let id)? = reply.first else {
            throw DBusError(code: .invalidMessage, message: "Notify answered \(reply), not a notification id")
        }
        return id
    }

    private func open(body: String, resident: Bool) async throws(DBusError) {
        self.resident = resident
        id = try await notify(replacesID: 0, body: body)
        shownBody = body
    }

    /// Replaces the body in place (same id); does nothing when the body is unchanged.
    func update(body: String) async {
        guard body != shownBody, id != 0 else { return }
        do {
            id = try await notify(replacesID: id, body: body)
            shownBody = body
        } catch {
            logger.info("could not update the desktop notification: \(error)")
        }
    }

    /// Closes the notification and the bus connection.
    func close() async {
        if id != 0 {
            do { _ = try await Self.call(bus, "CloseNotification", [.uint32(id)]) } catch {
                logger.info("could not close the desktop notification: \(error)")
            }
            id = 0
        }
        await bus.close()
    }
}
