import Foundation
import Testing
import VigilTestSupport

/// Vigil's SwiftPM plugins as a host developer uses them: a real host package that depends on this
/// package by path, built with the real `swift build` and driven with the real `swift package`.
///
/// One temporary host package serves every step. The plugins' tool (`vigil-plugin-tool`: the
/// checks, without the runtime) is compiled once, as the build-tool plugin's host tool, and the
/// command plugins run that copy; each later step is incremental. On a 2-core VM shared with five
/// other builds it took 28 minutes.
/// 1. no `vigil.toml`: the build fails instead of planning no check;
/// 2. `vigil.toml` created afterwards with a wrong trusted key: the build runs the check and fails,
///    at the `[trusted_plugins]` line, with a message for a typed key and the `swift package` remedy;
/// 3. `vigil-trust --fingerprint` trusts without a terminal; `vigil-trust` under a pseudo-terminal
///    (`script`) asks, and `n` declines while `y` trusts;
/// 4. `vigil-check` reports a worker command that does not exist as a located error, its lines and
///    its summary in order in one redirected stream; the build fails on the missing background_modes
///    declaration (silent-engine would be blocked: an error, located at the plugin); once it is
///    declared, the build reports the worker command as a warning and succeeds; after another
///    `vigil-check`, the next build compiles and links nothing and prints the warning again, and so
///    does the no-op build after it (SwiftPM runs the check again while it warns);
/// 5. a plugin directory that appears after the build was planned fails the build until SwiftPM
///    plans again.
@Suite("Vigil's SwiftPM plugins in a host package")
struct BuildPluginTests {
    static let silentEngineKey = "ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4="
    static let soundscapeKey = "ed25519:QaLGlZoeYW/jvbHckvjgkjV1ImF3vfGrW3ZB/9Ln8sI="
    static let supervisorKey = "ed25519:ioJy7E9uRlLYcMlKTGdQlzdNRh9asTxdtsoQBInw4sk="
    static let trustCommand = "swift package --allow-writing-to-package-directory vigil-trust"

    /// `vigil.toml` for the test host: silent-engine and supervisor activated, `[host]` without
    /// `background_modes`, one worker whose command does not exist, and `trusted` as the table.
    static func config(trusted: String) -> String {
        """
        # Test host for Vigil's SwiftPM plugins.
        plugins = ["silent-engine", "supervisor"]

        [host]
        name = "build-plugin-test"
        services = ["supervisor"]

        [supervisor]
        workers = [
          { name = "signer", command = "/nonexistent/signerd", args = ["--port", "7000"] },
        ]

        [trusted_plugins]
        \(trusted)
        """
    }

    /// The host package and how to run SwiftPM on it.
    struct Host {
        let dir: TestDirectory
        let swift: String
        var package: String { dir.url("host") }
        var configPath: String { dir.url("host/vigil.toml") }
        var environment: [String: String?] {
            [
                "XDG_STATE_HOME": dir.url("state"), "XDG_CONFIG_HOME": dir.url("config"),
                "VIGIL_FIRST_PARTY_MANIFESTS": nil, "VIGIL_TRUST_COMMAND": nil,
            ]
        }
        /// SwiftPM's options for this package, for `swift build` and `swift package`.
        var packageOptions: [String] { ["--package-path", package, "--scratch-path", dir.url("scratch")] }

        /// `swift SUBCOMMAND …` with stdin /dev/null; stdout and stderr joined.
        func run(_ subcommand: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
            let r = try await VigilExecutable.run(
                executable: swift, [subcommand] + packageOptions + arguments, in: dir.path, environment: environment)
            return (r.status, r.stdout + r.stderr)
        }

        /// `swift package …` with stdout and stderr redirected to one file, as in a CI log.
        func packageLogged(_ arguments: [String]) async throws -> (status: Int32, log: String) {
            let log = dir.url("log-\(UUID().uuidString).txt")
            let command = ([swift, "package"] + packageOptions + arguments).map(Self.quoted).joined(separator: " ")
            let r = try await VigilExecutable.run(
                executable: "/bin/sh", ["-c", "exec \(command) >\(Self.quoted(log)) 2>&1"], in: dir.path,
                environment: environment)
            return (r.status, String(decoding: try dir.read(log), as: UTF8.self))
        }

