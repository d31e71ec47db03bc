import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real systemd-journald of the test's own, in a mount namespace of its own (`unshare -m`, a
/// tmpfs over /run), with one command whose standard output and error are journald's stream and
/// whose `JOURNAL_STREAM` names it, as systemd starts a service (Fixtures/private-journald.sh).
/// Needs root (a mount namespace), /lib/systemd/systemd-journald, systemd-cat and journalctl
/// (Debian's systemd package, scripts/install-deps.sh).
///
/// The command sends its native entries to /run/systemd/journal/socket like any client; journald
/// writes them to ``directory``, read back with `journalctl --directory` (``entries(_:)``).
public final class PrivateJournal: Sendable {
    /// Where journald keeps its files (its /run/log/journal).
    public let directory: String
    private let process: ChildProcess
    private let log: String

    /// Starts journald and `command` (an executable's path and its arguments) with `environment`.
    public init(running command: [String], environment: [String: String], in directory: TestDirectory) throws {
        self.directory = directory.path + "/journal"
        log = directory.path + "/private-journald.log"
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        process = try ChildProcess(
            "/usr/bin/unshare",
            [
                "--mount", "--propagation", "private", "/bin/sh", RuntimeFixtures.fixtureScript("private-journald.sh"),
                self.directory,
            ] + command,
            environment: environment, stdout: log, stderr: log)
    }

    /// `base` as a service under this journal sees it: no `JOURNAL_STREAM` of the test's own (the
    /// script sets the command's), and no D-Bus addresses (the namespace's /run hides the
    /// machine's system bus: sleep handling is off).
    public static func serviceEnvironment(_ base: [String: String]) -> [String: String] {
        var environment = base
        for name in ["JOURNAL_STREAM", "DBUS_SYSTEM_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS"] {
            environment.removeValue(forKey: name)
        }
        return environment
    }

    /// What the script and journald said (for a failure's message).
    public var output: String { (try? TextFile.read(log)) ?? "" }

    /// The journal's entries that match every `NAME=value` of `matches` (journalctl's matches),
    /// oldest first, each field's value as text (a field sent more than once: its values joined
    /// by a newline).
    public func entries(_ matches: [String]) async throws -> [[String: String]] {
        let r = try await RuntimeFixtures.run(
            "/usr/bin/journalctl", ["--directory", directory, "--output", "json", "--all", "--no-pager"] + matches,
            timeout: 10)
        guard r.status == 0 || r.stdout.isEmpty else {
            throw RuntimeFixtures.Failure("journalctl failed (\(r.status)): \(r.stderr)")
        }
        return try r.stdout.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw RuntimeFixtures.Failure("journalctl printed a line that is not an object: \(line)")
            }
            return object.mapValues(Self.text)
        }
    }

    /// ``entries(_:)`` once there is at least one, polled until `timeout` seconds passed;
    /// empty when none came.
    public func waitForEntries(_ matches: [String], timeout: Double = 15) async throws -> [[String: String]] {
        let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
        while true {
            let found = try await entries(matches)
            if !found.isEmpty || ContinuousClock.now >= deadline { return found }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Stops the command (SIGTERM, as systemd stops a service), then journald; the script's exit
    /// status, or nil when it did not end within `timeout` seconds (it is killed then).
    @discardableResult
    public func stop(timeout: Double = 15) async -> Int32? {
        process.signal(SIGTERM)
        if let status = await process.waitForExit(timeout: timeout) {
            return ChildProcess.exitCode(fromWaitStatus: status)
        }
        _ = process.terminate(grace: 1)
        return nil
    }

    /// A field's value as journalctl prints it in JSON: a string, an array of bytes (a value
    /// that is not valid text), or an array of either (a field sent more than once).
    private static func text(_ value: Any) -> String {
        if let string = value as? String { return string }
        if let bytes = value as? [Int] {
            return String(decoding: bytes.map { UInt8(truncatingIfNeeded: $0) }, as: UTF8.self)
        }
        if let list = value as? [Any] { return list.map(text).joined(separator: "\n") }
        return "\(value)"
    }
}
