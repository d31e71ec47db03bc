internal import CVigilSpawn
import FoundationEssentials
import Logging
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The supervisor's own thread, a ``PollLoop``: it watches every worker's pidfd and notify
/// socket (the loop owns both), wakes for commands through the loop's wake descriptor, and
/// gives the nearest deadline (backoff, watchdog, kill) as the wait's end. It sleeps until
/// something happens; there is no polling loop. All worker state is confined to this thread.
/// Workers are forked from it, so it also is the thread their `PR_SET_PDEATHSIG` watches; it
/// exits only after every worker has been reaped.
///
/// This file is the loop's turn and its commands; the workers' lifecycle (spawn, exit,
/// restart) is in `SupervisorLoop+Workers.swift`, their notify messages and watchdogs in
/// `SupervisorLoop+Notify.swift`.
final class SupervisorLoop: @unchecked Sendable {
    enum Command {
        case start(@Sendable ([StartFailure]) -> Void)
        case stop(signal: Int32, reply: @Sendable () -> Void)
        case signal(Int32)
        /// Replies once the loop has read its clock and acted on every deadline due by then.
        case sync(@Sendable () -> Void)
        /// A new worker list (a reload): see ``SupervisorLoop/reconfigure(_:)``; replies with the
        /// workers that could not be started.
        case reconfigure([WorkerSpec], @Sendable ([StartFailure]) -> Void)
    }

    struct Shared {
        var commands: [Command] = []
        var snapshot: [WorkerStatus]
        var finished = false
        var settled = true
        var settledWaiters: [CheckedContinuation<[WorkerStatus], Never>] = []
        /// Why the workers run without cgroups although this host could have them (a fault).
        var cgroupProblem: String?
    }

    let configuration: SupervisorConfiguration
    let logger: Logger
    let spawner: WorkerSpawner
    let runtimeDirectory: String
    let onEvent: @Sendable (SupervisorEvent) -> Void
    let shared: Mutex<Shared>
    /// Where every deadline's time comes from (injected; see ``SupervisorClock``).
    let clock: SupervisorClock

    let loop: PollLoop
    // Loop-thread state.
    /// The workers, in the configuration's order (a reload's removed ones last, until reaped).
    var workers: [WorkerRuntime]
    var pendingEvents: [SupervisorEvent] = []
    private var stopReplies: [@Sendable () -> Void] = []
    private var syncReplies: [@Sendable () -> Void] = []
    private var stoppingAll = false
    let reader: NotifyReader
    /// The workers' cgroups and their sentinel, where the kernel allows them (else nil).
    var cgroups: CgroupTree?
    /// Workers whose pidfd the loop reported this turn.
    var exited: [WorkerRuntime] = []
    /// When the loop meant to wake up last time (for time the host did not run).
    private var plannedWake: Double?
    /// Whether the workers share the host's terminal: a worker that reads it (or writes with
    /// `tostop`) is stopped by SIGTTIN/SIGTTOU, which no pidfd reports, so the loop looks.
    private let onTerminal = isatty(0) == 1 || isatty(1) == 1 || isatty(2) == 1
    /// How often the loop looks for stopped workers while they share a terminal.
    static let stopCheckInterval = 1.0
    private var nextStopCheck = Double.infinity

    /// `statusChanged` events per worker are at most this far apart (latest text wins)…
    static let statusEventGap = 0.25
    /// …and this far apart while the worker floods its socket.
    static let floodingStatusEventGap = 1.0
    /// A wake-up this much later than planned means the host itself did not run (SIGSTOP, a
    /// frozen cgroup): that time is not held against the workers' watchdogs.
    static let stallThreshold = 1.0

