public import Logging
import VigilBase

/// The decisions for a connection to an optional bus that is kept up (MPRIS on the session bus,
/// sleep handling on the system bus): when to say it is off (once per outage), when it is back,
/// and how long to wait before the next attempt. Pure: no threads, no clock.
public struct DBusLinkState: Sendable, Equatable {
    /// What the keeper does next.
    public enum Action: Sendable, Equatable {
        /// Say (once for this outage) that the channel is off and why, and whether it is tried again.
        case reportDown(reason: String, retrying: Bool)
        /// Say that the channel is on; `again` after an outage.
        case reportUp(again: Bool)
        /// Wait this long, then connect again.
        case retry(after: Duration)
        /// Stop trying: there is no such bus in this environment (nothing names one).
        case giveUp
    }

    /// The first wait after a failure or a loss.
    public var initialDelay: Duration
    /// The longest wait between attempts.
    public var maximumDelay: Duration
    /// Failed attempts since the last success.
    public private(set) var failures = 0
    /// Why the channel is off now; `nil` while it is on or before the first attempt.
    public private(set) var downReason: String?
    private var wasUp = false

    public init(initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(30)) {
        self.initialDelay = initialDelay
        self.maximumDelay = max(initialDelay, maximumDelay)
    }

    /// The wait before the next attempt after `failures` failures in a row: doubling from
    /// ``initialDelay`` up to ``maximumDelay``.
    public func delay(afterFailures failures: Int) -> Duration {
        var delay = initialDelay
        for _ in 1..<max(1, failures) {
            delay *= 2
            if delay >= maximumDelay { return maximumDelay }
        }
        return min(delay, maximumDelay)
    }

    /// The bus answered and what lives on it is published.
    public mutating func connected() -> [Action] {
        let again = wasUp || downReason != nil
        failures = 0
        downReason = nil
        wasUp = true
        return [.reportUp(again: again)]
    }

    /// An attempt failed with `error`.
    public mutating func failed(_ error: DBusError) -> [Action] {
        let reason = "\(error.message) [\(error.code.rawValue)]"
        if error.code == .noBus {
            let first = downReason == nil
            downReason = reason
            return (first ? [.reportDown(reason: reason, retrying: false)] : []) + [.giveUp]
        }
        failures += 1
        var actions: [Action] = []
        if downReason == nil { actions.append(.reportDown(reason: reason, retrying: true)) }
        downReason = reason
        actions.append(.retry(after: delay(afterFailures: failures)))
        return actions
    }

    /// A connection that was up went away (the bus restarted or stopped).
    public mutating func lost(reason: String) -> [Action] {
        failures = 1
        downReason = reason
        return [.reportDown(reason: reason, retrying: true), .retry(after: initialDelay)]
    }
}

/// What a ``DBusKeeper`` tells its owner.
public enum DBusLinkEvent: Sendable, Equatable {
    /// The channel is off: `reason` says why; `retrying` when the keeper tries again.
    case down(reason: String, retrying: Bool)
    /// The channel is on (`again` after an outage).
    case up(again: Bool)
}

/// Keeps a connection to an optional bus up until the calling task is cancelled: connects (each
/// attempt bounded by its deadline, on the connection's own thread), runs the session, and after
/// a failure or a lost bus waits (``DBusLinkState`` decides how long) and connects again.
public struct DBusKeeper: Sendable {
    /// Waits a duration; cancellation ends the wait. Injected so tests run in virtual time.
    public typealias Sleep = @Sendable (Duration) async -> Void

    public var bus: DBusBus
    public var environment: [String: String]
    public var connectTimeout: Duration
    public var state: DBusLinkState
    public var sleep: Sleep

    public init(
        bus: DBusBus, environment: [String: String], connectTimeout: Duration = DBusConnection.defaultConnectTimeout,
        state: DBusLinkState = DBusLinkState(), sleep: @escaping Sleep = { try? await Task.sleep(for: $0) }
    ) {
        self.bus = bus
        self.environment = environment
        self.connectTimeout = connectTimeout
        self.state = state
        self.sleep = sleep
    }

    /// Runs until cancelled (or until there is no such bus at all). `session` publishes what lives
    /// on a fresh connection and returns; it throws when it cannot. The keeper then waits for the
    /// connection to go away, or for cancellation, and calls `withdraw` with the connection (still
    /// open on cancellation, gone after a loss) before closing it. `report` hears every change.
    public func run(
        logger: Logger,
        report: @escaping @Sendable (DBusLinkEvent) async -> Void,
        session: @escaping @Sendable (DBusConnection) async throws(DBusError) -> Void,
        withdraw: @escaping @Sendable (DBusConnection) async -> Void
    ) async {
        var state = self.state
        while !Task.isCancelled {
            var actions: [DBusLinkState.Action]
            do throws(DBusError) {
                let connection = try await DBusConnection.connect(
                    to: bus, environment: environment, timeout: connectTimeout, logger: logger)
                do throws(DBusError) {
                    try await session(connection)
                } catch {
                    // Withdrawing (giving a bus name back) must reach the bus on a stop too, bounded
                    // by its own call timeouts: shielded from the stop's cancellation.
                    await runUncancelled { await withdraw(connection) }
                    await connection.close()
                    throw error
                }
                for action in state.connected() { await perform(action, report: report) }
                await connection.disconnection()
                await runUncancelled { await withdraw(connection) }
                await connection.close()
                if Task.isCancelled { return }
                actions = state.lost(reason: "the \(bus) at \(connection.address) closed the connection")
            } catch {
                if Task.isCancelled || error.code == .cancelled { return }
                actions = state.failed(error)
            }
            for action in actions {
                switch action {
                case .retry(let delay): await sleep(delay)
                case .giveUp: return
                default: await perform(action, report: report)
                }
            }
        }
    }

    private func perform(_ action: DBusLinkState.Action, report: @Sendable (DBusLinkEvent) async -> Void) async {
        switch action {
        case .reportDown(let reason, let retrying): await report(.down(reason: reason, retrying: retrying))
        case .reportUp(let again): await report(.up(again: again))
        case .retry, .giveUp: break
        }
    }
}
