import FoundationEssentials
public import Logging
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Keeps a set of worker processes alive: restarts with exponential backoff and a start limit,
/// one `NOTIFY_SOCKET` per worker (readiness, status, watchdog), and no orphans — every worker
/// runs in its own process group, is killed as a group, dies with the supervisor
/// (`PR_SET_PDEATHSIG`) and is always reaped.
///
/// Child watching is event-driven: one dedicated thread (a `PollLoop`) sleeps in `poll` on the
/// workers' pidfds and notify sockets and wakes only when something happens or a deadline is due.
public final class Supervisor: Sendable {
    private enum Phase {
        case idle
        case running(SupervisorLoop)
        case stopped(SupervisorLoop?)
    }

    /// The workers, as given (and as the last ``reconfigure(workers:)`` changed them).
    public var specs: [WorkerSpec] { currentSpecs.withLock { $0 } }
    private let currentSpecs: Mutex<[WorkerSpec]>
    /// Timing and limits.
    public let configuration: SupervisorConfiguration
    private let environment: [String: String]
    private let runtimeBase: String?
    private let clock: SupervisorClock
    private let logger: Logger
    private let onEvent: @Sendable (SupervisorEvent) -> Void
    private let phase = Mutex<Phase>(.idle)
    private let budget = Mutex<DescriptorBudget?>(nil)

    /// Creates a supervisor for `workers`; nothing starts before ``start()``.
    ///
    /// - Parameters:
    ///   - workers: what to run; names must be unique.
    ///   - configuration: backoff, start limit and stop grace.
    ///   - environment: the environment workers inherit: the host's (a plugin's
    ///     `PluginContext.environment`, the CLI's own); the engine never reads the process's. `NOTIFY_SOCKET`,
    ///     `WATCHDOG_*` and `LISTEN_*` are removed; each worker's own variables are added.
    ///   - runtimeDirectory: where the private 0700 directory for the notify sockets is made
    ///     (default: `$XDG_RUNTIME_DIR/vigil`, else the temporary directory).
    ///   - clock: the time every deadline (backoff, start-limit window, stop grace, watchdog) is
    ///     kept in; `SuspendingClock` (`CLOCK_MONOTONIC`) unless a test moves a clock of its own.
    ///   - logger: where to log; worker names are in `worker.name` metadata.
    ///   - onEvent: called on the supervisor's thread for every worker event; must not block.
    /// - Throws: ``SupervisorError`` with code `invalidWorker` for an unusable spec.
    public init(
        workers: [WorkerSpec],
        configuration: SupervisorConfiguration = SupervisorConfiguration(),
        environment: [String: String],
        runtimeDirectory: String? = nil,
        clock: any Clock<Duration> = SuspendingClock(),
        logger: Logger,
        onEvent: @escaping @Sendable (SupervisorEvent) -> Void = { _ in }
    ) throws {
        try Self.validate(workers)
        self.currentSpecs = Mutex(workers)
        self.configuration = configuration
        self.environment = environment
        self.runtimeBase = runtimeDirectory
        self.clock = SupervisorClock(clock)
        self.logger = logger
        self.onEvent = onEvent
    }

    /// Checks `workers` as ``init(workers:configuration:environment:runtimeDirectory:clock:logger:onEvent:)`` does.
    ///
    /// - Throws: ``SupervisorError`` with code `invalidWorker`, naming the worker and the fix.
    public static func validate(_ workers: [WorkerSpec]) throws {
        if let problem = WorkerSpec.problem(in: workers) {
            throw SupervisorError(code: .invalidWorker, message: problem)
        }
    }

