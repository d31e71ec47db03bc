import Logging
import VigilCore
import VigilDBus
import VigilPlugin

/// System sleep: sleep handling is a structured child of the host's loop (started by the
/// machine's `openSleepHandling`, ended by `closeSleepHandling`); it turns logind's signals
/// into the machine's `sleepComing` / `sleepEnded` / `sleepLocksLost` events.
extension VigilHost {
    static let delayLockWhy = "stops the keep-alive audio streams cleanly before sleep"
    static let blockLockWhy = "[host] inhibit_sleep = true in vigil.toml"

    /// Keeps sleep handling up until `stop` ends: a ``DBusKeeper`` connects to the system bus
    /// (within its deadline), checks for logind, takes the sleep delay lock (and the block lock
    /// when `[host] inhibit_sleep = true`) and follows `PrepareForSleep`; when the bus does not
    /// answer, or restarts, the host says once why sleep handling is off and tries again with
    /// backoff. The locks are released when it ends.
    func sleepHandling(_ inbox: HostInbox, until stop: AsyncStream<Void>) async {
        var keeper = options.systemBus
        keeper.bus = .system
        keeper.environment = options.environment.variables
        let who = hostName
        let inhibitSleep = declarations.inhibitSleep
        let logger = logger
        // Signals arrive on the bus thread; this child handles them in order.
        let (signals, signalSink) = AsyncStream.makeStream(of: Bool.self)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [keeper] in
                await keeper.run(
                    logger: logger,
                    report: { event in await self.sleepLink(event, inbox) },
                    session: { connection throws(DBusError) in
                        let inhibitor = try await SleepInhibitor.open(
                            connection: connection, who: who, logger: logger
                        ) { start in _ = signalSink.yield(start) }
                        do throws(DBusError) {
                            try await inhibitor.take(.delay, why: Self.delayLockWhy)
                            if inhibitSleep { try await inhibitor.take(.block, why: Self.blockLockWhy) }
                        } catch {
                            await inhibitor.close()
                            throw error
                        }
                        await self.installSleepInhibitor(inhibitor)
                    },
                    withdraw: { _ in await self.withdrawSleepInhibitor(inbox) })
                inbox.send(.machine(.sleepSettled))
            }
            group.addTask {
                for await start in signals {
                    guard let inhibitor = await self.sleepInhibitor else { continue }
                    if start {
                        logger.notice(
                            "the system is going to sleep: stopping the audio plugins",
                            metadata: ["vigil.sleep": "true"])
                        inbox.send(.machine(.sleepComing))
                    } else {
                        logger.notice(
                            "the system woke up: starting the audio plugins again", metadata: ["vigil.sleep": "false"])
                        do {
                            try await inhibitor.take(.delay, why: Self.delayLockWhy)
                        } catch {
                            logger.warning(
                                "cannot take the sleep delay lock again: \(error)", metadata: ["vigil.sleep": "false"])
                        }
                        inbox.send(.machine(.sleepEnded))
                    }
                }
            }
            // Until the host closes sleep handling (the keeper may end before, when there is no
            // system bus at all: sleep handling then stays off, and is not opened again).
            for await _ in stop {}
            group.cancelAll()
        }
        signalSink.finish()
        if let inhibitor = sleepInhibitor {
            sleepInhibitor = nil
            await inhibitor.close()
        }
        sleepOff = nil
    }

    private func installSleepInhibitor(_ inhibitor: SleepInhibitor) async {
        if let previous = sleepInhibitor { await previous.close() }
        sleepInhibitor = inhibitor
    }

    /// The system bus connection ended (lost or closed): the locks went with it.
    private func withdrawSleepInhibitor(_ inbox: HostInbox) async {
        guard let inhibitor = sleepInhibitor else { return }
        sleepInhibitor = nil
        await inhibitor.close()
        publish()
        inbox.send(.machine(.sleepLocksLost))
    }

    /// What the system bus keeper reports: sleep handling on, or off and why (said once per outage).
    private func sleepLink(_ event: DBusLinkEvent, _ inbox: HostInbox) {
        switch event {
        case .up(let again):
            sleepOff = nil
            sleepOffSaid = false
            let locks = sleepInhibitor?.held.map(\.rawValue) ?? []
            logger.log(
                level: again ? .notice : .info,
                "sleep handling \(again ? "back " : "")on: holding logind sleep lock(s) \(locks.joined(separator: ", "))",
                metadata: ["vigil.sleep_locks": "\(locks.joined(separator: ","))"])
        case .down(let reason, let retrying):
            sleepOff = reason
            if !sleepOffSaid {
                sleepOffSaid = true
                let effect =
                    "the audio plugins are not stopped before system sleep"
                    + (declarations.inhibitSleep ? " and inhibit_sleep has no effect" : "")
                    + (retrying ? "; trying again with backoff" : "")
                logger.notice("sleep handling is off: \(reason) — \(effect)", metadata: ["vigil.sleep": "off"])
            }
        }
        inbox.send(.machine(.sleepSettled))
        publish()
    }
}
