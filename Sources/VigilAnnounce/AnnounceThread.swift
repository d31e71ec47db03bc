import Foundation
import Synchronization

/// The announcer's own thread: runs jobs one after another (so prompts never overlap), for
/// the blocking libpulse and espeak-ng calls that must not run on Swift's cooperative pool.
final class AnnounceThread: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var closed = false
    }
    private let queue = Mutex(Queue())
    private let available = DispatchSemaphore(value: 0)

    init(name: String) {
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    /// Runs `body` on the thread after the jobs queued before it; `nil` once closed.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T? {
        await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let accepted = queue.withLock { q in
                guard !q.closed else { return false }
                q.jobs.append { continuation.resume(returning: body()) }
                return true
            }
            if accepted { available.signal() } else { continuation.resume(returning: nil) }
        }
    }

    /// Lets the thread finish the queued jobs and end.
    func close() {
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