    /// Starts every worker and returns once each one was spawned.
    ///
    /// A worker that cannot be started is `failed` (with its reason) and the others run on.
    ///
    /// The first start in a process raises its soft `RLIMIT_NOFILE` to the hard limit (as systemd
    /// and Go's runtime do); workers get the original soft limit back before exec. How many
    /// workers the limit allows is logged and kept in ``descriptorBudget``.
    ///
    /// - Throws: ``SupervisorError``: `spawnFailed` if no worker could be started (nothing is
    ///   left running), `runtimeDirectory` or `system` if the supervisor itself could not be set up,
    ///   `alreadyStarted` on a second call.
    public func start() async throws {
        // As systemd does for itself: the soft limit up to the hard one (the workers get the
        // original back before exec), so that the limit counts, not its select(2)-era default.
        let raise = DescriptorLimit.raiseSoftToHard()
        let openBefore = DescriptorLimit.openCount() ?? 0
        let loop = try phase.withLock { phase -> SupervisorLoop in
            guard case .idle = phase else {
                throw SupervisorError(
                    code: .alreadyStarted, message: "this supervisor was already started; create a new one")
            }
            let directory = try makeRuntimeDirectory()
            do {
                let loop = try SupervisorLoop(
                    specs: specs, configuration: configuration, environment: environment,
                    runtimeDirectory: directory, clock: clock, logger: logger, onEvent: onEvent)
                phase = .running(loop)
                return loop
            } catch {
                rmdir(directory)
                phase = .stopped(nil)
                throw error
            }
        }
        if let raise {
            let budget = DescriptorBudget(
                limit: raise.current, raisedFrom: raise.current != raise.original ? raise.original : nil,
                inUse: UInt64(openBefore), workers: specs.count)
            self.budget.withLock { $0 = budget }
            if let problem = budget.problem {
                logger.warning("\(problem)")
            } else {
                logger.info("\(budget.summary)")
            }
        }
        loop.startThread()
        let failures: [StartFailure] = await withCheckedContinuation { continuation in
            if !loop.send(.start({ continuation.resume(returning: $0) })) {
                continuation.resume(returning: [StartFailure(worker: nil, reason: "the supervisor was stopped")])
            }
        }
        if !failures.isEmpty && failures.count == specs.count {
            // The reason behind the reasons, when the tree could not be guarded either.
            let problem = loop.shared.withLock { $0.cgroupProblem }
            await stop()
            throw SupervisorError(
                code: .spawnFailed,
                message: StartFailure.describe(failures) + (problem.map { "; and " + $0 } ?? ""))
        }
    }

    /// Applies a new worker list while the supervisor runs (a reload), by worker name: an
    /// unchanged worker keeps its process and restart history; a changed one is stopped (as
    /// ``stop(signal:)`` stops one: SIGTERM, SIGKILL after the stop grace) and started from its
    /// new spec once reaped; a removed one is stopped; an added one starts now. Returns once the
    /// added workers were spawned and the others' stops began (a changed worker's new process
    /// follows its old one's exit). Before ``start()`` it only replaces the list.
    ///
    /// A worker that cannot be started is `failed` with its reason (an event says so), as at start.
    ///
    /// - Throws: ``SupervisorError`` with code `invalidWorker` for an unusable list (nothing
    ///   changed); `alreadyStarted` once the supervisor was stopped.
    public func reconfigure(workers: [WorkerSpec]) async throws {
        try Self.validate(workers)
        let loop: SupervisorLoop? = try phase.withLock { phase in
            switch phase {
            case .idle:
                currentSpecs.withLock { $0 = workers }
                return nil
            case .running(let loop):
                currentSpecs.withLock { $0 = workers }
                return loop
            case .stopped:
                throw SupervisorError(
                    code: .alreadyStarted, message: "this supervisor was stopped; create a new one")
            }
        }
        guard let loop else { return }
        _ = await withCheckedContinuation { (continuation: CheckedContinuation<[StartFailure], Never>) in
            if !loop.send(.reconfigure(workers, { continuation.resume(returning: $0) })) {
                continuation.resume(returning: [])
            }
        }
    }

