import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The process's descriptor limit (`RLIMIT_NOFILE`). A supervisor raises its own soft limit to
/// the hard one at start, as systemd does for itself and Go's runtime does for every program:
/// the soft default (1024) is kept low only for programs that still use `select(2)`. The soft
/// limit the process started with is remembered, so that the programs it starts get it back.
package enum DescriptorLimit {
    /// The limits before and after ``raiseSoftToHard()``.
    package struct Raise: Sendable, Equatable {
        /// The soft limit the process started with.
        package var original: UInt64
        /// The soft limit now (the hard limit, where it could be raised).
        package var current: UInt64
    }

    private static let state = Mutex<Raise?>(nil)

    /// Raises the soft limit to the hard limit, once per process (later calls return the first
    /// result); nil when the limits cannot be read. An unlimited hard limit is capped at the
    /// kernel's `fs.nr_open`.
    @discardableResult
    package static func raiseSoftToHard() -> Raise? {
        state.withLock { state in
            if let state { return state }
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
            let original = UInt64(limit.rlim_cur)
            var target = limit.rlim_max
            if target == rlim_t.max { target = rlim_t(nrOpen() ?? 1_048_576) }  // RLIM_INFINITY
            if target > limit.rlim_cur {
                var raised = limit
                raised.rlim_cur = target
                if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
            }
            let result = Raise(original: original, current: UInt64(limit.rlim_cur))
            state = result
            return result
        }
    }

    /// The soft limit the process started with, when ``raiseSoftToHard()`` raised it (what a
    /// child should get back before exec); nil when it was not raised.
    package static var originalSoftLimit: UInt64? {
        state.withLock { state in
            guard let state, state.current != state.original else { return nil }
            return state.original
        }
    }

    /// The current soft limit.
    package static var current: UInt64? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        return UInt64(limit.rlim_cur)
    }

    /// How many descriptors the process has open now (the entries of `/proc/self/fd`, less the
    /// one that lists them).
    package static func openCount() -> Int? {
        guard let names = Directory.names(in: "/proc/self/fd") else { return nil }
        return max(names.count - 1, 0)
    }

    private static func nrOpen() -> UInt64? {
        guard let bytes = FileIO.contents(ofFile: "/proc/sys/fs/nr_open", limit: 64) else { return nil }
        return UInt64(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: " \n"))
    }
}
