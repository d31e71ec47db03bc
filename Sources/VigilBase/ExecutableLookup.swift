#if canImport(Glibc)
import Glibc
#endif

/// The one answer to "which program would this command run": what `vigil check`, the host's
/// requirement probe and the supervisor's spawner all ask, so a check and a start never disagree.
///
/// The rule:
/// - **A program** is a regular file (after following symbolic links) that this process may
///   execute (`faccessat` with `AT_EACCESS`: the effective ids, as the kernel checks them at exec).
///   A directory, FIFO, socket or device is not one, whatever its mode bits.
/// - **A command with a `/`** is a path. An absolute path is taken as it is. A relative one
///   (`./signerd`, `bin/signerd`) is resolved against the directory the program starts in (a
///   worker's `working_directory`, or the working directory of the `vigil run` that names it); with
///   no such directory it is refused, because it would then depend on whichever directory the host
///   happens to run in — a different one for `vigil check` and for a host under systemd.
/// - **A bare name** is looked up in the search path (a worker's `PATH`;
///   ``defaultSearchPath`` when it has none), in order; the first program of that name wins and
///   anything else of that name (a directory, a FIFO, a file this user may not execute) is passed
///   over. Only absolute directories are searched: an empty entry or a relative one would name
///   the current directory, which again differs between the check and the start.
public enum ExecutableLookup {
    /// The search path when none is set (the one execvp and systemd use for a missing `PATH`).
    public static let defaultSearchPath = "/usr/local/bin:/usr/bin:/bin"

    /// Why a command names no program; each case carries what the caller needs for its message.
    public enum Refusal: Error, Sendable, Hashable {
        /// `path` (the command, resolved when it was relative) does not exist.
        case missing(path: String)
        /// `path` is a directory.
        case directory(path: String)
        /// `path` exists but is not a regular file (a FIFO, socket or device).
        case notRegularFile(path: String)
        /// `path` is a regular file this process may not execute.
        case notExecutable(path: String)
        /// The command is a relative path and there is no directory to resolve it against.
        case relativeWithoutDirectory
        /// A bare name that is no program in any of `searched` (the absolute directories tried).
        case notFound(searched: [String])
    }

    /// The program `command` runs: its absolute path (or the command itself when absolute), or why
    /// there is none.
    ///
    /// - Parameters:
    ///   - searchPath: the `PATH` value bare names are looked up in; `nil` for
    ///     ``defaultSearchPath``.
    ///   - directory: the absolute directory a relative path is resolved against, or `nil` when the
    ///     program has none (relative paths are then refused).
    public static func resolve(_ command: String, searchPath: String?, relativeTo directory: String?) -> Result<
        String, Refusal
    > {
        if command.contains("/") {
            let full: String
            if command.hasPrefix("/") {
                full = command
            } else if let directory, directory.hasPrefix("/") {
                full = directory.hasSuffix("/") ? directory + command : directory + "/" + command
            } else {
                return .failure(.relativeWithoutDirectory)
            }
            return classify(full).map { .failure($0) } ?? .success(full)
        }
        let searched = directories(in: searchPath ?? defaultSearchPath)
        for directory in searched where !command.isEmpty {
            let candidate = directory.hasSuffix("/") ? directory + command : directory + "/" + command
            if classify(candidate) == nil { return .success(candidate) }
        }
        return .failure(.notFound(searched: searched))
    }

    /// The directories of `searchPath` that are searched: its absolute entries, in order.
    public static func directories(in searchPath: String) -> [String] {
        searchPath.split(separator: ":", omittingEmptySubsequences: true).map(String.init).filter { $0.hasPrefix("/") }
    }

    /// True when `path` is a program by the rule above.
    public static func isProgram(_ path: String) -> Bool { classify(path) == nil }

    /// `nil` when `path` is a program, else why not.
    private static func classify(_ path: String) -> Refusal? {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing(path: path) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return .directory(path: path)
        default: return .notRegularFile(path: path)
        }
        guard faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0 else { return .notExecutable(path: path) }
        return nil
    }
}
