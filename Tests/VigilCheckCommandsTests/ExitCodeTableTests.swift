import Foundation
import Testing
import VigilCheckCommands
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The one table of exit statuses (`ExitCodes`): docs/exit-codes.md and `vigil --help` are it,
/// and every command's refusals, run on the real `vigil`, exit as it says.
@Suite("exit-code table", .timeLimit(.minutes(2)))
struct ExitCodeTableTests {
    @Test("docs/exit-codes.md holds the table exactly; README links it; `vigil --help` prints every row")
    func documents() async throws {
        let doc = try TextFile.read(VigilExecutable.packageRoot + "/docs/exit-codes.md")
        #expect(doc.contains(ExitCodes.markdown), "regenerate the table of docs/exit-codes.md from ExitCodes.markdown")
        let readme = try TextFile.read(VigilExecutable.packageRoot + "/README.md")
        #expect(readme.contains("](docs/exit-codes.md)"))
        let help = try await VigilExecutable.run(["--help"], in: "/")
        #expect(help.status == 0)
        let flat = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for row in ExitCodes.table {
            let code = row.code < 0 ? "CMD's" : String(row.code)
            let name = row.name.map { " (\($0))" } ?? ""
            let words = "\(code)\(name) \(row.commands.filter { $0 != "`" }): " + row.meaning.filter { $0 != "`" }
            let expected = words.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(flat.contains(expected), "--help lacks the row for \(code)")
        }
    }

