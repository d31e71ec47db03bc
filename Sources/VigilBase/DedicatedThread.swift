import Dispatch
import Synchronization

/// Jobs for a thread of ours, in the order they came, and whether the thread still takes more:
/// the queue ``DedicatedThread`` and ``PollLoop`` share (each guards it with its own lock).
package struct JobQueue<Job> {
    private var jobs: [Job] = []
    /// True once the thread takes no more jobs.
    package private(set) var closed = false

    package init() {}

    /// Whether jobs wait.
    package var isEmpty: Bool { jobs.isEmpty }

    /// Adds `job`; false (and nothing added) once closed.
    package mutating func append(_ job: Job) -> Bool {
        guard !closed else { return false }
        jobs.append(job)
        return true
    }

    /// Takes every waiting job, oldest first.
    package mutating func takeAll() -> [Job] {
        defer { jobs.removeAll() }
        return jobs
    }

    /// Takes the oldest waiting job.
    package mutating func takeFirst() -> Job? {
        jobs.isEmpty ? nil : jobs.removeFirst()
    }

    /// Takes no more jobs; returns true the first time.
    @discardableResult
    package mutating func close() -> Bool {
        defer { closed = true }
        return !closed
    }
}

/// A named thread of our own that runs jobs one after another: for blocking C calls (libpulse,
/// espeak-ng, a plugin's C ABI), which must never run on Swift's cooperative pool.
///
/// It is ``PollLoop``'s job queue without the poll: a thread that never waits for a descriptor
/// needs none, so it sleeps on a semaphore and starts even when the process is out of
/// descriptors. A thread that also waits for descriptors is a ``PollLoop``.
package final class DedicatedThread: Sendable {
    private let queue = Mutex(JobQueue<@Sendable () -> Void>())
    private let available = DispatchSemaphore(value: 0)

    /// Starts the thread; the kernel shows it as `name`.
    package init(name: String) {
        KernelThread.start(name: name) { [self] in loop() }
    }

    /// Queues `job`; returns false once the thread was closed.
    @discardableResult
    package func enqueue(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = queue.withLock { $0.append(job) }
        if accepted { available.signal() }
        return accepted
    }

    /// Runs `body` on the thread after the jobs queued before it and returns its result; `nil`
    /// once the thread was closed.
    package func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T? {
        await Handoff<T?>.value { handoff in
            if !enqueue({ handoff.deliver(body()) }) { handoff.deliver(nil) }
        }
    }

    /// Lets the thread finish the queued jobs and exit.
    package func close() {
        _ = queue.withLock { $0.close() }
        available.signal()
    }

    private func loop() {
        while true {
            available.wait()
            let (job, done) = queue.withLock { q in (q.takeFirst(), q.closed) }
            if let job { job() } else if done { return }
        }
    }
}
