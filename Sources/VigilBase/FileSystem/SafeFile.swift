import Glibc

/// Reads files the way the verification pipeline needs: once, without following symbolic links,
/// regular files only, and never more than a cap.
///
/// The file is opened with `O_RDONLY|O_NOFOLLOW|O_CLOEXEC`, checked with `fstat` on the open
/// descriptor (so a swap between check and read is impossible), and read up to `cap + 1` bytes so
/// a file that grows past the cap while being read is still refused.
public enum SafeFile {
    /// Reads the regular file at `path`, refusing anything larger than `cap` bytes.
    ///
    /// - Parameters:
    ///   - path: The file to read; its last component must not be a symbolic link.
    ///   - cap: The largest size accepted, in bytes.
    ///   - what: How the file is named in error messages (for example "manifest").
    ///   - plugin: The plugin the file belongs to, for error messages.
    ///   - remedy: How to fix a file that is a link, not a regular file or too large, when the
    ///     general advice (replace it with the right regular file) does not fit.
    /// - Returns: The file's bytes, or `nil` when it does not exist.
    /// - Throws: ``CoreError`` with `.notRegularFile`, `.fileTooLarge` or `.ioFailure`.
    public static func readIfPresent(
        _ path: String, cap: Int, what: String, plugin: String? = nil, remedy: String? = nil
    ) throws(CoreError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            let e = errno
            if e == ENOENT { return nil }
            if e == ELOOP {
                throw CoreError(
                    code: .notRegularFile, plugin: plugin,
                    message: "the \(what) \(path) is a symbolic link; Vigil reads only regular files — "
                        + (remedy ?? "replace the link with the file itself"))
            }
            throw ioFailure("open the \(what) \(path)", SystemCallError("open", errno: e), plugin: plugin)
        }
        defer { close(fd) }
        return try read(fd: fd, path: path, cap: cap, what: what, plugin: plugin, remedy: remedy)
    }

    /// Reads the regular file at `path` like ``readIfPresent(_:cap:what:plugin:)``, but a missing
    /// file is an error (`.fileNotFound`).
    public static func read(_ path: String, cap: Int, what: String, plugin: String? = nil) throws(CoreError) -> [UInt8]
    {
        guard let bytes = try readIfPresent(path, cap: cap, what: what, plugin: plugin) else {
            throw CoreError(code: .fileNotFound, plugin: plugin, message: "the \(what) \(path) does not exist")
        }
        return bytes
    }

    /// Reads `relativePath` inside `directory` without following a symbolic link in any of its
    /// components: each directory on the way is opened with `O_DIRECTORY|O_NOFOLLOW`, the file
    /// itself with `O_NOFOLLOW`, then checked and read like ``readIfPresent(_:cap:what:plugin:)``.
    /// To read several files of one directory, open it once (``OpenedDirectory``).
    ///
    /// - Returns: The file's bytes, or `nil` when it does not exist.
    public static func readIfPresent(
        relativePath: String, inside directory: String, cap: Int, what: String, plugin: String? = nil
    ) throws(CoreError) -> [UInt8]? {
        guard let opened = try OpenedDirectory(directory, plugin: plugin) else { return nil }
        return try opened.readIfPresent(relativePath: relativePath, cap: cap, what: what, plugin: plugin)
    }

    /// A directory opened once, so that several files inside it are read (each like
    /// ``SafeFile/readIfPresent(relativePath:inside:cap:what:plugin:)``) without resolving the
    /// directory's path again for each: a plugin directory is probed for up to 33 files.
    public struct OpenedDirectory: ~Copyable {
        private let descriptor: OwnedDescriptor
        /// The directory's path, for messages.
        public let path: String

        /// Opens `path` (which may itself be reached through links: it is the caller's), or
        /// returns `nil` when it does not exist.
        public init?(_ path: String, plugin: String? = nil) throws(CoreError) {
            let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if fd < 0 {
                let e = errno
                if e == ENOENT { return nil }
                throw ioFailure("open the directory \(path)", SystemCallError("open", errno: e), plugin: plugin)
            }
            descriptor = OwnedDescriptor(adopting: fd)
            self.path = path
        }

        /// The names of the entries in this directory (not `.` and `..`), or `nil` when it cannot
        /// be listed: lets a caller that probes for many optional files skip the absent ones.
        public func entryNames() -> Set<String>? {
            Directory.names(ofOpen: descriptor.rawValue).map(Set.init)
        }

        /// The bytes of `relativePath` inside this directory, following no symbolic link on the
        /// way, or `nil` when it (or a directory on the way) does not exist.
        public func readIfPresent(
            relativePath: String, cap: Int, what: String, plugin: String? = nil
        ) throws(CoreError) -> [UInt8]? {
            let components = relativePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            let display = path + "/" + relativePath
            // The descriptor the next component is opened from: this directory's (borrowed, not
            // closed here) or one opened on the way (closed when the walk moves past it).
            var dirfd = descriptor.rawValue
            var ownsDirfd = false
            defer { if ownsDirfd { close(dirfd) } }
            for (index, component) in components.enumerated() {
                let last = index == components.count - 1
                let flags =
                    last
                    ? (O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
                    : (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                let fd = openat(dirfd, component, flags)
                if fd < 0 {
                    let e = errno
                    if e == ENOENT { return nil }
                    if e == ELOOP || e == ENOTDIR {
                        let prefix = components[...index].joined(separator: "/")
                        // Name what is really there (O_DIRECTORY|O_NOFOLLOW reports a link as ENOTDIR).
                        var st = stat()
                        let kind =
                            fstatat(dirfd, component, &st, AT_SYMLINK_NOFOLLOW) == 0
                            ? "a \(fileKind(st.st_mode))" : (e == ELOOP ? "a symbolic link" : "not a directory")
                        throw CoreError(
                            code: .notRegularFile, plugin: plugin,
                            message: (last
                                ? "the \(what) \(display) is \(kind)"
                                : "the \(what) \(display) goes through \(path)/\(prefix), which is \(kind)")
                                + "; Vigil follows no symbolic links inside a plugin directory — replace it with the "
                                + "real " + (last ? "file" : "directory"))
                    }
                    throw ioFailure("open the \(what) \(display)", SystemCallError("openat", errno: e), plugin: plugin)
                }
                if last {
                    defer { close(fd) }
                    return try read(fd: fd, path: display, cap: cap, what: what, plugin: plugin)
                }
                if ownsDirfd { close(dirfd) }
                dirfd = fd
                ownsDirfd = true
            }
            return nil
        }
    }

    /// Reads from an open descriptor after checking that it is a regular file within `cap`.
    package static func read(
        fd: Int32, path: String, cap: Int, what: String, plugin: String?, remedy: String? = nil
    ) throws(CoreError) -> [UInt8] {
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let failure = SystemCallError.current("fstat")  // before the message's interpolation runs
            throw ioFailure("stat the \(what) \(path)", failure, plugin: plugin)
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw CoreError(
                code: .notRegularFile, plugin: plugin,
                message: "the \(what) \(path) is a \(fileKind(st.st_mode)), not a regular file — "
                    + (remedy ?? "replace it with a regular file"))
        }
        // Back to blocking reads now that we know it is a regular file.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        if Int(st.st_size) > cap {
            throw tooLarge(path: path, size: Int(st.st_size), cap: cap, what: what, plugin: plugin, remedy: remedy)
        }
        // Sized for the file as it is (plus one byte, to see it grow), not for the cap: a 4 MiB
        // cap must not cost 4 MiB of zeroed memory for a file of 300 bytes.
        let bytes: [UInt8]
        do {
            bytes = try FileIO.read(fd, limit: cap + 1, expected: Int(st.st_size) + 1)
        } catch {
            throw ioFailure("read the \(what) \(path)", error, plugin: plugin)
        }
        if bytes.count > cap {
            throw tooLarge(path: path, size: nil, cap: cap, what: what, plugin: plugin, remedy: remedy)
        }
        return bytes
    }

    /// An `.ioFailure` that says what could not be done (`"open the manifest PATH"`), with the
    /// failed call as its cause.
    private static func ioFailure(_ what: String, _ failure: SystemCallError, plugin: String?) -> CoreError {
        CoreError(
            code: .ioFailure, plugin: plugin, message: "cannot \(what): \(failure.reason)", cause: ErrorCause(failure))
    }

    /// `size` is the file's from `fstat`; a file that grew past `cap` while it was read has `size: nil`.
    private static func tooLarge(
        path: String, size: Int?, cap: Int, what: String, plugin: String?, remedy: String?
    ) -> CoreError {
        let problem =
            size.map { "is \($0) bytes, larger than its limit (\(cap) bytes)" }
            ?? "grew past its limit (\(cap) bytes) while it was read"
        return CoreError(
            code: .fileTooLarge, plugin: plugin,
            message: "the \(what) \(path) \(problem); this is not a file Vigil accepts — "
                + (remedy ?? "check that the right file is in place"))
    }

    package static func fileKind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "directory"
        case S_IFIFO: "FIFO"
        case S_IFLNK: "symbolic link"
        case S_IFCHR: "character device"
        case S_IFBLK: "block device"
        case S_IFSOCK: "socket"
        case S_IFREG: "regular file"
        default: "special file"
        }
    }
}

/// Small helpers over libc.
package enum SystemCall {
    /// ``FileLock/withExclusiveLock(on:flags:mode:failure:_:)`` with the core's errors; `what`
    /// names the lock in them ("the lock file").
    package static func withExclusiveLock<T>(
        on path: String, flags: Int32, what: String, _ body: () throws(CoreError) -> T
    ) throws(CoreError) -> T {
        try FileLock.withExclusiveLock(
            on: path, flags: flags,
            failure: {
                CoreError.io(
                    "\($0.call == "open" ? "open" : "lock") \(what)", path: path, errno: $0.number, call: $0.call)
            },
            body)
    }

    /// `lstat`'s file type bits, or `nil` when the path does not exist.
    package static func fileType(_ path: String) -> mode_t? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return st.st_mode & S_IFMT
    }

    /// True when `path` is a directory (following symbolic links).
    package static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0 else { return false }
        return (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// The running executable's path (`/proc/self/exe`), or `fallback` when it cannot be read.
    package static func executablePath(fallback: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return fallback }
        return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