    init(
        specs: [WorkerSpec], configuration: SupervisorConfiguration, environment: [String: String],
        runtimeDirectory: String, clock: SupervisorClock, logger: Logger,
        onEvent: @escaping @Sendable (SupervisorEvent) -> Void
    ) throws {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.spawner = WorkerSpawner(baseEnvironment: environment)
        self.reader = NotifyReader(uid: getuid(), logger: logger)
        self.runtimeDirectory = runtimeDirectory
        self.onEvent = onEvent
        self.workers = specs.enumerated().map { index, spec in
            WorkerRuntime(
                index: index, spec: spec, notifyPath: "\(runtimeDirectory)/\(index).notify",
                configuration: configuration)
        }
        self.shared = Mutex(Shared(snapshot: workers.map(\.status)))

        do throws(SystemCallError) {
            loop = try PollLoop(name: "vigil-supervise")
        } catch {
            throw Self.systemError(error.call, error.number)
        }
        do {
            for worker in workers { try openNotifySocket(worker) }
        } catch {
            closeNotifySockets()
            throw error
        }
        switch CgroupTree.make(workers: workers.count, logger: logger) {
        case .tree(let tree): cgroups = tree
        case .unavailable(let why):
            logger.debug(
                "no cgroup for the workers; process groups and PR_SET_PDEATHSIG only", metadata: ["reason": "\(why)"])
        case .failed(let why):
            let problem =
                "no cgroup for the workers (\(why)); processes they start are cleaned up by process group only"
                + (why.contains("open files") ? " — raise the host's descriptor limit (LimitNOFILE=, ulimit -Hn)" : "")
            logger.warning("\(problem)")
            shared.withLock { $0.cgroupProblem = problem }
        }
    }

    /// Creates `worker`'s notify socket and adds it to the loop.
    func openNotifySocket(_ worker: WorkerRuntime) throws {
        let fd = vigil_notify_listen(worker.notifyPath)
        guard fd >= 0 else {
            let failure = SystemCallError("vigil_notify_listen", errno: fd)
            if -fd == EMFILE || -fd == ENFILE { throw Self.systemError("socket", -fd) }
            throw SupervisorError(
                code: .runtimeDirectory,
                message:
                    "cannot create the notify socket \(worker.notifyPath) for worker \"\(worker.spec.name)\": "
                    + "\(failure.reason) — check that the runtime directory is writable "
                    + "and its path is shorter than 100 bytes (set XDG_RUNTIME_DIR)",
                cause: ErrorCause(failure))
        }
        worker.notifyFD = fd
        // Read in every turn's drainAll, ready or not.
        worker.notifyToken = loop.add(OwnedDescriptor(adopting: fd), events: PollLoop.readable) { _, _ in }
    }

    private static func systemError(_ call: String, _ errnoValue: Int32) -> SupervisorError {
        let failure = SystemCallError(call, errno: errnoValue)
        let remedy =
            errnoValue == EMFILE || errnoValue == ENFILE
            ? "the host is out of descriptors: raise its descriptor limit (LimitNOFILE= in its unit, "
                + "ulimit -Hn in its shell)"
            : "the supervisor needs Linux ≥ 5.4"
        return SupervisorError(
            code: .system, message: "\(call) failed: \(failure.reason) — \(remedy)", cause: ErrorCause(failure))
    }

    // MARK: - Commands from other threads

    /// Queues `command` for the loop; returns false once the loop has finished.
    @discardableResult
    func send(_ command: Command) -> Bool {
        shared.withLock { s in
            guard !s.finished else { return false }
            s.commands.append(command)
            loop.wake()
            return true
        }
    }

