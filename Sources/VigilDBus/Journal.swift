internal import CSystemd
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The systemd journal's native protocol, through libsystemd's `sd_journal_sendv`.
///
/// libsystemd is reached through this module only (with sd-bus, ``DBusConnection``).
public enum Journal {
    /// The journal's native socket, where sd_journal_sendv sends (a path fixed in libsystemd).
    static let socketPath = "/run/systemd/journal/socket"

    /// Whether descriptor `descriptor` (standard error by default) is connected to the journal:
    /// `JOURNAL_STREAM` in `environment` ("DEVICE:INODE", set by systemd for a service whose
    /// output goes to the journal) names the descriptor's device and inode (`fstat`), as
    /// sd_journal_stream_fd(3) and systemd.exec(5) describe. A `JOURNAL_STREAM` inherited by a
    /// process whose standard error was redirected elsewhere does not match.
    public static func isConnected(descriptor: Int32 = 2, environment: [String: String]) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// Sends one entry made of `fields`, each `NAME=value` (the value any bytes, newlines
    /// included). The call writes one datagram to the journal's socket; it waits only as a write
    /// to a journal-connected standard error would, when the journal is not reading.
    /// - Throws: ``SystemCallError`` (`sd_journal_sendv`) when the journal does not take it, or
    ///   `ENOENT` when its socket is missing: sd_journal_sendv drops an entry silently then, and
    ///   the caller must know to write it elsewhere.
    public static func send(_ fields: [[UInt8]]) throws(SystemCallError) {
        var socket = stat()
        guard stat(socketPath, &socket) == 0, socket.st_mode & S_IFMT == S_IFSOCK else {
            throw SystemCallError("sd_journal_sendv", errno: ENOENT)
        }
        // One buffer holding every field, and an iovec per field into it.
        let buffer = Array(fields.joined())
        let result = buffer.withUnsafeBufferPointer { bytes -> Int32 in
            var offset = 0
            let vectors = fields.map { field -> iovec in
                defer { offset += field.count }
                return iovec(
                    iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress?.advanced(by: offset)),
                    iov_len: field.count)
            }
            return vectors.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) }
        }
        if result < 0 { throw SystemCallError("sd_journal_sendv", errno: result) }
    }
}
