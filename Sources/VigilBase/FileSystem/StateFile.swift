import Glibc

/// The one check the state files Vigil acts on go through (the duck journal and its lock,
/// soundscape preferences, rollback records, and the runtime files: the hosts' status files,
/// their `vigil.toml` locks and the runtime directory above them): sshd's StrictModes, applied to the file, its
/// directory and the directories above it.
///
/// - The file is opened with `O_NOFOLLOW|O_NONBLOCK` and checked on the open descriptor: a
///   regular file, owned by the current user, not writable by group or others.
/// - Its directory and each directory above it are checked with `lstat`, from the file upwards:
///   no symbolic link, owned by the current user or root, not writable by group or others (a
///   root-owned directory with the sticky bit, such as `/tmp`, is allowed). The walk ends at the
///   first directory root owns (for root itself, at `/`): above it only root could change
///   anything. A symbolic link root owns above the user's own directories (`/home` on some
///   systems) ends the walk like a root-owned directory.
///
/// A refusal is ``CoreError/Code/stateUnsafe``; its message names the path, what is wrong and the
/// command that fixes it.
public enum StateFile {
    /// The largest state file read (a journal, preferences or rollback record is a few kB).
    public static let defaultCap = 4 << 20

    /// Creates `directory` (0700, with its missing parents) and checks it and the directories
    /// above it; `what` names the files it holds in a refusal ("the duck journal").
    public static func prepareDirectory(_ directory: String, holding what: String) throws(CoreError) {
        if let failure = Directory.create(directory, mode: 0o700) {
            throw CoreError(
                code: .ioFailure,
                message: "cannot create the directory \(failure.path) for \(what): \(failure.error.reason) — check "
                    + "the permissions of its parent",
                cause: ErrorCause(failure.error))
        }
        try checkDirectory(directory, holding: what)
    }

    /// Checks `directory` and the directories above it (see ``StateFile``); a missing directory
    /// passes (nothing in it can be read).
    public static func checkDirectory(_ directory: String, holding what: String) throws(CoreError) {
        let me = geteuid()
        var path = Path.normalized(directory)
        var first = true
        while true {
            var st = stat()
            if lstat(path, &st) != 0 {
                let e = errno
                if e == ENOENT && first { return }
                throw CoreError.io("inspect the directory", path: path, errno: e, call: "lstat")
            }
            let owner = st.st_uid
            let kind = st.st_mode & S_IFMT
            if kind == S_IFLNK {
                // A link root placed above the user's own directories is the system's layout.
                if owner == 0 && me != 0 && !first { return }
                throw unsafe(
                    path, what: what, first: first,
                    "is a symbolic link; Vigil follows no link to its state, which another program could point "
                        + "elsewhere — replace it with a real directory (`rm \(path) && mkdir -m 700 \(path)`)")
            }
            guard kind == S_IFDIR else {
                throw unsafe(path, what: what, first: first, "is not a directory — move it away")
            }
            if owner != me && owner != 0 {
                throw unsafe(
                    path, what: what, first: first,
                    "is owned by uid \(owner), not by you (uid \(me)) or root, so that user could replace what "
                        + "Vigil reads there — use a directory of your own (set XDG_STATE_HOME), or `chown \(me) \(path)`"
                )
            }
            let sticky = owner == 0 && st.st_mode & S_ISVTX != 0
            if st.st_mode & 0o022 != 0 && !sticky {
                throw unsafe(
                    path, what: what, first: first,
                    "is writable by group or others (mode \(String(st.st_mode & 0o7777, radix: 8))), so they could "
                        + "replace what Vigil reads there — `chmod go-w \(path)`")
            }
            let parent = Path.directory(of: path)
            if parent == path || (owner == 0 && me != 0) { return }
            path = parent
            first = false
        }
    }