    /// Stops every worker: `signal` (SIGTERM by default) to its process group, SIGKILL after the
    /// stop grace, and returns once all are reaped and the notify sockets are removed. Idempotent.
    public func stop(signal: Int32 = SIGTERM) async {
        let loop: SupervisorLoop? = phase.withLock { phase in
            switch phase {
            case .idle:
                phase = .stopped(nil)
                return nil
            case .running(let loop):
                phase = .stopped(loop)
                return loop
            case .stopped(let loop):
                return loop
            }
        }
        guard let loop else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if !loop.send(.stop(signal: signal, reply: { continuation.resume() })) { continuation.resume() }
        }
    }

    /// Returns once the supervisor's thread has gone round after this call began: read every
    /// worker's notify socket and its clock, and acted on what it found and on every deadline
    /// due by then (restarts, the SIGKILL after the stop grace, watchdogs), its events delivered.
    /// For a test that has just moved the injected clock or sent a datagram (also while
    /// ``stop(signal:)`` waits for the workers). At once if the supervisor's thread is not running.
    public func synchronize() async {
        let loop: SupervisorLoop? =
            switch phase.withLock({ $0 }) {
            case .running(let loop), .stopped(let loop?): loop
            default: nil
            }
        guard let loop else { return }
        // Twice: the first round may have read the sockets before this call; the second began after it.
        for _ in 0..<2 {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                if !loop.send(.sync({ continuation.resume() })) { continuation.resume() }
            }
        }
    }

    /// Sends `signal` to every running worker's process group.
    public func signal(_ signal: Int32) {
        if case .running(let loop) = phase.withLock({ $0 }) { loop.send(.signal(signal)) }
    }

    /// Why the workers run without cgroups although this host could give them one (the
    /// cgroup sentinel could not start: no descriptor left, fork refused); nil when they have
    /// them or the host cannot have any (an expected limit, logged at debug level).
    public var cgroupProblem: String? {
        switch phase.withLock({ $0 }) {
        case .running(let loop), .stopped(let loop?): loop.shared.withLock { $0.cgroupProblem }
        default: nil
        }
    }

    /// The descriptor limit and how many workers it leaves room for, once started.
    public var descriptorBudget: DescriptorBudget? { budget.withLock { $0 } }

    /// The workers' current status.
    public var workers: [WorkerStatus] {
        switch phase.withLock({ $0 }) {
        case .running(let loop), .stopped(let loop?): loop.shared.withLock { $0.snapshot }
        default: specs.map { WorkerStatus(name: $0.name, state: .stopped, pid: nil, restarts: 0) }
        }
    }

    /// Returns once no worker is running or waiting to restart (all `stopped` or `failed`), with
    /// their final status; at once if the supervisor is not running.
    public func waitUntilSettled() async -> [WorkerStatus] {
        switch phase.withLock({ $0 }) {
        case .running(let loop), .stopped(let loop?): await loop.waitUntilSettled()
        default: workers
        }
    }

    private func makeRuntimeDirectory() throws -> String {
        var bases: [String] = []
        var skipped: [String] = []
        if let base = runtimeBase {
            bases.append(base)
        } else {
            if let xdg = environment["XDG_RUNTIME_DIR"] {
                if xdg.hasPrefix("/") {
                    bases.append(xdg + "/vigil")
                } else {
                    skipped.append("XDG_RUNTIME_DIR=\"\(xdg)\" is not an absolute path and was ignored")
                }
            }
            bases.append((environment["TMPDIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"))
        }
        var problems = skipped
        for (index, base) in bases.enumerated() {
            let shared = runtimeBase == nil && index == bases.count - 1  // /tmp: other users' too
            if !shared {
                do throws(SystemCallError) {
                    try SystemCallError.check("mkdir") { mkdir(base, 0o700) }
                } catch  where error.number != EEXIST {
                    problems.append("\(base): \(error.reason)")
                    continue
                } catch {}
                if let unsafe = Self.ownershipProblem(base) {
                    // Refused, not skipped: falling back would hide a planted directory.
                    throw SupervisorError(
                        code: .runtimeDirectory, message: "refusing the runtime directory: \(unsafe)")
                }
                Self.removeStaleDirectories(in: base)
            }
            // The pid in the name lets a later supervisor remove it if this process dies hard.
            var template = Array("\(base)/supervisor.\(getpid()).XXXXXX".utf8CString)
            let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
            let failure = made == nil ? SystemCallError.current("mkdtemp") : nil  // right at the call
            if made != nil {
                if !skipped.isEmpty { logger.warning("\(skipped.joined(separator: "; ")); using \(base)") }
                return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            }
            problems.append("\(base): \(failure?.reason ?? "failed")")
        }
        throw SupervisorError(
            code: .runtimeDirectory,
            message:
                "cannot create a private directory for the workers' notify sockets (\(problems.joined(separator: "; "))) — "
                + "set XDG_RUNTIME_DIR to an absolute path of a directory you own")
    }

    /// Why `base` must not hold the notify sockets: not a real directory, not ours, or open to
    /// other users (who could rename a socket directory and plant their own). Nil when it is safe.
    static func ownershipProblem(_ base: String) -> String? {
        var info = stat()
        do throws(SystemCallError) {
            try SystemCallError.check("lstat") { lstat(base, &info) }
        } catch {
            return "\(base): \(error.reason)"
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            return "\(base) is not a directory (a symlink or file?) — remove it; Vigil recreates it with mode 0700"
        }
        guard info.st_uid == getuid() else {
            return "\(base) belongs to uid \(info.st_uid), not to you (uid \(getuid())) — another user may have "
                + "planted it; ask root to remove it, or set XDG_RUNTIME_DIR to a directory you own"
        }
        guard info.st_mode & 0o077 == 0 else {
            return "\(base) is open to other users (mode \(String(info.st_mode & 0o777, radix: 8))) — "
                + "run `chmod 700 \(base)`"
        }
        return nil
    }

    /// Removes `supervisor.PID.*` directories in `base` whose process no longer exists (a host
    /// killed with SIGKILL cannot clean up after itself).
    static func removeStaleDirectories(in base: String) {
        guard let names = Directory.names(in: base) else { return }
        for name in names where name.hasPrefix("supervisor.") {
            let parts = name.split(separator: ".")
            guard parts.count == 3, let pid = Int32(parts[1]), pid > 0 else { continue }
            if kill(pid, 0) == 0 || errno != ESRCH { continue }
            let directory = "\(base)/\(name)"
            var info = stat()
            guard lstat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == getuid() else {
                continue
            }
            for entry in Directory.names(in: directory) ?? []
            where entry.hasSuffix(".notify") {
                unlink("\(directory)/\(entry)")
            }
            rmdir(directory)
        }
    }
}

