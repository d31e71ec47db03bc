internal import CVigilSpawn
import Foundation
import Logging
import Synchronization

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
        case start(@Sendable ([String]) -> Void)
        case stop(signal: Int32, reply: @Sendable () -> Void)
        case signal(Int32)
    }

    struct Shared {
        var commands: [Command] = []
        var snapshot: [WorkerStatus]
        var finished = false
        var settled = true
        var settledWaiters: [CheckedContinuation<[WorkerStatus], Never>] = []
    }

    let configuration: SupervisorConfiguration
    let logger: Logger
    let baseEnvironment: [String: String]
    let runtimeDirectory: String
    let onEvent: @Sendable (SupervisorEvent) -> Void
    let shared: Mutex<Shared>

    private let epollFD: Int32
    private let wakeFD: Int32
    // Loop-thread state.
    private let workers: [WorkerRuntime]
    private var pendingEvents: [SupervisorEvent] = []
    private var stopReplies: [@Sendable () -> Void] = []
    private var stoppingAll = false
    private let myUID = getuid()

    init(
        specs: [WorkerSpec], configuration: SupervisorConfiguration, environment: [String: String],
        runtimeDirectory: String, logger: Logger, onEvent: @escaping @Sendable (SupervisorEvent) -> Void
    ) throws {
        self.configuration = configuration
        self.logger = logger
        self.baseEnvironment = environment
        self.runtimeDirectory = runtimeDirectory
        self.onEvent = onEvent
        self.workers = specs.enumerated().map { index, spec in
            WorkerRuntime(index: index, spec: spec, notifyPath: "\(runtimeDirectory)/\(index).notify")
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
                    throw SupervisorError(
                        code: .runtimeDirectory,
                        message:
                            "cannot create the notify socket \(worker.notifyPath) for worker \"\(worker.spec.name)\": "
                            + "\(String(cString: strerror(-fd))) — check that the runtime directory is writable "
                            + "and its path is shorter than 100 bytes (set XDG_RUNTIME_DIR)")
                }
                worker.notifyFD = fd
                try check(vigil_epoll_add(ep, fd, token(worker, notify: true)), "epoll_ctl")
            }
        } catch {
            releaseDescriptors()
            throw error
        }
    }

    private static func systemError(_ call: String, _ errnoValue: Int32) -> SupervisorError {
        SupervisorError(
            code: .system,
            message: "\(call) failed: \(String(cString: strerror(errnoValue))) — the supervisor needs Linux ≥ 5.4")
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
        Thread { [self] in run() }.start()
    }

    // MARK: - The loop

    private func run() {
        // A new thread inherits its creator's name (often a dispatch queue's); name ours.
        vigil_set_thread_name("vigil-supervise")
        var tokens = [UInt64](repeating: 0, count: 32)
        while true {
            let timeout = timeoutMilliseconds()
            let n = tokens.withUnsafeMutableBufferPointer { vigil_epoll_wait(epollFD, $0.baseAddress, 32, timeout) }
            if n < 0 && n != -EINTR {
                logger.error("epoll_wait failed", metadata: ["error": "\(String(cString: strerror(-n)))"])
            }
            var exited: [WorkerRuntime] = []
            for i in 0..<max(Int(n), 0) {
                let t = tokens[i]
                if t == 0 {
                    vigil_eventfd_drain(wakeFD)
                    continue
                }
                let worker = workers[Int(t >> 1) - 1]
                if t & 1 == 1 { drainNotify(worker) } else { exited.append(worker) }
            }
            for worker in exited { handleExit(worker) }
            processCommands()
            fireTimers()
            if stoppingAll && !workers.contains(where: \.alive) {
                finish()
                return
            }
            publish()
        }
    }

    private func processCommands() {
        let commands = shared.withLock { s -> [Command] in
            defer { s.commands.removeAll() }
            return s.commands
        }
        for command in commands {
            switch command {
            case .start(let reply):
                var failures: [String] = []
                for worker in workers {
                    if let failure = spawn(worker) {
                        worker.state = .failed
                        worker.reason = failure
                        worker.lastExit = .spawnFailed(failure)
                        failures.append("worker \"\(worker.spec.name)\": \(failure)")
                    }
                }
                publish()
                reply(failures)
            case .stop(let signal, let reply):
                stopReplies.append(reply)
                stoppingAll = true
                let now = monotonicNow()
                for worker in workers {
                    worker.stopRequested = true
                    worker.restartAt = nil
                    if worker.alive {
                        if worker.killAt == nil { worker.killAt = now + configuration.stopGrace.seconds }
                        worker.state = .stopping
                        signalGroup(worker, signal)
                    } else if worker.state != .failed && worker.state != .stopped {
                        worker.state = .stopped
                        emit(.stopped, worker)
                    }
                }
            case .signal(let signal):
                for worker in workers where worker.alive { signalGroup(worker, signal) }
            }
        }
    }

    private func timeoutMilliseconds() -> Int32 {
        var nearest = Double.infinity
        for worker in workers {
            if let t = worker.restartAt { nearest = min(nearest, t) }
            if worker.alive {
                if let t = worker.watchdogDeadline { nearest = min(nearest, t) }
                if let t = worker.killAt { nearest = min(nearest, t) }
            }
        }
        guard nearest.isFinite else { return -1 }
        let ms = ((nearest - monotonicNow()) * 1000).rounded(.up)
        return Int32(max(0, min(ms, 86_400_000)))
    }

    private func fireTimers() {
        let now = monotonicNow()
        for worker in workers {
            if let t = worker.restartAt, t <= now {
                worker.restartAt = nil
                restart(worker, now: now)
            }
            guard worker.alive else { continue }
            if let t = worker.killAt, t <= now {
                worker.killAt = nil
                logger.warning(
                    "worker did not stop within the grace period; sending SIGKILL",
                    metadata: ["worker.name": "\(worker.spec.name)", "process.pid": "\(worker.pid ?? 0)"])
                signalGroup(worker, SIGKILL)
            }
            if let t = worker.watchdogDeadline, t <= now {
                watchdogExpired(worker)
            }
        }
    }

    // MARK: - Spawning

    /// Starts `worker`'s process; returns a reason on failure.
    private func spawn(_ worker: WorkerRuntime) -> String? {
        let now = monotonicNow()
        worker.startTimes.append(now)
        let environment = environment(for: worker)
        guard let path = resolve(worker.spec.command, path: environment["PATH"]) else {
            return "program \"\(worker.spec.command)\" was not found in PATH or is not executable — "
                + "use an absolute path or fix PATH"
        }
        let watchdogUsec = worker.spec.watchdogSeconds.map { UInt64(($0 * 1_000_000).rounded()) }
        var envStrings = environment.map { "\($0.key)=\($0.value)" }.sorted()
        if let usec = watchdogUsec { envStrings.append("WATCHDOG_USEC=\(usec)") }

        var allocations: [UnsafeMutablePointer<CChar>] = []
        func dup(_ s: String) -> UnsafeMutablePointer<CChar> {
            let p = strdup(s)!
            allocations.append(p)
            return p
        }
        defer { allocations.forEach { free($0) } }

        let argv: [UnsafeMutablePointer<CChar>?] = [dup(worker.spec.command)] + worker.spec.arguments.map(dup) + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = envStrings.map(dup)
        var pidSlot: UnsafeMutablePointer<CChar>?
        if watchdogUsec != nil {
            let slot = UnsafeMutablePointer<CChar>.allocate(capacity: Int(VIGIL_PID_ENV_SIZE))
            slot.initialize(repeating: 0, count: Int(VIGIL_PID_ENV_SIZE))
            _ = "WATCHDOG_PID=0".withCString { strcpy(slot, $0) }
            pidSlot = slot
            envp.append(slot)
        }
        defer { pidSlot?.deallocate() }
        envp.append(nil)
        let pathC = dup(path)
        let cwdC = worker.spec.workingDirectory.map(dup)
        let oomC = worker.spec.oomScoreAdjust.map { dup(String($0)) }

        var result = vigil_spawn_result()
        let rc = argv.withUnsafeBufferPointer { argvBuf in
            envp.withUnsafeBufferPointer { envBuf in
                var request = vigil_spawn_request(
                    path: pathC, argv: argvBuf.baseAddress, envp: envBuf.baseAddress,
                    working_directory: cwdC, oom_score_adj: oomC, watchdog_pid_env: pidSlot)
                return vigil_spawn(&request, &result)
            }
        }
        guard rc == 0 else {
            return spawnFailureReason(stage: result.failed_stage, error: result.error, worker: worker, path: path)
        }
        worker.pid = result.pid
        worker.pidfd = result.pidfd
        worker.startedAt = now
        worker.watchdogFired = false
        worker.killAt = nil
        worker.statusText = nil
        worker.state = worker.spec.readiness == .notify ? .starting : .running
        worker.watchdogInterval = worker.spec.watchdogSeconds
        worker.watchdogDeadline = worker.watchdogInterval.map { now + $0 }
        if vigil_epoll_add(epollFD, result.pidfd, token(worker, notify: false)) != 0 {
            logger.error("cannot watch worker's pidfd", metadata: ["worker.name": "\(worker.spec.name)"])
        }
        logger.debug(
            "worker started",
            metadata: ["worker.name": "\(worker.spec.name)", "process.pid": "\(result.pid)", "worker.path": "\(path)"])
        emit(.started, worker)
        return nil
    }

    private func spawnFailureReason(stage: Int32, error: Int32, worker: WorkerRuntime, path: String) -> String {
        let what = String(cString: strerror(error))
        switch Int(stage) {
        case Int(VIGIL_STAGE_EXEC): return "cannot execute \(path): \(what) — check the `command` setting"
        case Int(VIGIL_STAGE_CHDIR):
            return "cannot change into working_directory \(worker.spec.workingDirectory ?? ""): \(what)"
        case Int(VIGIL_STAGE_OOM_SCORE_ADJ):
            return "cannot set oom_score_adj to \(worker.spec.oomScoreAdjust ?? 0): \(what) — lowering it below "
                + "the current value needs CAP_SYS_RESOURCE"
        case Int(VIGIL_STAGE_CLONE): return "cannot fork: \(what)"
        default: return "spawn failed at stage \(stage): \(what)"
        }
    }

    /// The supervisor's environment without the variables systemd meant for the supervisor itself,
    /// plus the worker's own variables and its notify socket.
    private func environment(for worker: WorkerRuntime) -> [String: String] {
        var env = baseEnvironment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] {
            env[key] = nil
        }
        env.merge(worker.spec.environment) { _, new in new }
        env["NOTIFY_SOCKET"] = worker.notifyPath
        return env
    }

    private func resolve(_ command: String, path: String?) -> String? {
        if command.contains("/") { return command }
        let directories = (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
        for directory in directories where !directory.isEmpty {
            let candidate = "\(directory)/\(command)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    // MARK: - Exits and restarts

    private func handleExit(_ worker: WorkerRuntime) {
        guard worker.alive else { return }
        drainNotify(worker)
        var code: Int32 = 0
        var status: Int32 = 0
        let reaped = vigil_reap(worker.pidfd, &code, &status)
        if reaped == 0 { return }
        if reaped < 0 {
            logger.error("waitid failed", metadata: ["error": "\(String(cString: strerror(-reaped)))"])
        }
        let pgid = worker.pid ?? 0
        _ = vigil_epoll_remove(epollFD, worker.pidfd)
        close(worker.pidfd)
        worker.pidfd = -1
        worker.pid = nil
        // Whatever the worker left in its process group goes with it.
        if pgid > 0 { kill(-pgid, SIGKILL) }
        worker.killAt = nil
        worker.watchdogDeadline = nil

        let exit: WorkerExit =
            switch Int(code) {
            case Int(CLD_EXITED): .exited(status)
            case Int(CLD_DUMPED): .signaled(status, coreDumped: true)
            default: .signaled(status, coreDumped: false)
            }
        worker.lastExit = exit
        let clean: Bool =
            switch exit {
            case .exited(let c): c == 0
            case .signaled(let s, _): [SIGHUP, SIGINT, SIGTERM, SIGPIPE].contains(s)
            case .spawnFailed: false
            }
        logger.debug(
            "worker exited",
            metadata: ["worker.name": "\(worker.spec.name)", "process.pid": "\(pgid)", "worker.exit": "\(exit)"])
        afterEnd(worker, exit: exit, failure: !clean || worker.watchdogFired, spawnFailure: false)
    }

    private func afterEnd(_ worker: WorkerRuntime, exit: WorkerExit, failure: Bool, spawnFailure: Bool) {
        let now = monotonicNow()
        if worker.stopRequested {
            worker.state = .stopped
            emit(.stopped, worker)
            return
        }
        let policy = worker.spec.restart
        guard policy == .always || (policy == .onFailure && failure) else {
            if failure {
                worker.state = .failed
                worker.reason = "\(exit) (restart = \(policy.rawValue))"
                emit(.failed(worker.reason!), worker)
            } else {
                worker.state = .stopped
                worker.reason = "\(exit)"
                emit(.stopped, worker)
            }
            return
        }
        if now - worker.startedAt >= configuration.stableAfter.seconds { worker.quickFailures = 0 }
        var delay = backoff(worker.quickFailures)
        // A program that cannot even be executed must not spin the CPU.
        if spawnFailure { delay = max(delay, 0.1) }
        worker.quickFailures += 1
        worker.state = .backingOff
        worker.reason = worker.watchdogFired ? "watchdog timeout" : "\(exit)"
        emit(.crashed(exit, restartIn: .nanoseconds(Int64(delay * 1e9))), worker)
        if delay <= 0 {
            restart(worker, now: now)
        } else {
            worker.restartAt = now + delay
        }
    }

    private func backoff(_ failures: Int) -> Double {
        let initial = configuration.backoffInitial.seconds
        let cap = configuration.backoffMax.seconds
        return min(cap, initial * pow(2, Double(min(failures, 62))))
    }

    private func restart(_ worker: WorkerRuntime, now: Double) {
        let burst = configuration.startLimitBurst
        let interval = configuration.startLimitInterval.seconds
        if burst > 0 && interval > 0 {
            worker.startTimes.removeAll { $0 <= now - interval }
            if worker.startTimes.count >= burst {
                worker.state = .failed
                worker.reason =
                    "start limit hit: \(worker.startTimes.count) starts within \(formatSeconds(interval)); "
                    + "last run \(worker.lastExit.map(String.init(describing:)) ?? "unknown") — fix the worker, "
                    + "then keepAlive() again"
                logger.error(
                    "worker failed: start limit hit",
                    metadata: ["worker.name": "\(worker.spec.name)", "worker.reason": "\(worker.reason!)"])
                emit(.failed(worker.reason!), worker)
                return
            }
        } else {
            worker.startTimes.removeAll()
        }
        worker.restarts += 1
        if let failure = spawn(worker) {
            logger.warning("worker restart failed", metadata: ["worker.name": "\(worker.spec.name)", "error": "\(failure)"])
            worker.lastExit = .spawnFailed(failure)
            afterEnd(worker, exit: .spawnFailed(failure), failure: true, spawnFailure: true)
        }
    }

    private func signalGroup(_ worker: WorkerRuntime, _ signal: Int32) {
        guard let pid = worker.pid else { return }
        kill(-pid, signal)
        _ = vigil_pidfd_signal(worker.pidfd, signal)
    }

    // MARK: - Notify sockets and watchdog

    private func drainNotify(_ worker: WorkerRuntime) {
        var buffer = [CChar](repeating: 0, count: 4097)
        while true {
            var pid: Int32 = -1
            var uid: Int32 = -1
            var gid: Int32 = -1
            let n = buffer.withUnsafeMutableBufferPointer {
                vigil_notify_receive(worker.notifyFD, $0.baseAddress, $0.count, &pid, &uid, &gid)
            }
            if n == -Int(EAGAIN) { return }
            if n == -Int(EMSGSIZE) {
                logger.warning("dropped an oversized notify datagram", metadata: ["worker.name": "\(worker.spec.name)"])
                continue
            }
            if n < 0 {
                logger.error("notify socket receive failed", metadata: ["error": "\(String(cString: strerror(Int32(-n))))"])
                return
            }
            guard let root = worker.pid else {
                logger.debug("ignored a notify datagram for a stopped worker", metadata: ["worker.name": "\(worker.spec.name)"])
                continue
            }
            guard uid >= 0, UInt32(uid) == myUID || uid == 0, pid > 0, ProcessTree.belongs(pid, toWorker: root) else {
                logger.warning(
                    "rejected a notify datagram: the sender is not in the worker's process tree",
                    metadata: ["worker.name": "\(worker.spec.name)", "sender.pid": "\(pid)", "sender.uid": "\(uid)"])
                continue
            }
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            apply(NotifyMessage(text), to: worker)
        }
    }

    private func apply(_ message: NotifyMessage, to worker: WorkerRuntime) {
        let now = monotonicNow()
        if let status = message.status, status != worker.statusText {
            worker.statusText = status
            emit(.statusChanged, worker)
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
            if worker.quickFailures > 0 && worker.restarts > 0 { worker.reason = nil }
            emit(.ready, worker)
        }
        if message.stopping && worker.state != .stopping {
            worker.state = .stopping
            emit(.statusChanged, worker)
        }
        if message.watchdogTrigger { watchdogExpired(worker) }
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
        for worker in workers where worker.notifyFD >= 0 {
            close(worker.notifyFD)
            worker.notifyFD = -1
            unlink(worker.notifyPath)
        }
        rmdir(runtimeDirectory)
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
            case .start(let reply): reply(["the supervisor was stopped"])
            case .signal: break
            }
        }
        stopReplies.forEach { $0() }
    }

    private func releaseDescriptors() {
        for worker in workers where worker.notifyFD >= 0 {
            close(worker.notifyFD)
            worker.notifyFD = -1
            unlink(worker.notifyPath)
        }
        close(epollFD)
        close(wakeFD)
    }
}

func monotonicNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
}
