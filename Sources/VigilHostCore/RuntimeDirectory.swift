import VigilBase
import VigilCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The per-user directory where running hosts publish their status: `$XDG_RUNTIME_DIR/vigil/`.
///
/// When `XDG_RUNTIME_DIR` is unset (a plain `su`, some containers), Vigil falls back to
/// `/tmp/vigil-UID/`. Either way the directory must be a real directory (not a symlink) owned by
/// this user with mode 0700; Vigil creates it so and refuses one that is not, so other users can
/// neither read a host's status nor plant files for `vigil status` to read. The directories above
/// it then go through the core's ``StateFile`` check, as every state file Vigil acts on does (no
/// symbolic link, owned by this user or root, not writable by group or others), and so do the
/// status and lock files in it.
public struct RuntimeDirectory: Sendable, Hashable {
    /// The directory's path.
    public let path: String
    /// True when `XDG_RUNTIME_DIR` was unset (or not absolute) and the `/tmp/vigil-UID`
    /// fallback is used.
    public let isFallback: Bool
    /// Why the fallback is used, in words for the user (nil when it is not).
    public let fallbackReason: String?

    /// Resolves the directory for `environment` (default: this process's).
    ///
    /// - Parameter create: create the directory (0700) when it is missing.
    /// - Returns: `nil` when the directory does not exist and `create` is false.
    /// - Throws: ``VigilError/Code/runtimeDirectory`` when it cannot be created or is unsafe.
    public static func resolve(
        environment: [String: String], create: Bool
    ) throws(VigilError) -> RuntimeDirectory? {
        let directory: RuntimeDirectory
        let fallback = "/tmp/vigil-\(getuid())"
        if let base = environment["XDG_RUNTIME_DIR"], base.hasPrefix("/") {
            directory = RuntimeDirectory(path: base + "/vigil", isFallback: false, fallbackReason: nil)
        } else if let base = environment["XDG_RUNTIME_DIR"], !base.isEmpty {
            directory = RuntimeDirectory(
                path: fallback, isFallback: true,
                fallbackReason: "XDG_RUNTIME_DIR=\"\(base)\" is not an absolute path and is ignored; using \(fallback)")
        } else {
            directory = RuntimeDirectory(
                path: fallback, isFallback: true, fallbackReason: "XDG_RUNTIME_DIR is not set; using \(fallback)")
        }
        // Advice for a directory that is not ours: the fallback in /tmp may belong to someone
        // else, who alone (or root) can remove it.
        let elsewhere =
            directory.isFallback
            ? "set XDG_RUNTIME_DIR to an absolute path of a directory you own (usually /run/user/\(getuid())), "
                + "or ask root to remove \(directory.path)"
            : "remove it"
        if create, mkdir(directory.path, 0o700) != 0 {
            let failure = SystemCallError.current("mkdir")  // read once, right at the call
            if failure.number != EEXIST {
                throw VigilError(
                    code: .runtimeDirectory,
                    message: "cannot create the runtime directory \(directory.path): \(failure.reason) — "
                        + "check that XDG_RUNTIME_DIR points at a writable directory you own")
            }
        }
        var info = stat()
        guard lstat(directory.path, &info) == 0 else {
            let failure = SystemCallError.current("lstat")  // read once, right at the call
            if failure.number == ENOENT, !create { return nil }
            throw VigilError(
                code: .runtimeDirectory,
                message: "cannot inspect the runtime directory \(directory.path): \(failure.reason)")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw VigilError(
                code: .runtimeDirectory,
                message: "\(directory.path) is not a directory (a symlink or file?) — \(elsewhere); "
                    + "Vigil recreates it with mode 0700")
        }
        guard info.st_uid == getuid() else {
            throw VigilError(
                code: .runtimeDirectory,
                message: "\(directory.path) belongs to uid \(info.st_uid), not to you (uid \(getuid())) — "
                    + "another user may have planted it; "
                    + (directory.isFallback ? elsewhere : "remove it, or set XDG_RUNTIME_DIR to a directory you own"))
        }
        guard info.st_mode & 0o077 == 0 else {
            throw VigilError(
                code: .runtimeDirectory,
                message: "\(directory.path) is readable or writable by other users (mode "
                    + String(info.st_mode & 0o777, radix: 8) + ") — run `chmod 700 \(directory.path)`")
        }
        do {
            try StateFile.checkDirectory(directory.path, holding: "the status files of running hosts")
        } catch {
            throw VigilError(code: .runtimeDirectory, message: error.message, cause: error)
        }
        return directory
    }

    /// The status file of the host with process id `pid`.
    public func statusFile(pid: Int32) -> String { "\(path)/host-\(pid).json" }

    /// The control socket of the host with process id `pid` (`vigil reload` talks to it).
    public func controlSocket(pid: Int32) -> String { "\(path)/control-\(pid).sock" }
}