        /// `swift package …` run by `script` on a pseudo-terminal that is its controlling terminal,
        /// with `input` typed on it.
        func packageOnTerminal(_ arguments: [String], input: String) async throws -> (status: Int32, output: String) {
            let script = try #require(RuntimeFixtures.which("script"), "script (util-linux) is not on PATH")
            let command = ([swift, "package"] + packageOptions + arguments).map(Self.quoted).joined(separator: " ")
            let r = try await VigilExecutable.run(
                executable: script, ["-q", "-e", "-c", command, "/dev/null"], in: dir.path, environment: environment,
                stdin: input)
            return (r.status, r.stdout + r.stderr)
        }

        func config() throws -> String { String(decoding: try dir.read(configPath), as: UTF8.self) }

        /// The modification time of every object file, module and executable SwiftPM built for the
        /// package (not the compiled SwiftPM plugins, nor the checkouts).
        func builtFiles() throws -> [String: Date] {
            let scratch = URL(fileURLWithPath: dir.url("scratch"))
            let fm = FileManager.default
            var files: [String: Date] = [:]
            for top in try fm.contentsOfDirectory(atPath: scratch.path)
            where !["plugins", "checkouts", "repositories", "artifacts"].contains(top) {
                guard let walk = fm.enumerator(atPath: scratch.appendingPathComponent(top).path) else { continue }
                for case let relative as String in walk {
                    let path = scratch.appendingPathComponent(top).appendingPathComponent(relative).path
                    let name = (relative as NSString).lastPathComponent
                    let built =
                        [".o", ".swiftmodule", ".so", ".a"].contains { name.hasSuffix($0) }
                        || (!name.contains(".") && fm.isExecutableFile(atPath: path))
                    let attributes = try fm.attributesOfItem(atPath: path)
                    guard built, attributes[.type] as? FileAttributeType == .typeRegular else { continue }
                    files[path] = attributes[.modificationDate] as? Date
                }
            }
            return files
        }

        static func quoted(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
    }

