import VigilBase
import VigilCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One running host per `vigil.toml`: an exclusive `flock` on `lock-HASH` in the runtime
/// directory, held for the life of the process (the kernel releases it however the process
/// ends, so a crash leaves no stale lock). The file holds the holder's pid, for the message a
/// second host gets.
public final class ConfigLock: Sendable {
    /// The lock file.
    public let path: String
    /// The lock file, open while this value lives (closing it releases the lock).
    private let file: OwnedDescriptor

    private init(path: String, file: consuming OwnedDescriptor) {
        self.path = path
        self.file = file
    }

    /// Takes the lock of `configPath` (an absolute path) in `directory`.
    ///
    /// - Throws: ``VigilError/Code/configInUse`` naming the pid that holds it;
    ///   ``VigilError/Code/runtimeDirectory`` when the lock file cannot be opened.
    public static func acquire(configPath: String, in directory: RuntimeDirectory) throws(VigilError) -> ConfigLock {
        let path = "\(directory.path)/lock-\(hash(configPath))"
        // The lock file is a state file like the status files: no link, this user's, not writable by others.
        let fd: Int32
        do throws(CoreError) {
            guard let opened = try StateFile.open(path, flags: O_RDWR | O_CREAT, mode: 0o600, what: "the lock file")
            else {
                throw CoreError(code: .ioFailure, message: "the lock file \(path) vanished as it was created")
            }
            fd = opened
        } catch {
            throw VigilError(
                code: .runtimeDirectory, message: "cannot open the lock file \(path): \(error.message)", cause: error)
        }
        let file = OwnedDescriptor(adopting: fd)
        var rc: Int32
        repeat { rc = flock(file.rawValue, LOCK_EX | LOCK_NB) } while rc != 0 && errno == EINTR
        guard rc == 0 else {
            let holder = readPID(file.rawValue)  // `file` closes itself as this throws
            throw VigilError(
                code: .configInUse,
                message: "another Vigil host already runs \(configPath)"
                    + (holder.map { " (pid \($0))" } ?? "")
                    + " — every worker would run twice; stop it first (`kill \(holder.map(String.init) ?? "PID")`), "
                    + "or see it with `vigil status`")
        }
        // The pid, then the configuration (for `vigil status` when the host's status file is missing).
        let text = Array("\(getpid())\n\(configPath)\n".utf8)
        _ = ftruncate(file.rawValue, 0)
        _ = text.withUnsafeBytes { pwrite(file.rawValue, $0.baseAddress, $0.count, 0) }
        return ConfigLock(path: path, file: file)
    }

    deinit {
        _ = ftruncate(file.rawValue, 0)  // then `file` closes itself
    }

    /// A running host, seen through the lock it holds.
    public struct Holder: Sendable, Hashable {
        /// The process holding the lock (as the kernel says, not as the file says).
        public let pid: Int32
        /// The `vigil.toml` it runs, as the holder wrote it (nil when it could not).
        public let configPath: String?
    }

    /// The processes that hold a lock in `directory` now: what shows that a host runs when its
    /// status file is missing (a full runtime directory) or unreadable. The kernel's list of
    /// locks (`/proc/locks`) names them; no lock is taken to find out, so a host starting
    /// meanwhile is never refused because of it.
    public static func holders(in directory: RuntimeDirectory) -> [Holder] {
        guard let table = FileIO.contents(ofFile: "/proc/locks", limit: 1 << 22) else { return [] }
        // (major, minor, inode) → pid, for every FLOCK lock on the machine.
        var locked: [String: Int32] = [:]
        for line in String(decoding: table, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]) else { continue }
            locked[String(fields[5])] = pid
        }
        var holders: [Holder] = []
        for name in (Directory.names(in: directory.path) ?? []).sorted() where name.hasPrefix("lock-") {
            let path = directory.path + "/" + name
            // Read through the same checks as the status files; a lock file that fails them is not a host's.
            guard let descriptor = try? StateFile.open(path, what: "the lock file") else { continue }
            let file = OwnedDescriptor(adopting: descriptor)
            var info = stat()
            guard fstat(file.rawValue, &info) == 0 else { continue }
            let major = (info.st_dev >> 8) & 0xfff | (info.st_dev >> 32) & ~0xfff
            let minor = info.st_dev & 0xff | (info.st_dev >> 12) & ~0xff
            let key =
                String(major, radix: 16).leftPadded(2) + ":" + String(minor, radix: 16).leftPadded(2) + ":"
                + String(info.st_ino)
            guard let pid = locked[key] else { continue }
            let lines = ((try? FileIO.read(file.rawValue, limit: 8192)) ?? []).split(separator: UInt8(ascii: "\n"))
            let config = lines.count >= 2 ? String(validating: lines[1], as: UTF8.self) : nil
            holders.append(Holder(pid: pid, configPath: config))
        }
        return holders
    }

    private static func readPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self).split(separator: "\n").first.flatMap { Int32($0) }
    }

    /// FNV-1a (64 bit) of the path, in hex: a short file name, not a security boundary (the
    /// directory is the user's own, 0700).
    static func hash(_ text: String) -> String {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            value ^= UInt64(byte)
            value &*= 0x0000_0100_0000_01b3
        }
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

extension String {
    /// The text with zeros in front, up to `width` characters.
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