/// What the descriptor limit allows: each worker holds ``perWorker`` descriptors while it runs
/// (its notify socket and its pidfd); a start briefly needs 4 more (its cgroup directory and
/// `cgroup.procs`, the exec-status pipe), which the ``reserve`` covers with the supervisor's own 2
/// (its loop's wake eventfd and the sentinel's pipe).
public struct DescriptorBudget: Sendable, Hashable {
    /// Descriptors each running worker holds in the host.
    public static let perWorker: UInt64 = 2
    /// Kept free for the host's own work (status file, D-Bus, a worker's start).
    public static let reserve: UInt64 = 8

    /// The soft limit now.
    public var limit: UInt64
    /// The soft limit before the supervisor raised it, if it did.
    public var raisedFrom: UInt64?
    /// Descriptors the host had open before the supervisor's own.
    public var inUse: UInt64
    /// Workers configured.
    public var workers: Int

    /// How many workers the limit leaves room for.
    public var capacity: Int {
        let free = limit > inUse + Self.reserve ? limit - inUse - Self.reserve : 0
        return Int(min(free / Self.perWorker, UInt64(Int.max)))
    }

    /// "descriptor limit 1024 (raised from 64): room for about 480 workers (2 descriptors each); 12 configured".
    public var summary: String {
        "descriptor limit \(limit)\(raisedFrom.map { " (raised from \($0))" } ?? ""): room for about "
            + "\(capacity) workers (\(Self.perWorker) descriptors each); \(workers) configured"
    }

    /// The summary and the remedy when the limit leaves no room for every configured worker.
    public var problem: String? {
        guard workers > capacity else { return nil }
        return "\(summary) — the last ones may fail to start: raise the host's hard limit "
            + "(LimitNOFILE= in its unit, ulimit -Hn in its shell) or run fewer workers"
    }
}
