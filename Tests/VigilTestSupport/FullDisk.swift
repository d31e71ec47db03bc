import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small private tmpfs that a test can fill to the last block and free again: the real
/// `ENOSPC` of a full state directory. Mounting needs `CAP_SYS_ADMIN` (root here);
/// ``isAvailable`` says whether this machine allows it.
public final class FullDisk: @unchecked Sendable {
    /// The mount point.
    public let path: String
    private let directory: TestDirectory
    private var filler: String { path + "/.filler" }

    /// Whether a tmpfs can be mounted here (tried once, on a scratch directory).
    public static let isAvailable: Bool = {
        guard geteuid() == 0, let disk = try? FullDisk() else { return false }
        disk.unmount()
        return true
    }()

    /// Mounts a tmpfs of `kilobytes` (mode 0700) on a fresh temporary directory.
    public init(kilobytes: Int = 64) throws {
        directory = try TestDirectory("vigil-full-disk")
        path = directory.path
        let mounted = "size=\(kilobytes)k,mode=0700".withCString { mount("vigil-test", path, "tmpfs", 0, $0) }
        guard mounted == 0 else {
            let reason = String(cString: strerror(errno))
            directory.remove()
            throw RuntimeFixtures.Failure("cannot mount a tmpfs on \(path): \(reason)")
        }
    }

    /// Takes every free block with a filler file, until a write fails with `ENOSPC`.
    public func fill() throws {
        let fd = open(filler, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw RuntimeFixtures.Failure("cannot create \(filler): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let block = [UInt8](repeating: 0, count: 4096)
        while true {
            let written = block.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) }
            if written > 0 { continue }
            if written < 0 && errno == EINTR { continue }
            guard written < 0 && errno == ENOSPC else {
                throw RuntimeFixtures.Failure("filling \(path) stopped with \(String(cString: strerror(errno)))")
            }
            return
        }
    }

    /// Removes the filler: the disk has room again.
    public func free() { unlink(filler) }

    /// Unmounts the tmpfs and removes its mount point (call it in `defer`).
    public func unmount() {
        _ = umount2(path, Int32(MNT_DETACH))
        directory.remove()
    }
}
