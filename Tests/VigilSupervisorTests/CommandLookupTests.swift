import Foundation
import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilHostCheck
@testable import VigilSupervisor
@testable import VigilSupervisorEngine

/// `vigil check` (``WorkerCommandCheck``), the requirement probe (`HostEnvironment.executablePath`)
/// and the supervisor starting the worker answer "which program is this command" with one lookup:
/// for each case where they used to disagree, the check passes exactly when the worker starts, and
/// the program that starts is the one the rule names. Serialized: a case writes executables while
/// another would fork, and a child forked between a write's open and close makes the exec of that
/// file fail with "Text file busy" (ETXTBSY).
@Suite("One PATH lookup: check and spawn agree", .serialized)
struct CommandLookupTests {
    /// A layout of files, a worker's `command` (and `working_directory`), a `PATH`, and the
    /// program that should run (relative to the test directory), or `nil` when none may.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var layout: @Sendable (TestDirectory) throws -> Void
        var command: String
        var workingDirectory: String?
        var path: String
        var runs: String?
        var testDescription: String { name }
    }

    static let program = "#!/bin/sh\n: > \"$0.ran\"\n"

    static let cases: [Case] = [
        Case(
            name: "a FIFO named like the command earlier in PATH",
            layout: { dir in
                try dir.makeDirectory("a")
                #expect(mkfifo(dir.url("a/tool"), 0o755) == 0)
                try dir.write("b/tool", program, mode: 0o755)
            }, command: "tool", path: "A:B", runs: "b/tool"),
        Case(
            name: "a directory named like the command earlier in PATH",
            layout: { dir in
                try dir.makeDirectory("a/tool")
                try dir.write("b/tool", program, mode: 0o755)
            }, command: "tool", path: "A:B", runs: "b/tool"),
        Case(
            name: "a non-executable regular file earlier in PATH",
            layout: { dir in
                try dir.write("a/tool", program, mode: 0o644)
                try dir.write("b/tool", program, mode: 0o755)
            }, command: "tool", path: "A:B", runs: "b/tool"),
        Case(
            name: "only a FIFO of that name in PATH",
            layout: { dir in
                try dir.makeDirectory("a")
                #expect(mkfifo(dir.url("a/tool"), 0o755) == 0)
            }, command: "tool", path: "A", runs: nil),
        Case(
            name: "a relative ./x path without a working_directory",
            layout: { dir in try dir.write("tool", program, mode: 0o755) }, command: "./tool", path: "B", runs: nil),
        Case(
            name: "a relative ./x path with a working_directory",
            layout: { dir in try dir.write("w/tool", program, mode: 0o755) }, command: "./tool", workingDirectory: "w",
            path: "B", runs: "w/tool"),
        Case(
            name: "a relative path with a working_directory that holds a directory of that name",
            layout: { dir in try dir.makeDirectory("w/bin/tool") }, command: "bin/tool", workingDirectory: "w",
            path: "B", runs: nil),
        Case(
            name: "empty PATH entries (never the current directory)",
            layout: { dir in
                try dir.write("w/tool", program, mode: 0o755)
                try dir.makeDirectory("b")
            }, command: "tool", workingDirectory: "w", path: "::B:", runs: nil),
        Case(
            name: "an empty PATH entry before the program's directory",
            layout: { dir in try dir.write("b/tool", program, mode: 0o755) }, command: "tool", path: ":B",
            runs: "b/tool"),
        Case(
            name: "a relative PATH entry (never resolved against any directory)",
            layout: { dir in try dir.write("w/b/tool", program, mode: 0o755) }, command: "tool", workingDirectory: "w",
            path: "b", runs: nil),
    ]

    @Test(arguments: cases)
    func checkAndSpawnAgree(_ c: Case) async throws {
        let dir = try TestDirectory("vigil-lookup")
        defer { dir.remove() }
        try c.layout(dir)
        let searchPath = c.path.replacingOccurrences(of: "A", with: dir.url("a")).replacingOccurrences(
            of: "B", with: dir.url("b"))
        var environment = isolatedEnvironment
        environment["PATH"] = searchPath
        var table: [String: SettingValue] = [
            "name": .string("w"), "command": .string(c.command), "restart": .string("never"),
        ]
        if let wd = c.workingDirectory { table["working_directory"] = .string(dir.url(wd)) }
        let settings = PluginSettings(pluginName: "supervisor", values: ["workers": .array([.table(table)])])

        // vigil check.
        let problems = WorkerCommandCheck.problems(in: settings, hostEnvironment: environment)
        // The supervisor, with the worker exactly as the plugin parses it.
        let spec = try #require(try SupervisorSettings(settings).workers.first)
        let supervisor = try Supervisor(
            workers: [spec], environment: environment, runtimeDirectory: dir.path, logger: testLogger())
        var spawnError: String?
        do {
            try await supervisor.start()
        } catch let error as SupervisorError {
            spawnError = error.message
        }
        if spawnError == nil {
            let ran = c.runs.map { dir.url($0) + ".ran" } ?? ""
            #expect(
                await eventually { FileManager.default.fileExists(atPath: ran) },
                "the worker started, but \(c.runs ?? "no program") did not run")
        }
        await supervisor.stop()

        #expect(
            problems.isEmpty == (spawnError == nil),
            "check: \(problems.map(\.message)); spawn: \(spawnError ?? "started")")
        #expect((spawnError == nil) == (c.runs != nil), "spawn: \(spawnError ?? "started")")
        if c.workingDirectory == nil, !c.command.contains("/") {
            // The requirement probe, for a bare name, with the same PATH.
            let probe = HostEnvironment(variables: ["PATH": searchPath]).executablePath(named: c.command)
            #expect(probe == c.runs.map { dir.url($0) }, "requirement probe: \(probe ?? "nothing")")
        }
    }

    @Test("a relative command's message says how to fix it, at check and at start")
    func relativeWithoutDirectoryIsExplained() async throws {
        let check = WorkerCommandCheck.problem(command: "./signerd", path: nil, relativeTo: nil)
        #expect(check?.contains("is a relative path and the worker has no working_directory") == true, "\(check ?? "")")
        guard case .failure(let failure) = WorkerSpawner.resolve("./signerd", path: nil, workingDirectory: nil) else {
            Issue.record("a relative command without a working directory was accepted")
            return
        }
        #expect(failure.reason.contains("set working_directory"), "\(failure.reason)")
    }
}
