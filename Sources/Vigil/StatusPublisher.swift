import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes a host's status file atomically (temp file 0600, fsync, rename) and removes it.
final class StatusPublisher: Sendable {
    let directory: RuntimeDirectory
    let file: String

    init(directory: RuntimeDirectory, pid: Int32) {
        self.directory = directory
        self.file = directory.statusFile(pid: pid)
    }

    /// Publishes `status`; returns an error message when the write failed (the host keeps running).
    func publish(_ status: HostStatus) -> String? {
        let temp = file + ".tmp"
        unlink(temp)
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "cannot create \(temp): \(String(cString: strerror(errno)))" }
        let data = status.jsonData()
        var failure: String?
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = "cannot write \(temp): \(String(cString: strerror(errno)))"
                    return
                }
                offset += n
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = "cannot fsync \(temp): \(String(cString: strerror(errno)))" }
        close(fd)
        if failure == nil, rename(temp, file) != 0 {
            failure = "cannot rename \(temp) to \(file): \(String(cString: strerror(errno)))"
        }
        if failure != nil { unlink(temp) }
        return failure
    }

    func remove() {
        unlink(file)
    }

    deinit { unlink(file) }
}

/// The hosts currently publishing status for this user (what `vigil status` shows).
public enum PublishedHosts {
    /// Reads every live host's status from `directory`. Files of processes that no longer exist
    /// are stale (a host killed with SIGKILL) and are removed.
    public static func read(from directory: RuntimeDirectory) -> [Result<HostStatus, VigilError>] {
        guard let dir = opendir(directory.path) else { return [] }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasPrefix("host-"), name.hasSuffix(".json") { names.append(name) }
        }
        closedir(dir)
        var results: [(Int32, Result<HostStatus, VigilError>)] = []
        for name in names {
            guard let pid = Int32(name.dropFirst(5).dropLast(5)) else { continue }
            let path = directory.path + "/" + name
            if kill(pid, 0) != 0, errno == ESRCH {
                unlink(path)
                continue
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                results.append((pid, .failure(VigilError(code: .statusUnreadable, message: "cannot read \(path)"))))
                continue
            }
            do {
                results.append((pid, .success(try HostStatus(jsonData: data))))
            } catch {
                results.append(
                    (pid, .failure(VigilError(code: .statusUnreadable, message: "\(path): \(error.message)"))))
            }
        }
        return results.sorted { $0.0 < $1.0 }.map(\.1)
    }
}
