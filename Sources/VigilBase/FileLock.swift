#if canImport(Glibc)
import Glibc
#endif

/// Exclusive `flock` locks for read-modify-write sections that other processes run too.
package enum FileLock {
    /// Opens `path` with `flags` (and `mode` when it creates), waits for an exclusive `flock` on
    /// it, runs `body`, then unlocks and closes. A failed `open` or `flock` is turned into the
    /// caller's error by `failure` (the ``SystemCallError`` names the call).
    package static func withExclusiveLock<T, E: Error>(
        on path: String, flags: Int32, mode: mode_t = 0o600, failure: (SystemCallError) -> E,
        _ body: () throws(E) -> T
    ) throws(E) -> T {
        let file: OwnedDescriptor
        do throws(SystemCallError) {
            file = try OwnedDescriptor("open") { open(path, flags | O_CLOEXEC, mode) }
        } catch {
            throw failure(error)
        }
        let fd = file.rawValue  // lent to the calls below; `file` closes it as it goes
        do throws(SystemCallError) {
            try SystemCallError.check("flock") { flock(fd, LOCK_EX) }
        } catch {
            throw failure(error)
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

extension FileLock {
    /// Why ``acquire(fd:giveUp:)`` did not get the lock.
    package enum AcquireFailure: Error, Sendable {
        /// `giveUp` said the holder kept it too long.
        case timedOut
        /// `flock` failed.
        case failed(SystemCallError)
    }

    /// Takes an exclusive `flock` on the open descriptor `fd` without ever blocking in the kernel:
    /// tries every 10–50 ms and stops with ``AcquireFailure/timedOut`` once `giveUp` returns true
    /// (a waiter's deadline).
    package static func acquire(fd: Int32, giveUp: () -> Bool) throws(AcquireFailure) {
        var pause: UInt32 = 10_000
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            if e == EINTR { continue }
            guard e == EWOULDBLOCK else { throw .failed(SystemCallError("flock", errno: e)) }
            if giveUp() { throw .timedOut }
            usleep(pause)
            pause = min(pause * 2, 50_000)
        }
    }
}
