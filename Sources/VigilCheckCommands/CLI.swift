import ArgumentParser
import FoundationEssentials
import Glibc
import VigilBase
import VigilCore
import VigilCrypto
import VigilPlugin

/// Output and configuration helpers shared by the `vigil plugin` subcommands.
package enum CLI {
    /// The process environment, read once here; the core and the host only get it injected.
    package static let environment = HostEnvironment.current

    /// Prints text for a terminal on standard output: every line goes through
    /// ``Sanitizer/display(_:)``, so text from manifests, status files or other programs cannot
    /// move the cursor, recolour the terminal or reorder what is shown. Every plain-text line a
    /// command prints goes through here, ``sayLine(_:)``, ``printError(_:)`` or
    /// ``printErrorLine(_:)``; JSON is printed exactly instead. Newlines are kept, for Vigil's own
    /// multi-line text: a field that could hold one is escaped on its own (`Sanitizer.display`)
    /// where it is interpolated, or the line goes through ``sayLine(_:)``.
    package static func say(_ text: String) {
        print(Sanitizer.display(text, keepingNewlines: true))
    }

    /// Prints one line on standard output with every control character in it shown as `?`,
    /// newlines too: the way to print a line that carries text from manifests, status files,
    /// other programs or the command line, so that no such text can start a line of its own.
    package static func sayLine(_ line: String) {
        print(Sanitizer.display(line))
    }

    /// Prints one JSON document on standard output (exact text; JSON escapes what it must).
    package static func printJSON(_ value: JSONValue) {
        print(String(decoding: value.serialized(), as: UTF8.self), terminator: "")
        fflush(nil)
    }

    /// A core error as JSON (`null` for none): code, plugin, location and message, from its fields.
    package static func json(_ error: CoreError?) -> JSONValue {
        guard let error else { return .null }
        return .object([
            ("code", .string(error.code.description)),
            ("plugin", error.plugin.map(JSONValue.string) ?? .null),
            (
                "location",
                error.location.map {
                    .object([
                        ("file", .string($0.path)), ("line", .number(String($0.line))),
                        ("column", .number(String($0.column))),
                    ])
                } ?? .null
            ),
            ("message", .string(error.message)),
        ])
    }

    /// Writes `text` (sanitized like ``say(_:)``) and a newline to standard error, after flushing
    /// standard output so that piped output keeps the order in which it was produced.
    package static func printError(_ text: String) {
        fflush(nil)
        writeStandardError(Sanitizer.display(text, keepingNewlines: true) + "\n")
    }

    /// Writes one line to standard error like ``printError(_:)``, escaped like ``sayLine(_:)``
    /// (newlines too): for an error or warning line built from untrusted text.
    package static func printErrorLine(_ line: String) {
        fflush(nil)
        writeStandardError(Sanitizer.display(line) + "\n")
    }

    /// Writes `text` as it is to standard error (up to a write error).
    package static func writeStandardError(_ text: String) {
        try? FileIO.writeAll(2, Array(text.utf8))
    }

    /// Prints a core error the way every command reports a refusal, and returns the exit code 1.
    /// A message is one line: the paths, names and file text it quotes cannot start another.
    package static func fail(_ error: CoreError) -> ExitCode {
        printErrorLine("error: \(error.description)")
        return ExitCode.failure
    }

    /// Runs `body`, turning a ``CoreError`` into its message on standard error and exit code 1.
    package static func run(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as CoreError {
            throw fail(error)
        }
    }

    /// The exit status when the process cannot read its own command line (EX_OSERR).
    package static let argumentsUnreadableExit = ExitCodes.osError

    /// Exits 71 with the cause and the fix when the process cannot read its own arguments.
    ///
    /// Swift reads the command line from `/proc/self/cmdline` on Linux: without `/proc` (a
    /// chroot or container that does not mount it) every command would see no arguments at all,
    /// print the top-level help and exit 0 — `vigil check --json` on a broken configuration would
    /// "pass" and `vigil up` would start nothing and succeed. Since Linux 5.18 every process has
    /// at least `argv[0]` (an empty one when started with none), so an empty list means the
    /// arguments were not read, never that there were none.
    package static func exitUnlessArgumentsReadable(_ arguments: [String] = CommandLine.arguments) {
        guard arguments.isEmpty else { return }
        let path = "/proc/self/cmdline"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        let cause = fd < 0 ? SystemCallError.current("open").reason : "it reads as empty"
        if fd >= 0 { close(fd) }
        writeStandardError(
            "error: vigil cannot read its own command line (\(path): \(cause)), so it cannot tell which command "
                + "to run and runs none — mount /proc (`mount -t proc proc /proc`; in a container or chroot, give "
                + "it /proc) and run the command again\n")
        exit(argumentsUnreadableExit)
    }

    /// The configuration file to use: `--config`, else the nearest vigil.toml upward.
    package static func configPath(_ option: ConfigOption) throws(CoreError) -> String? {
        if let path = option.config { return path }
        return try HostConfiguration.find(startingAt: environment.workingDirectory, environment: environment)
    }

    /// `path` (a command-line argument) as an absolute path, relative to the working directory.
    package static func absolute(_ path: String) -> String {
        Path.absolute(path, relativeTo: environment.workingDirectory)
    }

    /// Loads the configuration if there is one; an explicit `--config` must exist.
    package static func loadConfiguration(_ option: ConfigOption) throws(CoreError) -> HostConfiguration? {
        guard let path = try configPath(option) else { return nil }
        return try HostConfiguration.load(path: path, environment: environment)
    }

    /// Parses a `--fingerprint` value, or throws a usage error.
    package static func parseFingerprint(_ text: String) throws -> Fingerprint {
        do {
            return try Fingerprint(parsing: text)
        } catch {
            throw ValidationError("--fingerprint: " + Sanitizer.display("\(error)"))
        }
    }

    /// Validates a plugin name argument, or throws a usage error.
    package static func validateName(_ name: String, what: String = "NAME") throws {
        if let problem = PluginName.problem(name) { throw ValidationError("\(what): \(problem)") }
    }

    /// True when standard input and output are terminals.
    package static var isInteractive: Bool { isatty(0) == 1 && isatty(1) == 1 }

    /// Asks a yes/no question on the terminal; only "y" or "yes" is a yes.
    package static func confirm(_ question: String) -> Bool {
        print(question + " [y/N] ", terminator: "")
        fflush(nil)
        guard let answer = readLine() else { return false }
        let a = answer.trimmingCharacters(in: " \t").lowercased()
        return a == "y" || a == "yes"
    }
}
