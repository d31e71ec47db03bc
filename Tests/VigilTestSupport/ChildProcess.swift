import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, for fixtures and tests.
///
/// Foundation's `Process` can hang in `waitUntilExit()` when called from Swift concurrency on
/// Linux, so fixtures use this small wrapper: output goes to files (no pipe deadlocks), waiting
/// is `waitpid`, and signals are sent by pid.
public final class ChildProcess: @unchecked Sendable {
    /// The child's process id.
    public let pid: pid_t
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Starts `executable` with `arguments` and `environment` (default: this process's).
    /// `stdout`/`stderr` name files to write to (default: /dev/null); `stdin` a file to read
    /// (default: /dev/null).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        stdout: String = "/dev/null", stderr: String = "/dev/null", stdin: String = "/dev/null"
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in env { free(p) } }
        // Children start with default signal handling and nothing blocked, whatever the thread
        // that spawns them has (test runners block or ignore some signals).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, &attributes, argv, env)
        guard rc == 0 else { throw FixtureError("cannot start \(executable): \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// Sends `signal` to the child (if it has not been reaped yet).
    public func signal(_ signal: Int32) {
        lock.withLock {
            if exitStatus == nil { _ = Glibc.kill(pid, signal) }
        }
    }

    /// Waits for the child to end and returns its wait status (blocking).
    @discardableResult
    public func wait() -> Int32 {
        lock.withLock {
            if let exitStatus { return exitStatus }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            exitStatus = status
            return status
        }
    }

    /// True while the child has not exited.
    public var isRunning: Bool {
        lock.withLock {
            if exitStatus != nil { return false }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                exitStatus = status
                return false
            }
            return true
        }
    }

    /// Runs a program to completion and returns its standard output; throws if it exits non-zero.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws
        -> String
    {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "vigil-run-\(UUID().uuidString.prefix(8))")
        let out = base.path + ".out"
        let err = base.path + ".err"
        defer {
            unlink(out)
            unlink(err)
        }
        let child = try ChildProcess(executable, arguments, environment: environment, stdout: out, stderr: err)
        let status = child.wait()
        let output = (try? TextFile.read(out)) ?? ""
        guard status == 0 else {
            let message = (try? TextFile.read(err)) ?? ""
            throw FixtureError(
                "\(executable) \(arguments.joined(separator: " ")) failed (wait status \(status)): \(message)")
        }
        return output
    }
}