    /// A private project: its own runtime and state directories, the real first-party manifests.
    struct Sandbox {
        let dir: TestDirectory
        init() throws {
            dir = try TestDirectory("vigil-exit-codes")
            try FileManager.default.createDirectory(
                atPath: dir.path + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try dir.write("empty/vigil.toml", "plugins = []\n")
            try dir.write("untrusted/vigil.toml", "plugins = [\"supervisor\"]\n")
        }
        var environment: [String: String] { dir.cliEnvironment }
        func vigil(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> Int32 {
            let result = try await RuntimeFixtures.run(
                VigilExecutable.path, arguments, environment: environment.merging(extra) { _, new in new },
                timeout: 30)
            return result.status
        }
    }

    /// The statuses whose refusals need a sound server, espeak-ng, a full journal or a hidden
    /// /proc: the suites named here run them against the same table (they use the same numbers).
    static let probedElsewhere: [Int32: String] = [
        ExitCodes.busy: "ControlChannelLoadTests (a host with every control connection in use)",
        ExitCodes.dataError: "AnnounceCommandTests (an invalid [announce] table, a file that is not audio)",
        ExitCodes.unavailable: "AnnounceCommandTests, AnnounceHardeningTests (no or an unanswering sound server)",
        ExitCodes.software: "AnnounceCommandTests (espeak-ng failing)",
        ExitCodes.osError: "HostileInputReviewTests.noProcFailsClosed (no /proc)",
        ExitCodes.noDescriptors: "SupervisorLimitTests.startUpUnderEveryLimit (every descriptor limit from 3 up)",
        ExitCodes.ioError: "AnnounceHardeningTests (an unwritable journal)",
        ExitCodes.repositoryNotConfigured: "RepositoryCommandTests.refusals (no [repository])",
        ExitCodes.repositoryUnreachable: "RepositoryCommandTests.refusals (no mirror answers)",
        ExitCodes.repositoryStale: "RepositoryCommandTests (expired snapshot and timestamp, python-tuf repositories)",
        ExitCodes.repositoryKeyMismatch: "RepositoryCommandTests.refusals (a delegation to another key)",
        ExitCodes.repositoryRollback: "RepositoryCommandTests.refusals (an older version)",
        ExitCodes.repositoryUnknownPlugin: "RepositoryCommandTests.refusals (a plugin the repository lacks)",
    ]

    @Test("each command's refusals exit as the table says")
    func refusals() async throws {
        let s = try Sandbox()
        defer { s.dir.remove() }
        let empty = s.dir.path + "/empty/vigil.toml"
        let untrusted = s.dir.path + "/untrusted/vigil.toml"
        var probed: Set<Int32> = []
        func expect(_ code: Int32, _ arguments: [String], environment: [String: String] = [:]) async throws {
            let status = try await s.vigil(arguments, environment: environment)
            #expect(status == code, "vigil \(arguments.joined(separator: " ")) exited \(status), not \(code)")
            #expect(ExitCodes.table.contains { $0.code == code }, "\(code) is not in the table")
            probed.insert(code)
        }
        // 0 and 1.
        try await expect(ExitCodes.success, ["check", "--config", empty])
        try await expect(ExitCodes.failure, ["check", "--config", untrusted])
        try await expect(ExitCodes.failure, ["status"])  // no host runs
        try await expect(ExitCodes.failure, ["plugin", "verify", s.dir.path + "/no-such-plugin"])
        // 64: a usage error, whatever the command.
        for command in [
            ["check"], ["up"], ["run"], ["status"], ["announce"], ["soundscape"], ["plugin", "list"],
            ["plugin", "trust"], ["plugin", "sign"], ["plugin", "keygen"],
        ] {
            try await expect(ExitCodes.usage, command + ["--no-such-option"])
        }
        try await expect(ExitCodes.usage, ["run"])  // no command after `--`
        // 78: a configuration that cannot work, wherever it is found.
        try await expect(ExitCodes.configuration, ["up", "--config", s.dir.path + "/none.toml"])
        try await expect(ExitCodes.configuration, ["up", "--config", untrusted])
        try await expect(ExitCodes.configuration, ["run", "--config", s.dir.path + "/none.toml", "--", "true"])
        try await expect(ExitCodes.configuration, ["run", "--config", untrusted, "--", "true"])
        // 127 and CMD's own status.
        try await expect(ExitCodes.commandNotFound, ["run", "--", s.dir.path + "/no-such-command"])
        let cmd = try #require(ExitCodes.table.first { $0.code < 0 })
        #expect(cmd.commands == "`run`")
        #expect(try await s.vigil(["run", "--", "/bin/sh", "-c", "exit 7"]) == 7)
        // 3: no host serves the soundscape.
        try await expect(ExitCodes.noSoundscape, ["soundscape", "--socket", s.dir.path + "/no-such.sock"])
        // 73: the runtime directory cannot be created (a file is in its way).
        try s.dir.write("blocked/vigil", "not a directory\n")
        try await expect(
            ExitCodes.cannotCreate, ["up", "--config", empty], environment: ["XDG_RUNTIME_DIR": s.dir.path + "/blocked"]
        )
        // 77: the runtime directory is writable by others.
        try FileManager.default.createDirectory(
            atPath: s.dir.path + "/open/vigil", withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o777])
        chmod(s.dir.path + "/open/vigil", 0o777)
        try await expect(ExitCodes.noPermission, ["status"], environment: ["XDG_RUNTIME_DIR": s.dir.path + "/open"])

        // 75 and 2 need a host that runs: `vigil up` on the empty vigil.toml.
        let up = try ChildProcess(
            VigilExecutable.path, ["up", "--config", empty], environment: s.environment,
            stdout: s.dir.path + "/up.out", stderr: s.dir.path + "/up.err")
        defer { up.terminate(grace: 2) }
        let statusFile = s.dir.path + "/run/vigil/host-\(up.pid).json"
        #expect(await RuntimeFixtures.waitUntil(timeout: 20) { FileManager.default.fileExists(atPath: statusFile) })
        try await expect(ExitCodes.temporaryFailure, ["up", "--config", empty])
        try await expect(ExitCodes.temporaryFailure, ["run", "--config", empty, "--", "true"])
        // The host holds its lock but its status file is gone: `status` cannot tell what it does.
        unlink(statusFile)
        try await expect(ExitCodes.unknownState, ["status"])
        #expect(ChildProcess.exitCode(fromWaitStatus: up.terminate(grace: 5)) == 0)

        for row in ExitCodes.table where row.code >= 0 {
            #expect(
                probed.contains(row.code) || Self.probedElsewhere[row.code] != nil,
                "no refusal of the table's \(row.code) is run")
        }
    }
}
