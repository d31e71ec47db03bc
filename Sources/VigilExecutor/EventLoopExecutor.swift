import NIOCore
import NIOPosix
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency

/// Runs a whole process's Swift concurrency on swift-nio's event loop thread(s) instead of
/// libdispatch's worker pool.
///
/// The default global executor on Linux hands every job to a libdispatch root queue; the first
/// worker thread of such a queue starts libdispatch's pool monitor, a 1 Hz timer that then wakes
/// the process once a second for as long as it lives, busy or idle. An event loop thread sleeps in
/// `epoll_wait` until there is work or a timer is due, so an idle process does not wake at all.
///
/// Opt-in, for executables only: call ``installAsGlobalExecutor(threads:)`` first thing in
/// `main`, before any task or actor runs (the `vigil` command does). The main actor stays on the
/// platform's main executor (libdispatch's main queue, which the pool monitor does not track).
public enum EventLoopExecutor {
    /// Makes swift-nio's singleton event loop group the process's default task executor: jobs
    /// that run now and jobs that run later (`Task.sleep`, clocks) go to its loops and timers.
    ///
    /// With Swift 6.3 or later this installs an executor factory through the runtime's
    /// `_createExecutors(factory:)` (the experimental custom-executor SPI), which covers both kinds
    /// of job. Older compilers fall back to swift-nio's public
    /// `NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()`,
    /// which covers jobs that run now only: delayed jobs stay on libdispatch there.
    ///
    /// - Parameter threads: the group's thread count, set through
    ///   `NIOSingletons.groupLoopCountSuggestion`; `nil` keeps swift-nio's (one per core, or what the
    ///   app set). swift-nio traps if that value is set twice or after something read it, so pass it
    ///   only when nothing else in the process sets it. `vigil` passes 1.
    /// - Returns: `false` when the fallback found the executor already hooked by someone else.
    /// - Warning: Call it once, from the main thread, before any concurrency runs.
    @discardableResult
    public static func installAsGlobalExecutor(threads: Int? = nil) -> Bool {
        if let threads { NIOSingletons.groupLoopCountSuggestion = threads }
        #if compiler(>=6.3)
        _createExecutors(factory: Factory.self)
        return true
        #else
        return NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        #endif
    }

    #if compiler(>=6.3)
    /// The executors the runtime asks for: the platform's main executor, the event loops for tasks.
    struct Factory: ExecutorFactory {
        static let loops = LoopTaskExecutor(group: MultiThreadedEventLoopGroup.singleton)
        static var mainExecutor: any MainExecutor { PlatformExecutorFactory.mainExecutor }
        static var defaultExecutor: any TaskExecutor { loops }
    }
    #endif
}

#if compiler(>=6.3)
/// A task executor over an event loop group: a job runs on one of its loops at once, or from the
/// loop's timer when it is due.
final class LoopTaskExecutor: TaskExecutor, SchedulingExecutor {
    private let group: MultiThreadedEventLoopGroup

    init(group: MultiThreadedEventLoopGroup) {
        self.group = group
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // `any()` stays on the current loop when called from one, so a task keeps its thread.
        group.any().execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C
    ) {
        schedule(UnownedJob(job), in: delay, tolerance: tolerance, clock: clock)
    }

    func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C
    ) {
        schedule(UnownedJob(job), in: clock.now.duration(to: instant), tolerance: tolerance, clock: clock)
    }

    /// Swift's clocks measure in `Duration`; a job on a clock that does not is handed to the
    /// platform's executor, which knows how to wait for any clock.
    private func schedule<C: Clock>(_ job: UnownedJob, in delay: C.Duration, tolerance: C.Duration?, clock: C) {
        guard let delay = delay as? Duration else {
            let platform = PlatformExecutorFactory.defaultExecutor as? any SchedulingExecutor
            if let platform {
                platform.enqueue(ExecutorJob(job), after: delay, tolerance: tolerance, clock: clock)
            } else {
                PlatformExecutorFactory.defaultExecutor.enqueue(ExecutorJob(job))
            }
            return
        }
        let (seconds, attoseconds) = delay.components
        let nanoseconds = max(0, seconds) &* 1_000_000_000 &+ max(0, attoseconds / 1_000_000_000)
        group.any().scheduleTask(in: .nanoseconds(nanoseconds)) {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
#endif
