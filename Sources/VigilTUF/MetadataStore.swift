import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Files in one directory, each replaced atomically (temporary file, `fsync`, `rename`, `fsync` of
/// the directory): a reader sees the old bytes or the new ones, never a mix, and a crash leaves no
/// half-written trusted file. Names are percent-encoded (``fileName(role:)``), so a role name from
/// a repository can never name a path outside the directory.
public struct FileStore: Sendable {
    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    /// `ROLE.json` with every byte outside `A–Z a–z 0–9 - . _ ~` percent-encoded (Python's
    /// `urllib.parse.quote(role, "")`, the form the suite and python-tuf use).
    public static func fileName(role: String) -> String { percentEncode(role) + ".json" }

    /// Percent-encodes every byte outside the URL's unreserved set.
    public static func percentEncode(_ text: String, keeping extra: Set<UInt8> = []) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.append(b)
            case _ where extra.contains(b): out.append(b)
            default: out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of `name`, or nil when it does not exist. More than `limit` bytes is an error.
    public func read(_ name: String, limit: Int) throws(TUFError) -> [UInt8]? {
        let path = directory + "/" + name
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .storage("open \(path)", .current("open"))
        }
        defer { close(fd) }
        let bytes: [UInt8]
        do { bytes = try FileIO.read(fd, limit: limit + 1) } catch { throw .storage("read \(path)", error) }
        guard bytes.count <= limit else {
            throw TUFError(
                code: .tooLarge,
                message: "\(path) is more than \(limit) bytes — remove it; the next refresh fetches it again")
        }
        return bytes
    }

    /// Replaces `name` with `bytes` atomically.
    public func write(_ name: String, _ bytes: [UInt8]) throws(TUFError) {
        let path = directory + "/" + name
        var template = Array((directory + "/.tmp-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd < 0 { throw .storage("create a file in \(directory)", .current("mkstemp")) }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var committed = false
        defer {
            if !committed { unlink(temporary) }
        }
        do {
            defer { close(fd) }
            do { try FileIO.writeAll(fd, bytes) } catch { throw TUFError.storage("write \(temporary)", error) }
            if fchmod(fd, 0o644) != 0 { throw TUFError.storage("chmod \(temporary)", .current("fchmod")) }
            if fsync(fd) != 0 { throw TUFError.storage("fsync \(temporary)", .current("fsync")) }
        }
        if rename(temporary, path) != 0 { throw .storage("rename to \(path)", .current("rename")) }
        committed = true
        let dirfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
    }

    /// Removes `name` if it exists.
    public func remove(_ name: String) throws(TUFError) {
        let path = directory + "/" + name
        if unlink(path) != 0 && errno != ENOENT { throw .storage("remove \(path)", .current("unlink")) }
    }
}
