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
        let file: OwnedDescriptor
        do {
            file = try OwnedDescriptor("open") { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        } catch {
            if error.number == ENOENT { return nil }
            throw .storage("open \(path)", error)
        }
        let bytes: [UInt8]
        do { bytes = try FileIO.read(file.rawValue, limit: limit + 1) } catch { throw .storage("read \(path)", error) }
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
        let temporary = try writeTemporaryFile(bytes)
        var committed = false
        defer {
            if !committed { unlink(temporary) }
        }
        // errno is read inside `check`, right at the failing call, before the message is built.
        do { try SystemCallError.check("rename") { rename(temporary, path) } } catch {
            throw .storage("rename to \(path)", error)
        }
        committed = true
        if let directoryFile = try? OwnedDescriptor("open", { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) {
            _ = fsync(directoryFile.rawValue)
        }
    }

    /// A new file in the directory holding `bytes`, mode 0644, flushed and closed: its path.
    /// Removed again when any step fails.
    private func writeTemporaryFile(_ bytes: [UInt8]) throws(TUFError) -> String {
        var template = Array((directory + "/.tmp-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd < 0 {
            let failure = SystemCallError.current("mkstemp")  // before the message's interpolation runs
            throw .storage("create a file in \(directory)", failure)
        }
        let file = OwnedDescriptor(adopting: fd)
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var written = false
        defer {
            if !written { unlink(temporary) }
        }
        do { try FileIO.writeAll(file.rawValue, bytes) } catch { throw .storage("write \(temporary)", error) }
        // errno is read on the line after the failing call, before the message is built.
        if fchmod(file.rawValue, 0o644) != 0 {
            let failure = SystemCallError.current("fchmod")
            throw .storage("chmod \(temporary)", failure)
        }
        if fsync(file.rawValue) != 0 {
            let failure = SystemCallError.current("fsync")
            throw .storage("fsync \(temporary)", failure)
        }
        written = true
        return temporary  // `file` closes as this returns; a close error after fsync is not reported, as before
    }

    /// Removes `name` if it exists.
    public func remove(_ name: String) throws(TUFError) {
        let path = directory + "/" + name
        do { try SystemCallError.check("unlink") { unlink(path) } } catch {
            if error.number != ENOENT { throw .storage("remove \(path)", error) }
        }
    }
}
