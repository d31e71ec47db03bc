import Logging
import Synchronization
import VigilBase
import VigilDBus
import VigilHostCore
import VigilPlugin

/// Sleep handling through systemd-logind on the system bus (the default ``SleepHandling``): a
/// ``DBusKeeper`` connects (within its deadline), checks for logind, takes the sleep delay lock
/// (and the block lock when `[host] inhibit_sleep = true`) and follows `PrepareForSleep`; when the
/// bus does not answer, or restarts, it says once why sleep handling is off and tries again with
/// backoff. Its locks are released when ``run(report:)`` ends.
final class LogindSleepHandling: SleepHandling {
    static let delayLockWhy = "stops the keep-alive audio streams cleanly before sleep"
    static let blockLockWhy = "[host] inhibit_sleep = true in vigil.toml"

    private struct State {
        var inhibitor: SleepInhibitor?
        /// Why sleep handling is off, `nil` while it is on.
        var off: String?
        /// True once it said sleep handling is off; said again only after it was back on.
        var offSaid = false
    }
    private let state = Mutex(State())
    private let setup: SleepHandlingSetup
    /// The system bus connection's deadline and reconnection backoff.
    private let systemBus: DBusKeeper

    init(_ setup: SleepHandlingSetup, systemBus: DBusKeeper) {
        self.setup = setup
        self.systemBus = systemBus
    }

    var status: (locks: [String], off: String?) {
        state.withLock { ($0.inhibitor?.held.map(\.rawValue) ?? [], $0.off) }
    }

    func releaseDelayLock() {
        state.withLock { $0.inhibitor }?.release(.delay)
    }

    func run(report: @escaping @Sendable (SleepReport) async -> Void) async {
        var keeper = systemBus
        keeper.bus = .system
        keeper.environment = setup.environment
        let (who, inhibitSleep, logger) = (setup.hostName, setup.inhibitSleep, setup.logger)
        // Signals arrive on the bus thread; the second child handles them in order.
        let (signals, signalSink) = AsyncStream.makeStream(of: Bool.self)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [keeper] in
                await keeper.run(
                    logger: logger,
                    report: { event in
                        self.link(event)
                        await report(.settled)
                        await report(.changed)
                    },
                    session: { connection throws(DBusError) in
                        let inhibitor = try await SleepInhibitor.open(connection: connection, who: who, logger: logger)
                        {
                            start in _ = signalSink.yield(start)
                        }
                        do throws(DBusError) {
                            try await inhibitor.take(.delay, why: Self.delayLockWhy)
                            if inhibitSleep { try await inhibitor.take(.block, why: Self.blockLockWhy) }
                        } catch {
                            await inhibitor.close()
                            throw error
                        }
                        let previous = self.state.withLock { state in
                            defer { state.inhibitor = inhibitor }
                            return state.inhibitor
                        }
                        await previous?.close()
                    },
                    withdraw: { _ in
                        // The connection ended (lost or closed): the locks went with it.
                        guard let inhibitor = self.state.withLock({ $0.inhibitor.take() }) else { return }
                        await inhibitor.close()
                        await report(.changed)
                        await report(.locksLost)
                    })
                // The keeper ends early when there is no system bus at all: sleep handling stays off.
                await report(.settled)
            }
            group.addTask {
                for await start in signals {
                    guard let inhibitor = self.state.withLock({ $0.inhibitor }) else { continue }
                    if start {
                        logger.notice(
                            "the system is going to sleep: stopping the audio plugins",
                            metadata: ["vigil.sleep": "true"])
                        await report(.coming)
                    } else {
                        logger.notice(
                            "the system woke up: starting the audio plugins again", metadata: ["vigil.sleep": "false"])
                        do {
                            try await inhibitor.take(.delay, why: Self.delayLockWhy)
                        } catch {
                            logger.warning(
                                "cannot take the sleep delay lock again: \(error)", metadata: ["vigil.sleep": "false"])
                        }
                        await report(.ended)
                    }
                }
            }
            await PluginLifetime.untilCancelled()
            group.cancelAll()
        }
        signalSink.finish()
        let inhibitor = state.withLock { state -> SleepInhibitor? in
            state.off = nil
            return state.inhibitor.take()
        }
        await inhibitor?.close()
    }

    /// What the system bus keeper reports: sleep handling on, or off and why (said once per outage).
    private func link(_ event: DBusLinkEvent) {
        switch event {
        case .up(let again):
            let locks = state.withLock { state -> [String] in
                state.off = nil
                state.offSaid = false
                return state.inhibitor?.held.map(\.rawValue) ?? []
            }
            setup.logger.log(
                level: again ? .notice : .info,
                "sleep handling \(again ? "back " : "")on: holding logind sleep lock(s) \(locks.joined(separator: ", "))",
                metadata: ["vigil.sleep_locks": "\(locks.joined(separator: ","))"])
        case .down(let reason, let retrying):
            let say = state.withLock { state -> Bool in
                state.off = reason
                defer { state.offSaid = true }
                return !state.offSaid
            }
            guard say else { return }
            let effect =
                "the audio plugins are not stopped before system sleep"
                + (setup.inhibitSleep ? " and inhibit_sleep has no effect" : "")
                + (retrying ? "; trying again with backoff" : "")
            setup.logger.notice(
                "sleep handling is off: \(reason) — \(effect)",
                metadata: ["vigil.sleep": "off", OperatorEvent.metadataKey: "\(OperatorEvent.sleepHandlingOff)"])
        }
    }
}
