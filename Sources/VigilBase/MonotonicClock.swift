#if canImport(Glibc)
import Glibc
#endif

/// `CLOCK_MONOTONIC`, the clock every deadline, timed wait and interval in Vigil runs on (a
/// wall-clock step can neither cut a wait short nor stretch it). Swift's `ContinuousClock` is
/// not it on Linux (it counts suspended time too), and ``ConditionLock``'s timed waits need
/// exactly this clock.
package enum MonotonicClock {
    /// Now, in seconds.
    package static func seconds() -> Double {
        let now = read()
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Now, in nanoseconds.
    package static func nanoseconds() -> UInt64 {
        let now = read()
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    private static func read() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now
    }
}
