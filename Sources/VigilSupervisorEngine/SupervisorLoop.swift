internal import CVigilSpawn
import FoundationEssentials
import Logging
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The supervisor's own thread: one `epoll` set with every worker's pidfd and notify socket, an
/// eventfd for commands, and the nearest deadline (backoff, watchdog, kill) as the wait timeout.
/// It sleeps until something happens; there is no polling loop. All worker state is confined to
/// this thread. Workers are forked from it, so it also is the thread their
/// `PR_SET_PDEATHSIG` watches; it exits only after every worker has been reaped.
final class SupervisorLoop: @unchecked Sendable {
    enum Command {
        case start(@Sendable ([StartFailure]) -> Void)
        case stop(signal: Int32, reply: @Sendable () -> Void)
        case signal(Int32)
        /// Replies once the loop has read its clock and acted on every deadline due by then.
        case sync(@Sendable () -> Void)
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

    private let epollFD: Int32
    private let wakeFD: Int32
    // Loop-thread state.
    private let workers: [WorkerRuntime]
    private var pendingEvents: [SupervisorEvent] = []
    private var stopReplies: [@Sendable () -> Void] = []
    private var syncReplies: [@Sendable () -> Void] = []
    private var stoppingAll = false
    private let reader: NotifyReader
    /// The workers' cgroups and their sentinel, where the kernel allows them (else nil).
    private var cgroups: CgroupTree?
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

        let ep = vigil_epoll_create()
        guard ep >= 0 else { throw Self.systemError("epoll_create1", -ep) }
        let wake = vigil_eventfd()
        guard wake >= 0 else {
            close(ep)
            throw Self.systemError("eventfd", -wake)
        }
        epollFD = ep
        wakeFD = wake
        do {
            try check(vigil_epoll_add(ep, wake, 0), "epoll_ctl")
            for worker in workers {
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
                try check(vigil_epoll_add(ep, fd, token(worker, notify: true)), "epoll_ctl")
            }
        } catch {
            releaseDescriptors()
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

    private func check(_ rc: Int32, _ call: String) throws {
        if rc < 0 { throw Self.systemError(call, -rc) }
    }

    private func token(_ worker: WorkerRuntime, notify: Bool) -> UInt64 {
        UInt64(worker.index + 1) << 1 | (notify ? 1 : 0)
    }

    // MARK: - Commands from other threads

    /// Queues `command` for the loop; returns false once the loop has finished.
    @discardableResult
    func send(_ command: Command) -> Bool {
        shared.withLock { s in
            guard !s.finished else { return false }
            s.commands.append(command)
            _ = vigil_eventfd_signal(wakeFD)
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
        KernelThread.start(name: "vigil-supervise") { [self] in run() }
    }

    // MARK: - The loop

    private func run() {
        var tokens = [UInt64](repeating: 0, count: 32)
        while true {
            let timeout = timeoutMilliseconds()
            plannedWake = timeout >= 0 ? clock.seconds() + Double(timeout) / 1000 : nil
            let n = tokens.withUnsafeMutableBufferPointer { vigil_epoll_wait(epollFD, $0.baseAddress, 32, timeout) }
            if n < 0 && n != -EINTR {
                logger.error("epoll_wait failed", metadata: ["error": "\(SystemCallError("epoll_wait", errno: n))"])
            }
            forgiveStall()
            var exited: [WorkerRuntime] = []
            for i in 0..<max(Int(n), 0) {
                let t = tokens[i]
                if t == 0 {
                    vigil_eventfd_drain(wakeFD)
                    continue
                }
                let worker = workers[Int(t >> 1) - 1]
                if t & 1 == 0 { exited.append(worker) }
            }
            // Every socket is read before any exit or deadline is judged: pings that queued up
            // while this thread did not run (or that epoll did not report this round) count.
            let behind = drainAll()
            for worker in exited { handleExit(worker) }
            processCommands()
            fireTimers(skippingWatchdogOf: behind)
            if stoppingAll && !workers.contains(where: \.alive) {
                finish()
                return
            }
            publish()
            let synced = syncReplies
            syncReplies.removeAll()
            synced.forEach { $0() }
        }
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
                            metadata: ["worker.name": "\(worker.spec.name)", "worker.reason": "\(failure.reason)"])
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
            case .signal(let signal):
                for worker in workers where worker.alive {
                    signalGroup(worker, signal)
                    // A hang-up (the terminal closed) must reach a worker stopped on that terminal.
                    if signal == SIGHUP { signalGroup(worker, SIGCONT) }
                }
            }
        }
    }

