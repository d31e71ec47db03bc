import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What the workers say on their notify sockets, and their watchdogs.
extension SupervisorLoop {
    // MARK: - Notify messages and watchdog

    func apply(_ message: NotifyMessage, to worker: WorkerRuntime, now: Double) {
        if let status = message.status, status != worker.statusText {
            // The latest text wins; events about it are spaced out (more so for a flooding worker).
            worker.statusText = status
            let gap = worker.flooding ? Self.floodingStatusEventGap : Self.statusEventGap
            if worker.statusEventAt == nil {
                if now - worker.lastStatusEvent >= gap {
                    worker.lastStatusEvent = now
                    emit(.statusChanged, worker)
                } else {
                    worker.statusEventAt = worker.lastStatusEvent + gap
                }
            }
        }
        if let usec = message.watchdogUsec, usec > 0 {
            worker.watchdogInterval = Double(usec) / 1_000_000
            worker.watchdogDeadline = now + worker.watchdogInterval!
        }
        if message.watchdogPing, let interval = worker.watchdogInterval {
            worker.watchdogDeadline = now + interval
        }
        if message.ready && (worker.state == .starting || worker.state == .running) {
            worker.state = .ready
            if worker.history.quickFailures > 0 && worker.restarts > 0 { worker.reason = nil }
            emit(.ready, worker)
        }
        if message.stopping && worker.state != .stopping {
            worker.state = .stopping
            emit(.statusChanged, worker)
        }
        if message.watchdogTrigger { watchdogExpired(worker) }
    }

    /// Marks a worker `flooding` once it sends more than ``NotifyReader/floodThreshold``
    /// datagrams within a second, and clears it after a quiet second.
    func updateFlooding(_ worker: WorkerRuntime, now: Double) {
        if !worker.flooding, worker.notifyCount > NotifyReader.floodThreshold {
            worker.flooding = true
            logger.warning(
                """
                worker floods its notify socket (more than \(NotifyReader.floodThreshold) datagrams a second); \
                its STATUS= is taken at most once a second until it calms down
                """,
                metadata: ["worker.name": "\(worker.spec.name)"])
            emit(.floodingChanged, worker)
        } else if worker.flooding, now - worker.notifyWindowStart >= 1 {
            // The window is over: it calmed down unless a new window fills up again.
            worker.notifyWindowStart = now
            worker.notifyCount = 0
            worker.flooding = false
            logger.notice("worker stopped flooding its notify socket", metadata: ["worker.name": "\(worker.spec.name)"])
            emit(.floodingChanged, worker)
        }
    }

    func watchdogExpired(_ worker: WorkerRuntime) {
        worker.watchdogDeadline = nil
        worker.watchdogFired = true
        logger.warning(
            "worker missed its watchdog deadline; killing its process group",
            metadata: ["worker.name": "\(worker.spec.name)", "process.pid": "\(worker.pid ?? 0)"])
        emit(.watchdogTimeout, worker)
        signalGroup(worker, SIGKILL)
    }
}
