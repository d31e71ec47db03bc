import Synchronization

/// Hands one value from a thread of ours (a bus, audio or C-library thread) to the task that
/// awaits it, through a lock.
///
/// A continuation's resume orders the resuming thread's writes before the awaiting task's reads,
/// but when the resume comes before the task has suspended (a reply faster than the `await`), the
/// Swift runtime (6.3) lets the task go on without telling ThreadSanitizer about that order, which
/// then reports the value's contents as a data race (`scripts/sanitize/continuation-check.swift`
/// shows it in a dozen lines). The value therefore never travels in the continuation: the
/// producer stores it under a `Mutex` before it resumes, and the task takes it under the same
/// `Mutex` after; that order holds, and is visible, on every path.
package struct Handoff<Value: Sendable>: Sendable {
    private final class Slot: Sendable {
        let value = Mutex<Value?>(nil)
    }

    private let slot: Slot
    private let continuation: CheckedContinuation<Void, Never>

    /// Calls `start` with a handoff whose ``deliver(_:)`` (once, from any thread) ends the wait,
    /// and returns what was delivered.
    package static func value(
        isolation: isolated (any Actor)? = #isolation, _ start: (Handoff<Value>) -> Void
    ) async -> Value {
        let slot = Slot()
        await withCheckedContinuation(isolation: isolation) { continuation in
            start(Handoff(slot: slot, continuation: continuation))
        }
        guard let value = slot.value.withLock({ $0.take() }) else {
            preconditionFailure("a Handoff resumed without a value")
        }
        return value
    }

    /// Stores `value`, then resumes the waiting task. Call it exactly once.
    package func deliver(_ value: Value) {
        slot.value.withLock { $0 = value }
        continuation.resume()
    }
}