    /// Returns once no worker runs or waits for a restart.
    func waitUntilSettled() async -> [WorkerStatus] {
        await withCheckedContinuation { continuation in
            let ready = shared.withLock { s -> [WorkerStatus]? in
                if s.finished || s.settled { return s.snapshot }
                s.settledWaiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    func startThread() {
        loop.start(
            .init(
                prepare: { [self] _ in nearestDeadline() }, afterPoll: { [self] _ in turn() },
                shutdown: { [self] _ in finish() }))
    }

    // MARK: - The loop

    /// After the loop's wait: what the workers sent, their exits, the commands, the deadlines.
    private func turn() {
        forgiveStall()
        // Every socket is read before any exit or deadline is judged: pings that queued up
        // while this thread did not run (or that poll did not report this turn) count.
        let behind = drainAll()
        let ended = exited
        exited.removeAll()
        for worker in ended { handleExit(worker) }
        processCommands()
        fireTimers(skippingWatchdogOf: behind)
        if stoppingAll && !workers.contains(where: \.alive) {
            loop.stop()  // finish() runs as the loop ends
            return
        }
        publish()
        let synced = syncReplies
        syncReplies.removeAll()
        synced.forEach { $0() }
    }

    /// Moves the workers' watchdog deadlines by the time this thread was not scheduled beyond
    /// its planned wake-up (the host stopped, frozen or starved), so that it is not counted.
    private func forgiveStall() {
        guard let planned = plannedWake else { return }
        let late = clock.seconds() - planned
        guard late > Self.stallThreshold else { return }
        logger.notice(
            """
            the supervisor did not run for \(formatSeconds(late.rounded())) (host stopped or frozen); \
            worker watchdog deadlines are moved by that much
            """,
            metadata: ["supervisor.stall_s": "\(late)"])
        for worker in workers where worker.alive {
            if let deadline = worker.watchdogDeadline { worker.watchdogDeadline = deadline + late }
        }
    }

    /// Reads every worker's notify socket; returns the workers with datagrams still queued.
    private func drainAll() -> Set<Int> {
        var behind = Set<Int>()
        let now = clock.seconds()
        for worker in workers where worker.notifyFD >= 0 {
            let more = reader.drain(worker, now: now) { apply($0, to: worker, now: now) }
            if more { behind.insert(worker.index) }
            updateFlooding(worker, now: now)
        }
        return behind
    }

    private func processCommands() {
        let commands = shared.withLock { s -> [Command] in
            defer { s.commands.removeAll() }
            return s.commands
        }
        for command in commands {
            switch command {
            case .start(let reply):
                var failures: [StartFailure] = []
                let now = clock.seconds()
                for worker in workers {
                    _ = worker.policy.mayStart(at: now, history: &worker.history)
                    if let failure = spawn(worker) {
                        worker.state = .failed
                        worker.reason = failure.reason
                        worker.lastExit = .spawnFailed(failure.reason)
                        logger.error(
                            "worker could not be started",
                            metadata: [
                                "worker.name": "\(worker.spec.name)", "worker.reason": "\(failure.reason)",
                                OperatorEvent.metadataKey: "\(OperatorEvent.workerGaveUp)",
                            ])
                        emit(.failed(failure.reason), worker)
                        failures.append(StartFailure(worker: worker.spec.name, reason: failure.reason))
                    }
                }
                publish()
                reply(failures)
            case .stop(let signal, let reply):
                stopReplies.append(reply)
                stoppingAll = true
                let now = clock.seconds()
                for worker in workers {
                    worker.stopRequested = true
                    worker.replacement = nil
                    worker.restartAt = nil
                    if worker.alive {
                        if worker.killAt == nil { worker.killAt = now + configuration.stopGrace.seconds }
                        worker.state = .stopping
                        signalGroup(worker, signal)
                        // A stopped worker could not act on it; SIGCONT after it, as systemd does.
                        if signal != SIGKILL && signal != SIGCONT { signalGroup(worker, SIGCONT) }
                    } else if worker.state != .failed && worker.state != .stopped {
                        worker.state = .stopped
                        emit(.stopped, worker)
                    }
                }
            case .sync(let reply):
                syncReplies.append(reply)
            case .reconfigure(let specs, let reply):
                let failures =
                    stoppingAll ? [StartFailure(worker: nil, reason: "the supervisor is stopping")] : reconfigure(specs)
                publish()
                reply(failures)
            case .signal(let signal):
                for worker in workers where worker.alive {
                    signalGroup(worker, signal)
                    // A hang-up (the terminal closed) must reach a worker stopped on that terminal.
                    if signal == SIGHUP { signalGroup(worker, SIGCONT) }
                }
            }
        }
    }

    /// The nearest deadline of any worker (nil: none) as a ``MonotonicClock`` time for the
    /// loop's wait; remembered, on the supervisor's clock, as the planned wake-up.
    private func nearestDeadline() -> Double? {
        var nearest = Double.infinity
        for worker in workers {
            if let t = worker.restartAt { nearest = min(nearest, t) }
            if let t = worker.statusEventAt { nearest = min(nearest, t) }
            if worker.flooding { nearest = min(nearest, worker.notifyWindowStart + 1) }
            if worker.alive {
                if let t = worker.watchdogDeadline { nearest = min(nearest, t) }
                if let t = worker.killAt { nearest = min(nearest, t) }
            }
        }
        if onTerminal, workers.contains(where: \.alive) { nearest = min(nearest, nextStopCheck) }
        guard nearest.isFinite else {
            plannedWake = nil
            return nil
        }
        let now = clock.seconds()
        plannedWake = max(nearest, now)
        return MonotonicClock.seconds() + min(max(nearest - now, 0), 86_400)
    }

    private func fireTimers(skippingWatchdogOf behind: Set<Int>) {
        let now = clock.seconds()
        if onTerminal {
            if now >= nextStopCheck || nextStopCheck == .infinity {
                nextStopCheck = now + Self.stopCheckInterval
                checkStops()
            }
        }
        for worker in workers {
            if let t = worker.restartAt, t <= now {
                worker.restartAt = nil
                restart(worker, now: now)
            }
            if let t = worker.statusEventAt, t <= now {
                worker.statusEventAt = nil
                worker.lastStatusEvent = now
                emit(.statusChanged, worker)
            }
            updateFlooding(worker, now: now)
            guard worker.alive else { continue }
            if let t = worker.killAt, t <= now {
                worker.killAt = nil
                logger.warning(
                    "worker did not stop within the grace period; sending SIGKILL",
                    metadata: ["worker.name": "\(worker.spec.name)", "process.pid": "\(worker.pid ?? 0)"])
                signalGroup(worker, SIGKILL)
                cgroups?.kill(worker: worker.index)
            }
            // A worker whose socket still holds unread datagrams is not judged yet.
            if let t = worker.watchdogDeadline, t <= now, !behind.contains(worker.index) {
                watchdogExpired(worker)
            }
        }
    }

    // MARK: - Publishing

    func emit(_ kind: SupervisorEvent.Kind, _ worker: WorkerRuntime) {
        pendingEvents.append(SupervisorEvent(kind: kind, worker: worker.status))
    }

    private func publish() {
        let snapshot = workers.map(\.status)
        let settled = !workers.contains { $0.alive || $0.restartAt != nil }
        let waiters = shared.withLock { s -> [CheckedContinuation<[WorkerStatus], Never>] in
            s.snapshot = snapshot
            s.settled = settled
            guard settled else { return [] }
            defer { s.settledWaiters.removeAll() }
            return s.settledWaiters
        }
        waiters.forEach { $0.resume(returning: snapshot) }
        let events = pendingEvents
        pendingEvents.removeAll()
        events.forEach(onEvent)
    }

    /// As the loop ends (its descriptors closed): the runtime directory and the cgroups go, and
    /// every waiter and command still queued is answered.
    private func finish() {
        closeNotifySockets()  // the directory must be empty to go
        rmdir(runtimeDirectory)
        // The sentinel kills what is left in the tree (a setsid grandchild) and removes it.
        cgroups?.close()
        cgroups = nil
        publish()
        let (waiters, pendingCommands) = shared.withLock { s in
            s.finished = true
            s.settled = true
            defer {
                s.settledWaiters.removeAll()
                s.commands.removeAll()
            }
            return (s.settledWaiters, s.commands)
        }
        let snapshot = workers.map(\.status)
        waiters.forEach { $0.resume(returning: snapshot) }
        for command in pendingCommands {
            switch command {
            case .stop(_, let reply): stopReplies.append(reply)
            case .start(let reply): reply([StartFailure(worker: nil, reason: "the supervisor was stopped")])
            case .sync(let reply): syncReplies.append(reply)
            case .reconfigure(_, let reply): reply([StartFailure(worker: nil, reason: "the supervisor was stopped")])
            case .signal: break
            }
        }
        stopReplies.forEach { $0() }
        syncReplies.forEach { $0() }
    }

    /// Closes and removes the workers' notify sockets that are still open.
    private func closeNotifySockets() {
        for worker in workers { closeNotifySocket(worker) }
    }

    /// Closes and removes `worker`'s notify socket, if it is open.
    func closeNotifySocket(_ worker: WorkerRuntime) {
        guard worker.notifyFD >= 0 else { return }
        if let token = worker.notifyToken { loop.remove(token) }
        worker.notifyToken = nil
        worker.notifyFD = -1
        unlink(worker.notifyPath)
    }
}
