import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Whole reads and writes on raw descriptors, through swift-system's `FileDescriptor` (which
/// retries `EINTR`): the one read-to-the-end loop and the one write-all loop every module uses.
package enum FileIO {
    /// Reads `fd` from its current offset until end of file or until `limit` bytes are in,
    /// whichever comes first.
    ///
    /// The buffer starts at `expected` bytes (for example a file's `st_size + 1`) and grows only
    /// while data keeps coming, so a large `limit` costs no memory for a small file. A caller that
    /// must refuse a file longer than `cap` passes `limit: cap + 1` and checks the count.
    /// - Throws: ``SystemCallError`` for `read` when the descriptor cannot be read.
    package static func read(_ fd: Int32, limit: Int, expected: Int = 4096) throws(SystemCallError) -> [UInt8] {
        let descriptor = FileDescriptor(rawValue: fd)
        var buffer = [UInt8](repeating: 0, count: max(0, min(expected, limit)))
        var total = 0
        while total < limit {
            if total == buffer.count {
                buffer.append(contentsOf: repeatElement(0, count: min(max(buffer.count, 4096), limit - total)))
            }
            let count: Int
            do {
                count = try buffer.withUnsafeMutableBytes { raw in
                    try descriptor.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[total...]))
                }
            } catch {
                throw SystemCallError("read", errno: error as? Errno ?? .ioError)
            }
            if count == 0 { break }
            total += count
        }
        buffer.removeSubrange(total...)
        return buffer
    }

    /// The first `limit` bytes of the file at `path` (a procfs or sysfs entry, a kernel-made
    /// text), or `nil` when it cannot be opened or read. Follows symbolic links: not for files
    /// another user could plant (the core's `SafeFile` is for those).
    package static func contents(ofFile path: String, limit: Int) -> [UInt8]? {
        guard let file = try? OwnedDescriptor("open", { open(path, O_RDONLY | O_CLOEXEC) }) else { return nil }
        return try? read(file.rawValue, limit: limit)
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and `EINTR`.
    /// - Throws: ``SystemCallError`` for `write` on the first failed write (some bytes may be
    ///   written by then).
    package static func writeAll(_ fd: Int32, _ bytes: some Sequence<UInt8>) throws(SystemCallError) {
        do {
            _ = try FileDescriptor(rawValue: fd).writeAll(bytes)
        } catch {
            throw SystemCallError("write", errno: error as? Errno ?? .ioError)
        }
    }
}
