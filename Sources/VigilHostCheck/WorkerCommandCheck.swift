import FoundationEssentials
public import VigilPlugin
import VigilSupervisorSettings

/// Checks that every worker's `command` can be started on this machine, before the host runs:
/// what `vigil check` reports, so that a missing program is found at check and build time rather
/// than when the supervisor fails to start it.
///
/// The rule is the supervisor's own, ``ExecutableLookup``'s: a command with a `/` is a path
/// (absolute, or relative to the worker's `working_directory`; refused without one) that must be a
/// regular file this user may execute; a bare name must be one in an absolute directory of the
/// `PATH` the worker gets (its own `env.PATH`, else the host's).
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
    public static func problems(in settings: PluginSettings, hostEnvironment: [String: String]) -> [Problem] {
        SupervisorSettings.readableWorkers(in: settings).compactMap { index, worker in
            problem(
                command: worker.command, path: worker.environment["PATH"] ?? hostEnvironment["PATH"],
                relativeTo: worker.workingDirectory
            ).map { Problem(index: index, message: $0) }
        }
    }

    /// Why `command` cannot be started, or `nil` when it can: ``ExecutableLookup``'s answer, the
    /// one the supervisor's spawner acts on.
    static func problem(command: String, path: String?, relativeTo directory: String?) -> String? {
        let shown: String
        if command.hasPrefix("/") || !command.contains("/") {
            shown = "\"\(command)\""
        } else {
            shown = "\"\(command)\" (\(directory.map { $0 + "/" + command } ?? "relative"))"
        }
        switch ExecutableLookup.resolve(command, searchPath: path, relativeTo: directory) {
        case .success:
            return nil
        case .failure(.missing):
            return "command \(shown) does not exist — install the program there, or fix the path in command"
        case .failure(.directory):
            return "command \(shown) is a directory, not a program — name the executable inside it"
        case .failure(.notRegularFile):
            return "command \(shown) is not a regular file — name the program itself"
        case .failure(.notExecutable):
            return "command \(shown) is not executable — make it executable (chmod +x) or name the right file"
        case .failure(.relativeWithoutDirectory):
            return "command \(shown) is a relative path and the worker has no working_directory — give the "
                + "absolute path, or set working_directory (a relative command is resolved against it)"
        case .failure(.notFound(let searched)):
            return
                "command \"\(command)\" is not an executable in any PATH directory (\(searched.joined(separator: ":"))) "
                + "— install it, give its absolute path, or set PATH in the worker's env"
        }
    }
}
