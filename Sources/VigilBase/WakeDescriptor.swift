internal import CVigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The one wake-up descriptor of Vigil's threads: an eventfd created close-on-exec and
/// non-blocking in one call (no `pipe()` + `fcntl` window in which a concurrent fork+exec
/// inherits it). Signalled from any thread, it stays readable until drained, so a thread that
/// sleeps in `poll` on it (or hands it to a C event loop) wakes at once and every later wait too.
package struct WakeDescriptor: ~Copyable, Sendable {
    private let descriptor: OwnedDescriptor

    /// A new, unsignalled wake descriptor.
    /// - Throws: ``SystemCallError`` for `eventfd` (`EMFILE` when the process is out of descriptors).
    package init() throws(SystemCallError) {
        descriptor = try OwnedDescriptor("eventfd") { vigil_base_eventfd() }
    }

    /// The descriptor number, for `poll` or a C event loop; valid while this value lives.
    package var rawValue: Int32 { descriptor.rawValue }

    /// Makes the descriptor readable (adds one to its counter; a full counter is readable already).
    package func signal() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(descriptor.rawValue, $0.baseAddress, $0.count) }
    }

    /// Resets the descriptor to unsignalled.
    package func drain() {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { Glibc.read(descriptor.rawValue, $0.baseAddress, $0.count) }
    }

    /// Waits up to `nanoseconds` (0: just looks) for the descriptor `fd` of a wake descriptor to
    /// be signalled; leaves it signalled. For a thread that was handed only the number.
    package static func wait(_ fd: Int32, nanoseconds: UInt64) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = nanoseconds == 0 ? 0 : Int32(min(nanoseconds / 1_000_000 + 1, UInt64(Int32.max)))
        while true {
            let rc = poll(&entry, 1, milliseconds)
            if rc < 0 && Glibc.errno == EINTR { continue }
            return rc > 0
        }
    }
}
