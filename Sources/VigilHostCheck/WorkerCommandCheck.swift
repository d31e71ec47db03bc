import FoundationEssentials
public import VigilPlugin
import VigilSupervisorSettings

#if canImport(Glibc)
import Glibc
#endif

/// Checks that every worker's `command` can be started on this machine, before the host runs:
/// what `vigil check` reports, so that a missing program is found at check and build time rather
/// than when the supervisor fails to start it.
///
/// The rules are the supervisor's own: a command with a `/` is a path (absolute, or relative to
/// the worker's `working_directory`, else to the directory of `vigil.toml`, where the host normally
/// runs) that must be a regular, executable file; a bare name must be an executable file in one of
/// the `PATH` directories the worker gets (its own `env.PATH`, else the host's).
public enum WorkerCommandCheck {
    /// One worker whose command cannot be started.
    public struct Problem: Sendable, Hashable {
        /// The worker's index in `workers`.
        public let index: Int
        /// What is wrong and how to fix it.
        public let message: String
    }

    /// The problems with the commands of the workers in `settings` (the supervisor's settings as
    /// the host would use them, read by the supervisor's own reader, ``SupervisorSettings``).
    /// Entries that are not valid workers are skipped: the supervisor's settings validation
    /// reports those.
    public static func problems(
        in settings: PluginSettings, hostEnvironment: [String: String], configDirectory: String
    ) -> [Problem] {
        SupervisorSettings.readableWorkers(in: settings).compactMap { index, worker in
            problem(
                command: worker.command, path: worker.environment["PATH"] ?? hostEnvironment["PATH"],
                relativeTo: worker.workingDirectory ?? configDirectory
            ).map { Problem(index: index, message: $0) }
        }
    }

    /// Why `command` cannot be started, or `nil` when it can.
    static func problem(command: String, path: String?, relativeTo directory: String) -> String? {
        if command.contains("/") {
            let full = command.hasPrefix("/") ? command : directory + "/" + command
            let shown = command.hasPrefix("/") ? "\"\(command)\"" : "\"\(command)\" (\(full))"
            var st = stat()
            guard stat(full, &st) == 0 else {
                return "command \(shown) does not exist — install the program there, or fix the path in command"
            }
            if (st.st_mode & S_IFMT) == S_IFDIR {
                return "command \(shown) is a directory, not a program — name the executable inside it"
            }
            guard (st.st_mode & S_IFMT) == S_IFREG else {
                return "command \(shown) is not a regular file — name the program itself"
            }
            guard access(full, X_OK) == 0 else {
                return "command \(shown) is not executable — make it executable (chmod +x) or name the right file"
            }
            return nil
        }
        let directories = (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").filter { !$0.isEmpty }
        for directory in directories {
            let candidate = "\(directory)/\(command)"
            var st = stat()
            if stat(candidate, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, access(candidate, X_OK) == 0 {
                return nil
            }
        }
        return
            "command \"\(command)\" is not an executable in any PATH directory (\(directories.joined(separator: ":"))) "
            + "— install it, give its absolute path, or set PATH in the worker's env"
    }
}