    private func timeoutMilliseconds() -> Int32 {
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
        guard nearest.isFinite else { return -1 }
        let ms = ((nearest - clock.seconds()) * 1000).rounded(.up)
        return Int32(max(0, min(ms, 86_400_000)))
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

    // MARK: - Spawning

    /// Starts `worker`'s process; returns the reason on failure.
    private func spawn(_ worker: WorkerRuntime) -> SpawnFailure? {
        let now = clock.seconds()
        let started: WorkerSpawner.Started
        var result: Result<WorkerSpawner.Started, SpawnFailure>
        if let cgroups, worker.cgroupProblem == nil {
            switch cgroups.withDescriptors(
                worker: worker.index,
                { directory, procs in
                    spawner.spawn(
                        worker.spec, notifyPath: worker.notifyPath, cgroupDirectoryFD: directory, cgroupProcsFD: procs)
                })
            {
            case .success(let spawned): result = spawned
            case .failure(let failure) where failure.cgroupFault:
                result = .failure(SpawnFailure(cgroupStage: true, failure.reason))
            case .failure(let failure):
                return SpawnFailure("cannot start it: \(failure.reason) — raise the host's descriptor limit")
            }
            if case .failure(let failure) = result, failure.cgroupStage {
                // This worker's cgroup refused it (controllers enabled, a policy, removed): this
                // worker does without, the others keep theirs — and the tree's sentinel.
                degrade(worker, failure.reason)
                result = spawner.spawn(worker.spec, notifyPath: worker.notifyPath)
            }
        } else {
            result = spawner.spawn(worker.spec, notifyPath: worker.notifyPath)
        }
        switch result {
        case .success(let s): started = s
        case .failure(let failure): return failure
        }
        worker.pid = started.pid
        worker.pidfd = started.pidfd
        worker.startedAt = now
        worker.watchdogFired = false
        worker.killAt = nil
        worker.statusText = nil
        worker.state = worker.spec.readiness == .notify ? .starting : .running
        worker.watchdogInterval = worker.spec.watchdogSeconds
        worker.watchdogDeadline = worker.watchdogInterval.map { now + $0 }
        if vigil_epoll_add(epollFD, started.pidfd, token(worker, notify: false)) != 0 {
            logger.error("cannot watch worker's pidfd", metadata: ["worker.name": "\(worker.spec.name)"])
        }
        logger.debug(
            "worker started",
            metadata: [
                "worker.name": "\(worker.spec.name)", "process.pid": "\(started.pid)", "worker.path": "\(started.path)",
            ])
        emit(.started, worker)
        return nil
    }

    /// Marks `worker` as running without its cgroup from now on, and says so once.
    private func degrade(_ worker: WorkerRuntime, _ reason: String) {
        worker.cgroupProblem =
            "\(reason); it runs without its cgroup: processes it starts are cleaned up by process group only"
        logger.warning(
            "worker cannot be placed in its cgroup; the other workers keep theirs",
            metadata: ["worker.name": "\(worker.spec.name)", "error": "\(worker.cgroupProblem!)"])
        emit(.statusChanged, worker)
    }

    // MARK: - Exits and restarts

    private func handleExit(_ worker: WorkerRuntime) {
        guard worker.alive else { return }
        var code: Int32 = 0
        var status: Int32 = 0
        let reaped = vigil_reap(worker.pidfd, &code, &status)
        if reaped == 0 { return }
        if reaped < 0 {
            logger.error("waitid failed", metadata: ["error": "\(SystemCallError("waitid", errno: reaped))"])
        }
        let pgid = worker.pid ?? 0
        _ = vigil_epoll_remove(epollFD, worker.pidfd)
        close(worker.pidfd)
        worker.pidfd = -1
        worker.pid = nil
        // Whatever the worker left in its process group — and in its cgroup, at any depth — goes with it.
        if pgid > 0 { kill(-pgid, SIGKILL) }
        cgroups?.kill(worker: worker.index)
        worker.killAt = nil
        worker.watchdogDeadline = nil
        worker.suspended = nil

        let exit: WorkerExit =
            switch Int(code) {
            case Int(CLD_EXITED): .exited(status)
            case Int(CLD_DUMPED): .signaled(status, coreDumped: true)
            default: .signaled(status, coreDumped: false)
            }
        worker.lastExit = exit
        logger.debug(
            "worker exited",
            metadata: ["worker.name": "\(worker.spec.name)", "process.pid": "\(pgid)", "worker.exit": "\(exit)"])
        afterEnd(worker, exit: exit)
    }

    private func afterEnd(_ worker: WorkerRuntime, exit: WorkerExit) {
        let now = clock.seconds()
        if worker.stopRequested {
            worker.state = .stopped
            emit(.stopped, worker)
            return
        }
        let decision = worker.policy.afterExit(
            exit, watchdogFired: worker.watchdogFired, ranFor: now - worker.startedAt, history: &worker.history)
        switch decision {
        case .stop(let failed):
            if failed {
                worker.state = .failed
                worker.reason = "\(exit) (restart = \(worker.spec.restart.rawValue))"
                // An exit under restart = never is the worker's own end, said by whoever shows it.
                logger.log(
                    level: worker.spec.restart == .never ? .info : .error, "worker failed",
                    metadata: ["worker.name": "\(worker.spec.name)", "worker.reason": "\(worker.reason!)"])
                emit(.failed(worker.reason!), worker)
            } else {
                worker.state = .stopped
                worker.reason = "\(exit)"
                emit(.stopped, worker)
            }
        case .restart(let delay):
            worker.state = .backingOff
            worker.reason = worker.watchdogFired ? "watchdog timeout" : "\(exit)"
            emit(.crashed(exit, restartIn: .nanoseconds(Int64(delay * 1e9))), worker)
            if delay <= 0 {
                restart(worker, now: now)
            } else {
                worker.restartAt = now + delay
            }
        }
    }

    private func restart(_ worker: WorkerRuntime, now: Double) {
        if case .limitHit(let starts) = worker.policy.mayStart(at: now, history: &worker.history) {
            worker.state = .failed
            worker.reason =
                "start limit hit: \(starts) starts within \(formatSeconds(worker.policy.startLimitInterval)); "
                + "last run \(worker.lastExit.map(String.init(describing:)) ?? "unknown")"
            logger.error(
                "worker failed: start limit hit",
                metadata: ["worker.name": "\(worker.spec.name)", "worker.reason": "\(worker.reason!)"])
            emit(.failed(worker.reason!), worker)
            return
        }
        worker.restarts += 1
        if let failure = spawn(worker) {
            logger.warning(
                "worker restart failed", metadata: ["worker.name": "\(worker.spec.name)", "error": "\(failure.reason)"])
            worker.lastExit = .spawnFailed(failure.reason)
            afterEnd(worker, exit: .spawnFailed(failure.reason))
        }
    }

    /// Looks for workers stopped (or continued) since the last look, and says what a stop by the
    /// terminal means: a worker waiting silently for input it cannot get would look alive.
    private func checkStops() {
        for worker in workers where worker.alive {
            var signal: Int32 = 0
            guard vigil_stop_state(worker.pidfd, &signal) == 1 else { continue }
            let before = worker.suspended
            worker.suspended = signal == 0 ? nil : Self.stopDescription(signal)
            guard worker.suspended != before else { continue }
            if let text = worker.suspended {
                logger.warning("worker \(worker.spec.name) \(text)", metadata: ["worker.name": "\(worker.spec.name)"])
            } else {
                logger.notice("worker \(worker.spec.name) continues", metadata: ["worker.name": "\(worker.spec.name)"])
            }
            emit(.statusChanged, worker)
        }
    }

    static func stopDescription(_ signal: Int32) -> String {
        switch signal {
        case SIGTTIN:
            "is stopped by SIGTTIN: it tried to read the terminal, which belongs to the shell, not to it — "
                + "give it its input another way (redirect its standard input, e.g. < /dev/null or < FILE); "
                + "Ctrl-C or SIGTERM stops it"
        case SIGTTOU:
            "is stopped by SIGTTOU: it tried to set up (or, with `stty tostop`, write to) the terminal, which "
                + "belongs to the shell, not to it — redirect its input and output away from the terminal; "
                + "Ctrl-C or SIGTERM stops it"
        default:
            "is stopped by \(signalName(signal)); send it SIGCONT (kill -CONT PID) to let it run again"
        }
    }

    private func signalGroup(_ worker: WorkerRuntime, _ signal: Int32) {
        guard let pid = worker.pid else { return }
        kill(-pid, signal)
        _ = vigil_pidfd_signal(worker.pidfd, signal)
    }

    // MARK: - Notify messages and watchdog

    private func apply(_ message: NotifyMessage, to worker: WorkerRuntime, now: Double) {
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
    private func updateFlooding(_ worker: WorkerRuntime, now: Double) {
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

    private func watchdogExpired(_ worker: WorkerRuntime) {
        worker.watchdogDeadline = nil
        worker.watchdogFired = true
        logger.warning(
            "worker missed its watchdog deadline; killing its process group",
            metadata: ["worker.name": "\(worker.spec.name)", "process.pid": "\(worker.pid ?? 0)"])
        emit(.watchdogTimeout, worker)
        signalGroup(worker, SIGKILL)
    }

    // MARK: - Publishing

    private func emit(_ kind: SupervisorEvent.Kind, _ worker: WorkerRuntime) {
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
        releaseDescriptors()
        let snapshot = workers.map(\.status)
        waiters.forEach { $0.resume(returning: snapshot) }
        for command in pendingCommands {
            switch command {
            case .stop(_, let reply): stopReplies.append(reply)
            case .start(let reply): reply([StartFailure(worker: nil, reason: "the supervisor was stopped")])
            case .sync(let reply): syncReplies.append(reply)
            case .signal: break
            }
        }
        stopReplies.forEach { $0() }
        syncReplies.forEach { $0() }
    }

    private func releaseDescriptors() {
        closeNotifySockets()
        close(epollFD)
        close(wakeFD)
    }

    /// Closes and removes the workers' notify sockets that are still open.
    private func closeNotifySockets() {
        for worker in workers where worker.notifyFD >= 0 {
            close(worker.notifyFD)
            worker.notifyFD = -1
            unlink(worker.notifyPath)
        }
    }
}

func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
}

/// A worker that could not be started (`worker` nil: none could, the supervisor was stopped).
struct StartFailure: Sendable {
    var worker: String?
    var reason: String

    /// `workers "a", "b": reason; worker "c": other reason` — workers with the same reason on one clause.
    static func describe(_ failures: [StartFailure]) -> String {
        var reasons: [String] = []
        var names: [String: [String]] = [:]
        for failure in failures {
            if names[failure.reason] == nil { reasons.append(failure.reason) }
            names[failure.reason, default: []] += failure.worker.map { ["\"\($0)\""] } ?? []
        }
        return reasons.map { reason in
            let workers = names[reason] ?? []
            if workers.isEmpty { return reason }
            return (workers.count == 1 ? "worker " : "workers ") + workers.joined(separator: ", ") + ": " + reason
        }.joined(separator: "; ")
    }
}
