import Dispatch
import FoundationEssentials
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Saves preferences on a thread of its own (the write fsyncs), coalescing bursts: only the
/// newest pending value is written. A value whose write failed (a full disk) stays pending and
/// is written again every ``retryInterval`` until it reaches the disk or a newer value replaces
/// it, so a choice accepted while the disk was full is saved once there is room again.
final class PreferenceWriter: Sendable {
    private struct Queue {
        var pending: SoundscapePreferences?
        var closed = false
    }
    private let queue = Mutex(Queue())
    private let available = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let store: PreferenceStore
    /// How long a failed write waits before it is tried again.
    let retryInterval: Duration

    init(store: PreferenceStore, retryInterval: Duration = .seconds(5)) {
        self.store = store
        self.retryInterval = retryInterval
        KernelThread.start(name: "vigil-prefs") { [self] in loop() }
    }

    /// Queues `preferences` to be saved.
    func save(_ preferences: SoundscapePreferences) {
        queue.withLock { $0.pending = preferences }
        available.signal()
    }

    /// Writes what is pending (one last try for a value that failed) and ends the thread;
    /// returns once written.
    func close() async {
        let first = queue.withLock { q -> Bool in
            defer { q.closed = true }
            return !q.closed
        }
        guard first else { return }
        available.signal()
        await offThread { [finished] in finished.wait() }
    }

    private func loop() {
        var failed: SoundscapePreferences?
        while true {
            if failed == nil {
                available.wait()
            } else {
                let (seconds, attoseconds) = retryInterval.components
                let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
                _ = available.wait(timeout: .now() + .nanoseconds(nanoseconds))
            }
            let (next, closed) = queue.withLock { q -> (SoundscapePreferences?, Bool) in
                defer { q.pending = nil }
                return (q.pending, q.closed)
            }
            if let value = next ?? failed {
                failed = store.save(value) ? nil : value
            }
            if closed {
                if failed != nil { store.reportLost() }
                finished.signal()
                return
            }
        }
    }
}
