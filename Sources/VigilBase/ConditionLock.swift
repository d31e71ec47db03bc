#if canImport(Glibc)
import Glibc
#endif

/// A mutex with a condition variable (POSIX threads), for threads of our own that wait for work:
/// what Foundation's `NSCondition` does, without linking full Foundation. Timed waits run on
/// `CLOCK_MONOTONIC`, so a change of the wall clock neither shortens nor stretches them.
package final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    package init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }

    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` with the lock held.
    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Releases the lock until a broadcast (or a spurious wake-up), then takes it again.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// As ``wait()``, for at most `seconds`; false when the time ran out.
    @discardableResult
    package func wait(seconds: Double) -> Bool {
        let deadline = MonotonicClock.seconds() + max(seconds, 0)
        var time = timespec()
        time.tv_sec = Int(deadline.rounded(.down))
        time.tv_nsec = Int((deadline - deadline.rounded(.down)) * 1e9)
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }

    /// Wakes every thread waiting on the lock.
    package func broadcast() { pthread_cond_broadcast(condition) }
}
