import Glibc

/// Writes files atomically: a temporary file created with `O_EXCL` in the same directory,
/// written, `fsync`ed, renamed over the target, then the directory `fsync`ed (no `fsync` for
/// files in a volatile directory: ``write(_:to:mode:durable:)``).
///
/// Readers see either the old file or the complete new one, and a failure leaves no temporary
/// file behind.
public enum AtomicFile {
    /// Replaces (or creates) `path` with `bytes`.
    ///
    /// - Parameters:
    ///   - path: The file to write.
    ///   - bytes: Its new contents.
    ///   - mode: The permission bits of the new file; `nil` keeps the existing file's mode
    ///     (or uses 0644 for a new file). The mode is set on the temporary file before any byte is
    ///     written, so the file is never visible with wider permissions.
    ///   - durable: `fsync` the file before the rename and the directory after it (the default),
    ///     so the new contents survive a crash of the machine. `false` only for files in a
    ///     volatile directory such as `$XDG_RUNTIME_DIR`, which does not outlive the session
    ///     anyway: readers still see the old file or the complete new one (the rename is atomic).
    /// - Throws: ``CoreError`` with `.ioFailure`.
    public static func write(
        _ bytes: [UInt8], to path: String, mode: mode_t? = nil, durable: Bool = true
    ) throws(CoreError) {
        let directory = Path.directory(of: path)
        var finalMode: mode_t = mode ?? 0o644
        if mode == nil {
            var st = stat()
            if stat(path, &st) == 0 { finalMode = st.st_mode & 0o7777 }
        }
        let base = Path.lastComponent(of: path)
        var tempPath = ""
        var fd: Int32 = -1
        var openError: Int32 = 0  // read right after each open, not after the loop's own code
        for attempt in 0..<100 {
            tempPath = directory + "/." + base + ".tmp-\(getpid())-\(attempt)-\(UInt32.random(in: 0...UInt32.max))"
            fd = open(tempPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 { break }
            openError = errno
            if openError != EEXIST { break }
        }
        guard fd >= 0 else {
            throw CoreError.io("create a temporary file next to", path: path, errno: openError, call: "open")
        }
        var committed = false
        defer {
            if fd >= 0 { close(fd) }
            if !committed { unlink(tempPath) }
        }
        if fchmod(fd, finalMode) != 0 {
            throw CoreError.io("set the mode of", path: tempPath, errno: errno, call: "fchmod")
        }
        try writeAll(fd: fd, bytes: bytes, path: tempPath)
        if durable, fsync(fd) != 0 { throw CoreError.io("flush", path: tempPath, errno: errno, call: "fsync") }
        if close(fd) != 0 {
            let e = errno
            fd = -1
            throw CoreError.io("close", path: tempPath, errno: e, call: "close")
        }
        fd = -1
        if rename(tempPath, path) != 0 { throw CoreError.io("replace", path: path, errno: errno, call: "rename") }
        committed = true
        if durable { syncDirectory(directory) }
    }

    /// Creates `path` with `O_CREAT|O_EXCL` and `mode` and writes `bytes` to it; fails if the file
    /// exists. Used for secret keys: the mode is set at creation, never changed afterwards.
    public static func create(_ bytes: [UInt8], at path: String, mode: mode_t) throws(CoreError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else {
            let e = errno
            if e == EEXIST {
                throw CoreError(code: .ioFailure, message: "\(path) already exists; Vigil does not overwrite it")
            }
            throw CoreError.io("create", path: path, errno: e, call: "open")
        }
        var ok = false
        defer {
            close(fd)
            if !ok { unlink(path) }
        }
        try writeAll(fd: fd, bytes: bytes, path: path)
        if fsync(fd) != 0 { throw CoreError.io("flush", path: path, errno: errno, call: "fsync") }
        ok = true
        syncDirectory(Path.directory(of: path))
    }

    package static func writeAll(fd: Int32, bytes: [UInt8], path: String) throws(CoreError) {
        do {
            try FileIO.writeAll(fd, bytes)
        } catch {
            throw CoreError.io("write", path: path, errno: error.number, call: error.call)
        }
    }

    package static func syncDirectory(_ directory: String) {
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }
}

/// Path string helpers (POSIX paths as strings).
package enum Path {
    package static func join(_ base: String, _ component: String) -> String {
        if component.hasPrefix("/") { return component }
        if base.isEmpty { return component }
        return base.hasSuffix("/") ? base + component : base + "/" + component
    }

    /// The directory part of `path`: "." when it has none, "/" for a name in the root.
    package static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    package static func lastComponent(of path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        guard let slash = p.lastIndex(of: "/") else { return String(p) }
        return String(p[p.index(after: slash)...])
    }

    /// Makes `path` absolute against `base` (an absolute directory, usually the host environment's
    /// ``VigilPlugin/HostEnvironment/workingDirectory``) and removes `.`/`..`/empty components
    /// lexically (symbolic links are not resolved). The process's working directory is never read.
    package static func absolute(_ path: String, relativeTo base: String) -> String {
        normalized(path.hasPrefix("/") ? path : join(base.hasPrefix("/") ? base : "/" + base, path))
    }

    /// `path` with `.`/`..`/empty components removed lexically: an absolute path stays absolute, a
    /// relative one stays relative (the kernel resolves it against the working directory when it is
    /// opened, as for any relative path; callers that need an absolute one use ``absolute(_:relativeTo:)``).
    package static func normalized(_ path: String) -> String {
        let isAbsolute = path.hasPrefix("/")
        var parts: [Substring] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            if component == "." { continue }
            if component == ".." {
                if let last = parts.last, last != ".." {
                    parts.removeLast()
                } else if !isAbsolute {
                    parts.append(component)
                }
                continue
            }
            parts.append(component)
        }
        if isAbsolute { return "/" + parts.joined(separator: "/") }
        return parts.isEmpty ? "." : parts.joined(separator: "/")
    }
}
