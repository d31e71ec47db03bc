import Foundation
import Testing
import VigilTestSupport

/// Every systemd unit shipped in the repository is one systemd accepts as written — no setting
/// silently ignored (a comment after a value makes systemd drop the whole line) — and the docs
/// show each one exactly as the file has it.
@Suite("Shipped systemd units")
struct SystemdUnitTests {
    /// `systemd-analyze`, when installed (it is in scripts/install-deps.sh's `systemd`).
    static let analyze = RuntimeFixtures.which("systemd-analyze")

    /// The unit files under Examples/ and docs/.
    static func unitFiles() -> [String] {
        let root = VigilExecutable.packageRoot
        var found: [String] = []
        for top in ["Examples", "docs"] {
            guard let walker = FileManager.default.enumerator(atPath: root + "/" + top) else { continue }
            for case let relative as String in walker
            where [".service", ".socket", ".timer", ".path"].contains(where: relative.hasSuffix) {
                found.append(root + "/" + top + "/" + relative)
            }
        }
        return found.sorted()
    }

    @Test(
        "systemd-analyze verify accepts each unit with no warning",
        .enabled(if: analyze != nil, "systemd-analyze is not installed (Debian package systemd)"))
    func verify() async throws {
        let analyze = try #require(Self.analyze)
        let units = Self.unitFiles()
        #expect(!units.isEmpty, "no unit file under Examples/ or docs/")
        for unit in units {
            let dir = try TestDirectory("vigil-unit")
            defer { dir.remove() }
            // verify also checks that ExecStart= names an executable: give %h (the home directory)
            // one at each path the unit names, as an installed app would have. The units the
            // package installs run /usr/bin/vigil: they are verified as `make install PREFIX=…`
            // writes them (that path rewritten to PREFIX/bin/vigil), without the man pages their
            // Documentation= names, which exist once installed (scripts/test-package.sh verifies
            // the installed units with them).
            var text = String(decoding: try dir.read(unit), as: UTF8.self)
            let installed = text.contains("ExecStart=/usr/bin/vigil ")
            // ExecReload= runs the installed `vigil reload` in every unit, a library host's too.
            if text.contains("/usr/bin/vigil ") {
                text = text.replacingOccurrences(of: "/usr/bin/vigil", with: dir.url("prefix/bin/vigil"))
                try dir.write("prefix/bin/vigil", "#!/bin/sh\nexit 0\n", mode: 0o755)
            }
            for line in text.split(separator: "\n") where line.hasPrefix("ExecStart=") && !installed {
                let command = line.dropFirst("ExecStart=".count).split(separator: " ").first.map(String.init) ?? ""
                let path = command.replacingOccurrences(of: "%h", with: dir.url("home"))
                #expect(path.hasPrefix(dir.url("home")), "\(unit): ExecStart= is not under %h: \(line)")
                let relative = String(path.dropFirst(dir.path.count + 1))
                try dir.write(relative, "#!/bin/sh\nexit 0\n", mode: 0o755)
            }
            let name = (unit as NSString).lastPathComponent
            let rewritten = installed || text.contains(dir.url("prefix/bin/vigil"))
            let checked = rewritten ? try dir.write("units/" + name, text) : unit
            try dir.makeDirectory("runtime")
            let environment: [String: String?] = ["HOME": dir.url("home"), "XDG_RUNTIME_DIR": dir.url("runtime")]
            for scope in [["verify"], ["--user", "verify"]] {
                let options = installed ? ["--man=no"] : []
                let r = try await VigilExecutable.run(
                    executable: analyze, options + scope + [checked], in: dir.path, environment: environment)
                #expect(r.status == 0, "systemd-analyze \(scope.joined(separator: " ")) \(unit) failed:\n\(r.stderr)")
                #expect(
                    r.stderr.isEmpty && r.stdout.isEmpty,
                    "systemd-analyze \(scope.joined(separator: " ")) \(unit):\n\(r.stdout)\(r.stderr)")
            }
        }
    }

    @Test("each shipped unit reloads through `vigil reload` of the vigil.toml the host runs, and stops on SIGHUP")
    func execReload() throws {
        for unit in Self.unitFiles() where unit.hasSuffix(".service") {
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: unit)), as: UTF8.self)
            let lines = text.split(separator: "\n")
            let reload = lines.filter { $0.hasPrefix("ExecReload=") }
            #expect(reload.count == 1, "\(unit): one ExecReload=")
            guard let command = reload.first else { continue }
            #expect(command.hasPrefix("ExecReload=/usr/bin/vigil reload --config "), "\(unit): \(command)")
            if let start = lines.first(where: { $0.hasPrefix("ExecStart=/usr/bin/vigil up --config ") }) {
                #expect(
                    command.dropFirst("ExecReload=/usr/bin/vigil reload".count)
                        == start.dropFirst("ExecStart=/usr/bin/vigil up".count), "\(unit): the same vigil.toml")
            }
            // SIGHUP stays a graceful stop: nothing maps reload to it.
            #expect(!text.contains("ReloadSignal=") && !text.contains("kill -HUP"), "\(unit)")
        }
    }

    @Test("every Type=notify unit leaves a configuration that cannot work stopped: RestartPreventExitStatus=78")
    func configurationErrorsAreNotRestarted() throws {
        let units = Self.unitFiles().filter { !$0.contains("/docs/") }
        #expect(units.count >= 3)
        for unit in units {
            let lines = String(decoding: try Data(contentsOf: URL(fileURLWithPath: unit)), as: UTF8.self)
                .split(separator: "\n")
            guard lines.contains("Type=notify") else { continue }
            #expect(lines.contains("RestartPreventExitStatus=78"), "\(unit) restarts a host that exits 78 (EX_CONFIG)")
        }
    }

    @Test("the docs show each unit exactly as shipped")
    func docsShowTheFiles() throws {
        let root = VigilExecutable.packageRoot
        let docs = try ["docs/supervisor.md", "docs/host-guide.md"].map {
            String(decoding: try Data(contentsOf: URL(fileURLWithPath: root + "/" + $0)), as: UTF8.self)
        }.joined(separator: "\n")
        for unit in Self.unitFiles() {
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: unit)), as: UTF8.self)
            let relative = String(unit.dropFirst(root.count + 1))
            #expect(docs.contains("```ini\n" + text + "```"), "no ```ini block in the docs equals \(relative)")
            #expect(docs.contains(relative), "the docs do not link \(relative)")
        }
    }
}
