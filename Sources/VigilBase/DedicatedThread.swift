import Dispatch
import Synchronization

/// A named thread of our own that runs jobs one after another: for blocking C calls (sd-bus,
/// libpulse, espeak-ng, a plugin's C ABI), which must never run on Swift's cooperative pool.
package final class DedicatedThread: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var closed = false
    }
    private let queue = Mutex(Queue())
    private let available = DispatchSemaphore(value: 0)

    /// Starts the thread; the kernel shows it as `name`.
    package init(name: String) {
        KernelThread.start(name: name) { [self] in loop() }
    }

    /// Queues `job`; returns false once the thread was closed.
    @discardableResult
    package func enqueue(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = queue.withLock { q in
            guard !q.closed else { return false }
            q.jobs.append(job)
            return true
        }
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
        queue.withLock { $0.closed = true }
        available.signal()
    }

    private func loop() {
        while true {
            available.wait()
            let (job, done) = queue.withLock { q -> ((@Sendable () -> Void)?, Bool) in
                if q.jobs.isEmpty { return (nil, q.closed) }
                return (q.jobs.removeFirst(), false)
            }
            if let job { job() } else if done { return }
        }
    }
}
