import Logging

/// The one "running in background" notification (freedesktop Notifications): urgency low,
/// `resident` when the server advertises `persistence`, never expiring, updated in place through
/// `replaces_id`, closed on stop.
actor DesktopNotification {
    private let bus: SessionBus
    private let appName: String
    private let summary: String
    private let logger: Logger
    private var id: UInt32 = 0
    private var resident = false
    private var shownBody: String?

    private init(bus: SessionBus, appName: String, summary: String, logger: Logger) {
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
        guard let address = SessionBus.address(environment: environment) else {
            logger.debug("no session bus: the desktop notification channel is off")
            return nil
        }
        let bus = SessionBus(address: address)
        do {
            try await bus.connect()
            let capabilities = try await bus.capabilities()
            let notification = DesktopNotification(bus: bus, appName: appName, summary: summary, logger: logger)
            try await notification.open(body: body, resident: capabilities.contains("persistence"))
            return notification
        } catch {
            logger.info(
                "no desktop notification: \(error)", metadata: ["dbus.address": "\(address)"])
            await bus.disconnect()
            return nil
        }
    }

    private func open(body: String, resident: Bool) async throws {
        self.resident = resident
        id = try await bus.notify(
            appName: appName, replacesID: 0, summary: summary, body: body, urgency: 0, resident: resident)
        shownBody = body
    }

    /// Replaces the body in place (same id); does nothing when the body is unchanged.
    func update(body: String) async {
        guard body != shownBody, id != 0 else { return }
        do {
            id = try await bus.notify(
                appName: appName, replacesID: id, summary: summary, body: body, urgency: 0, resident: resident)
            shownBody = body
        } catch {
            logger.info("could not update the desktop notification: \(error)")
        }
    }

    /// Closes the notification and the bus connection.
    func close() async {
        if id != 0 {
            do { try await bus.closeNotification(id) } catch {
                logger.info("could not close the desktop notification: \(error)")
            }
            id = 0
        }
        await bus.disconnect()
    }
}