    @Test("build check, trust and check through the real swift build and swift package", .timeLimit(.minutes(45)))
    func hostPackage() async throws {
        let dir = try TestDirectory("vigil-build-plugin")
        defer { dir.remove() }
        let host = Host(dir: dir, swift: try #require(RuntimeFixtures.which("swift"), "swift is not on PATH"))
        try dir.write(
            "host/Package.swift",
            """
            // swift-tools-version:6.1
            import PackageDescription

            let package = Package(
                name: "TestHost",
                dependencies: [.package(name: "vigil", path: \(literal(VigilExecutable.packageRoot)))],
                targets: [
                    .executableTarget(
                        name: "TestHost",
                        plugins: [.plugin(name: "VigilBuildCheck", package: "vigil")])
                ]
            )

            """)
        try dir.write("host/Sources/TestHost/main.swift", "print(\"test host\")\n")

        // 1. No vigil.toml yet: the build fails, rather than planning no check and staying so.
        let none = try await host.run("build", [])
        #expect(none.status != 0, "the build succeeded without vigil.toml:\n\(none.output)")
        #expect(none.output.contains("VigilBuildCheck: no vigil.toml"), "\(none.output)")

        // 2. vigil.toml appears, with a mistyped key for silent-engine: the next build checks it
        // and fails at the [trusted_plugins] line, for the package user.
        let wrong = Self.config(trusted: "silent-engine = \"\(Self.soundscapeKey)\"\n")
        try dir.write("host/vigil.toml", wrong)
        let second = try await host.run("build", [])
        #expect(second.status != 0, "the build succeeded despite the wrong trusted key:\n\(second.output)")
        let keyError = diagnostics(in: second.output, severity: "error", plugin: "silent-engine").first {
            $0.path == host.configPath && $0.text.contains(Self.soundscapeKey) && $0.text.contains(Self.silentEngineKey)
        }
        #expect(keyError != nil, "no located [silent-engine] trust error for \(host.configPath) in:\n\(second.output)")
        #expect(keyError?.line == lineNumber(of: "silent-engine = ", in: wrong))
        #expect(keyError?.text.contains("does not match the key the plugin offers") == true, "\(keyError?.text ?? "")")
        #expect(keyError?.text.contains("if you typed it, fix it") == true)
        #expect(keyError?.text.contains("KEY ROTATION") == false)
        #expect(keyError?.text.contains("\(Self.trustCommand) silent-engine") == true, "\(keyError?.text ?? "")")

        // 3a. A matching --fingerprint is the confirmation: trusted with no terminal and no --yes.
        try dir.write("host/vigil.toml", Self.config(trusted: ""))
        let pinned = try await host.run(
            "package",
            [
                "--allow-writing-to-package-directory", "vigil-trust", "silent-engine", "--fingerprint",
                Self.silentEngineKey,
            ])
        #expect(pinned.status == 0, "\(pinned.output)")
        #expect(try host.config().contains("silent-engine = \"\(Self.silentEngineKey)\""))
        // Trust recorded the version for rollback protection under $XDG_STATE_HOME/vigil/.
        #expect(FileManager.default.fileExists(atPath: dir.url("state/vigil/rollback.json")))

        // 3b. On a terminal: the review and the question reach it, and the answer is read from it.
        let beforeAnswer = try host.config()
        let declined = try await host.packageOnTerminal(
            ["--allow-writing-to-package-directory", "vigil-trust", "supervisor"], input: "n\n")
        #expect(declined.status != 0, "answering n trusted anyway:\n\(declined.output)")
        #expect(declined.output.contains("fingerprint:   \(Self.supervisorKey)"), "\(declined.output)")
        #expect(declined.output.contains("Trust this plugin? [y/N]"), "\(declined.output)")
        #expect(declined.output.contains("not trusted"), "\(declined.output)")
        #expect(try host.config() == beforeAnswer)
        let accepted = try await host.packageOnTerminal(
            ["--allow-writing-to-package-directory", "vigil-trust", "supervisor"], input: "y\n")
        #expect(accepted.status == 0, "answering y did not trust:\n\(accepted.output)")
        #expect(accepted.output.contains("trusted supervisor (\(Self.supervisorKey))"), "\(accepted.output)")
        let trusted = try host.config()
        #expect(trusted.contains("supervisor = \"\(Self.supervisorKey)\""), "\(trusted)")

        // 4a. vigil-check: the worker command that does not exist is an error at its line; every
        // line comes before the summary that refers to it, in one redirected stream.
        let check = try await host.packageLogged(["vigil-check"])
        #expect(check.status != 0, "vigil-check passed a missing worker command:\n\(check.log)")
        let lines = check.log.split(separator: "\n").map(String.init)
        let commandError = lines.firstIndex {
            $0.contains("\(host.configPath):\(lineNumber(of: "  { name = \"signer\"", in: trusted) ?? -1):")
                && $0.contains(": error: [supervisor] command \"/nonexistent/signerd\" does not exist")
        }
        let summary = lines.firstIndex { $0.contains("vigil check found errors") }
        #expect(commandError != nil, "no located error for the worker's command in:\n\(check.log)")
        #expect(summary != nil, "no summary in:\n\(check.log)")
        if let commandError, let summary { #expect(commandError < summary, "the summary comes first:\n\(check.log)") }

        // 4b. The build: the missing background_modes declaration is an error at silent-engine's
        // entry (it would be blocked, it would not start), and the build fails.
        let undeclared = try await host.run("build", [])
        #expect(undeclared.status != 0, "the build passed a missing declaration:\n\(undeclared.output)")
        let background = diagnostics(in: undeclared.output, severity: "error", plugin: "silent-engine").first {
            $0.path == host.configPath && $0.text.contains("requires background_modes to include \"audio\"")
        }
        #expect(background != nil, "no background_modes error in:\n\(undeclared.output)")
        #expect(background?.text.contains("blocked by a missing declaration") == true, "\(background?.text ?? "")")
        #expect(background?.line == lineNumber(of: "plugins", in: trusted))
        #expect(background?.column == column(of: "\"silent-engine\"", onLine: 2, in: trusted))

        // Declared: the worker's command is a warning (the build does not probe), and the build passes.
        try dir.write(
            "host/vigil.toml",
            trusted.replacingOccurrences(
                of: "services = [\"supervisor\"]\n",
                with: "services = [\"supervisor\"]\nbackground_modes = [\"audio\"]\n"))
        let built = try await host.run("build", [])
        #expect(built.status == 0, "the build failed:\n\(built.output)")
        #expect(
            workerWarning(in: built.output), "no worker command warning in:\n\(built.output)")

        // 4c. A plugin command plans and builds nothing, so the next build compiles and links nothing:
        // the command runs the build check's copy of the tool (the old one built the tool through
        // SwiftPM, which compiled it again, and the next build compiled it once more).
        let settled = try host.builtFiles()
        let again = try await host.run("package", ["vigil-check"])
        #expect(again.output.contains("vigil check found errors"), "\(again.output)")
        let rebuilt = try await host.run("build", [])
        #expect(rebuilt.status == 0, "\(rebuilt.output)")
        // The warning holds, so the build says it again (it used to say it once, then nothing).
        #expect(workerWarning(in: rebuilt.output), "the no-op build dropped the warning:\n\(rebuilt.output)")
        let noop = try await host.run("build", [])
        #expect(noop.status == 0, "\(noop.output)")
        #expect(workerWarning(in: noop.output), "the second no-op build dropped the warning:\n\(noop.output)")
        let compiled = try host.builtFiles().filter { settled[$0.key] != $0.value }.keys.sorted()
        #expect(!settled.isEmpty)
        #expect(compiled.isEmpty, "vigil-check and the builds after it compiled or linked: \(compiled)")

        // 5. A plugin directory that appears after SwiftPM planned the build: the check runs (its
        // directory changed) and fails, because it could not run again when those files change —
        // until SwiftPM plans again.
        try dir.write("host/manifests/README", "own plugins go here\n")
        let stale = try await host.run("build", [])
        #expect(stale.status != 0, "the build passed with unwatched inputs:\n\(stale.output)")
        #expect(stale.output.contains("appeared after SwiftPM planned this build"), "\(stale.output)")
        #expect(stale.output.contains("\(dir.url("host/manifests/README"))"), "\(stale.output)")
        try dir.write(
            "host/Package.swift", try TextFile.read(dir.url("host/Package.swift")) + "\n")
        let replanned = try await host.run("build", [])
        #expect(replanned.status == 0, "the build failed after SwiftPM planned again:\n\(replanned.output)")
    }

    /// True when `output` has the build's located warning for the worker command that does not exist.
    func workerWarning(in output: String) -> Bool {
        diagnostics(in: output, severity: "warning", plugin: "supervisor").contains {
            $0.text.contains("command \"/nonexistent/signerd\" does not exist")
        }
    }

    struct Diagnostic {
        let path: String
        let line: Int
        let column: Int
        let text: String
    }

    /// Every `PATH:LINE:COL: SEVERITY: [PLUGIN] …` line in `output`.
    func diagnostics(in output: String, severity: String, plugin: String) -> [Diagnostic] {
        output.split(separator: "\n").compactMap { line in
            let marker = ": \(severity): [\(plugin)]"
            guard let range = line.range(of: marker) else { return nil }
            let location = line[..<range.lowerBound].split(separator: ":")
            guard location.count >= 3, let l = Int(location[location.count - 2]), let c = Int(location.last!) else {
                return nil
            }
            let path = location.dropLast(2).joined(separator: ":")
            return Diagnostic(path: path, line: l, column: c, text: String(line[range.upperBound...]))
        }
    }

    /// The 1-based number of the first line of `text` that starts with `prefix`.
    func lineNumber(of prefix: String, in text: String) -> Int? {
        text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.hasPrefix(prefix) }.map { $0 + 1 }
    }

    /// The 1-based column of `needle` on line `line` of `text`.
    func column(of needle: String, onLine line: Int, in text: String) -> Int? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard line >= 1, line <= lines.count, let range = lines[line - 1].range(of: needle) else { return nil }
        return lines[line - 1].distance(from: lines[line - 1].startIndex, to: range.lowerBound) + 1
    }

    /// `value` as a Swift string literal.
    func literal(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
