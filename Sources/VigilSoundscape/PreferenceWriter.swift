import Foundation
import Synchronization
import VigilBase

/// Saves preferences on a thread of its own (the write fsyncs), coalescing bursts: only the
/// newest pending value is written.
final class PreferenceWriter: Sendable {
    private struct Queue {
        var pending: SoundscapePreferences?
        var closed = false
    }
    private let queue = Mutex(Queue())
    private let available = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let store: PreferenceStore

    init(store: PreferenceStore) {
        self.store = store
        KernelThread.start(name: "vigil-prefs") { [self] in loop() }
    }

    /// Queues `preferences` to be saved.
    func save(_ preferences: SoundscapePreferences) {
        queue.withLock { $0.pending = preferences }
        available.signal()
    }

    /// Writes what is pending and ends the thread; returns once written.
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
        while true {
            available.wait()
            let (next, closed) = queue.withLock { q -> (SoundscapePreferences?, Bool) in
                defer { q.pending = nil }
                return (q.pending, q.closed)
            }
            if let next { store.save(next) }
            if closed {
                finished.signal()
                return
            }
        }
    }
}
