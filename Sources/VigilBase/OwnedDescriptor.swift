internal import CVigilBase

#if canImport(Glibc)
import Glibc
#endif

/// A file descriptor this value owns, closed exactly once: by ``close()``, which reports the
/// error, or when the value goes away (as systemd's `_cleanup_close_`). It cannot be copied;
/// ``take()`` hands the number on to an owner outside Swift (a C library, a child's
/// `dup2`), and a borrow (``rawValue``) lends it for a call.
///
/// swift-system's `FileDescriptor` is the name and errno model behind it; that type is a plain
/// number anyone may close, this one is the ownership.
package struct OwnedDescriptor: ~Copyable, Sendable {
    /// The descriptor number, lent for a call; valid while this value lives.
    package let rawValue: Int32

    /// Takes ownership of `rawValue` (a descriptor just returned by the kernel).
    package init(adopting rawValue: Int32) {
        precondition(rawValue >= 0, "OwnedDescriptor adopts only a valid descriptor, not \(rawValue)")
        self.rawValue = rawValue
    }

    /// Runs `call`, a system call that returns a new descriptor or -1 with `errno`, retrying
    /// `EINTR`, and owns what it returns. `errno` is read right after the call.
    /// - Throws: ``SystemCallError`` naming `name`.
    package init(_ name: String, _ call: () -> Int32) throws(SystemCallError) {
        self.init(adopting: try SystemCallError.check(name, call))
    }

    /// A connection waiting on the listening socket `listener`, close-on-exec and non-blocking
    /// from its creation (`accept4`, which Glibc's Swift overlay does not export).
    /// - Throws: ``SystemCallError`` for `accept4` (`EAGAIN` when none waits).
    package static func accept(from listener: Int32) throws(SystemCallError) -> OwnedDescriptor {
        try OwnedDescriptor("accept4") { vigil_base_accept(listener) }
    }

    /// Gives up ownership without closing: the caller closes the number from now on.
    package consuming func take() -> Int32 {
        let fd = rawValue
        discard self
        return fd
    }

    /// Closes the descriptor now. The number is released even when this throws (Linux never
    /// retries `close`: a retry after `EINTR` could close a descriptor another thread just got).
    /// - Throws: ``SystemCallError`` for `close` (`EIO` from a delayed write error, `EINTR`).
    package consuming func close() throws(SystemCallError) {
        let fd = rawValue
        discard self
        if Glibc.close(fd) != 0 { throw SystemCallError.current("close") }
    }

    deinit { _ = Glibc.close(rawValue) }
}