    /// Checks the open descriptor `fd` of the state file `path`: a regular file owned by the
    /// current user that group and others cannot write.
    public static func checkFile(fd: Int32, path: String, what: String) throws(CoreError) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CoreError.io("inspect", path: path, errno: errno, call: "fstat") }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw CoreError(
                code: .stateUnsafe,
                message: "\(what) \(path) is a \(SafeFile.fileKind(st.st_mode)), not a regular file; Vigil does not "
                    + "act on it — move it away")
        }
        let me = geteuid()
        if st.st_uid != me {
            throw CoreError(
                code: .stateUnsafe,
                message: "\(what) \(path) is owned by uid \(st.st_uid), not by you (uid \(me)); another user may have "
                    + "planted it, so Vigil does not act on it — inspect it, then delete it")
        }
        if st.st_mode & 0o022 != 0 {
            throw CoreError(
                code: .stateUnsafe,
                message: "\(what) \(path) is writable by group or others (mode "
                    + "\(String(st.st_mode & 0o7777, radix: 8))), so they could have changed it; Vigil does not act "
                    + "on it — inspect it, then `chmod go-w \(path)` (or delete it)")
        }
    }

    /// Opens the state file `path` (`flags` are added to `O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK`;
    /// `O_CREAT` creates it with `mode`) after checking its directory, and checks the file on the
    /// descriptor. Returns `nil` when it does not exist (and `O_CREAT` is not given). The caller
    /// owns the descriptor.
    public static func open(
        _ path: String, flags: Int32 = O_RDONLY, mode: mode_t = 0o600, what: String
    ) throws(CoreError) -> Int32? {
        try checkDirectory(Path.directory(of: path), holding: what)
        let fd = Glibc.open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode)
        if fd < 0 {
            let e = errno
            if e == ENOENT { return nil }
            if e == ELOOP {
                throw CoreError(
                    code: .stateUnsafe,
                    message: "\(what) \(path) is a symbolic link; Vigil follows no link to its state — delete the "
                        + "link (`rm \(path)`)")
            }
            throw CoreError.io("open \(what)", path: path, errno: e, call: "open")
        }
        do {
            try checkFile(fd: fd, path: path, what: what)
        } catch {
            close(fd)
            throw error
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// The bytes of the state file `path` after the checks (see ``StateFile``), or `nil` when
    /// it does not exist; `what` names it in errors ("the duck journal").
    public static func readIfPresent(_ path: String, cap: Int = defaultCap, what: String) throws(CoreError)
        -> [UInt8]?
    {
        guard let fd = try open(path, what: what) else { return nil }
        defer { close(fd) }
        // SafeFile's messages say "the \(what)" themselves.
        let noun = what.hasPrefix("the ") ? String(what.dropFirst(4)) : what
        return try SafeFile.read(fd: fd, path: path, cap: cap, what: noun, plugin: nil)
    }

    /// Replaces the state file `path` atomically (0600, fsynced with its directory unless
    /// `durable` is false) after checking its directory (created 0700 if missing).
    public static func write(_ bytes: [UInt8], to path: String, what: String, durable: Bool = true) throws(CoreError) {
        try prepareDirectory(Path.directory(of: path), holding: what)
        try AtomicFile.write(bytes, to: path, mode: 0o600, durable: durable)
    }

    /// Removes the state file `path` and makes the removal durable (the directory is fsynced).
    public static func remove(_ path: String, what: String) throws(CoreError) {
        if unlink(path) != 0 {
            let e = errno  // before the message's interpolation runs
            if e != ENOENT { throw CoreError.io("remove \(what)", path: path, errno: e, call: "unlink") }
        }
        AtomicFile.syncDirectory(Path.directory(of: path))
    }

    private static func unsafe(_ path: String, what: String, first: Bool, _ problem: String) -> CoreError {
        CoreError(
            code: .stateUnsafe,
            message: (first
                ? "the directory \(path), which holds \(what), " : "\(path), above the directory of \(what), ")
                + problem)
    }
}
