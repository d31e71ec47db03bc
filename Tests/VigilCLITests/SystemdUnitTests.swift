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
            // package installs (the Makefile's lists) run /usr/bin/vigil: they are verified as
            // `make install PREFIX=…` writes them (that path rewritten to PREFIX/bin/vigil), without
            // the man pages their Documentation= names, which exist once installed
            // (scripts/test-package.sh verifies the installed units with them).
            var text = String(decoding: try dir.read(unit), as: UTF8.self)
            let installed = try Self.installedUnits().keys.contains((unit as NSString).lastPathComponent)
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

    /// The units `make install` (so the Debian package) installs: the Makefile's `user_units` and
    /// `system_units`, each with the directory it goes to.
    static func installedUnits() throws -> [String: String] {
        let makefile = try TextFile.read(VigilExecutable.packageRoot + "/Makefile")
        var units: [String: String] = [:]
        for (variable, directory) in [("user_units", "lib/systemd/user"), ("system_units", "lib/systemd/system")] {
            let line = makefile.split(separator: "\n").first { $0.hasPrefix(variable + " := ") }
            for name in line?.dropFirst(variable.count + 4).split(separator: " ") ?? [] {
                units[String(name)] = directory
            }
        }
        return units
    }

    /// The text of `Examples/systemd/NAME`, line by line.
    static func lines(_ name: String) throws -> [Substring] {
        try TextFile.read(VigilExecutable.packageRoot + "/Examples/systemd/" + name).split(separator: "\n")
    }

    /// The value of `KEY=` in `lines` (the first).
    static func value(_ key: String, _ lines: [Substring]) -> String? {
        lines.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    @Test("each host unit reloads through `vigil reload` of the vigil.toml the host runs, and stops on SIGHUP")
    func execReload() throws {
        var hosts = 0
        for unit in Self.unitFiles() where unit.hasSuffix(".service") {
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: unit)), as: UTF8.self)
            let lines = text.split(separator: "\n")
            // A host runs until stopped; a oneshot unit (the plugin update) has nothing to reload.
            guard lines.contains("Type=notify") else {
                #expect(lines.contains("Type=oneshot") && !lines.contains { $0.hasPrefix("ExecReload=") }, "\(unit)")
                continue
            }
            hosts += 1
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
        #expect(hosts >= 3, "vigil.service, vigil@.service and my-signer.service are host units")
    }

    /// Each plugin-update unit with the timer that starts it and the host unit it updates.
    static let updateUnits = [
        (service: "vigil-plugin-update.service", timer: "vigil-plugin-update.timer", host: "vigil.service"),
        (service: "vigil-plugin-update@.service", timer: "vigil-plugin-update@.timer", host: "vigil@.service"),
    ]

    @Test("the plugin-update units update the vigil.toml their host unit runs, as its user, and reload it through it")
    func pluginUpdateUnits() throws {
        for (service, _, host) in Self.updateUnits {
            let update = try Self.lines(service)
            let hostLines = try Self.lines(host)
            #expect(update.contains("Type=oneshot"), "\(service)")
            #expect(Self.value("TimeoutStartSec", update) != nil, "\(service): a deadline for the whole run")
            // The same vigil.toml, read from the same directory by the same user.
            let start = try #require(Self.value("ExecStart", hostLines))
            #expect(
                Self.value("ExecStart", update) == start.replacingOccurrences(of: " up ", with: " plugin update "),
                "\(service) updates the vigil.toml \(host) runs")
            for key in ["User", "WorkingDirectory"] {
                #expect(Self.value(key, update) == Self.value(key, hostLines), "\(service): \(key)= as \(host)")
            }
            // Then the host unit's own ExecReload= (`vigil reload`, execReload() above): systemctl
            // reloads a unit that has one and never restarts it; a stopped host is left stopped.
            #expect(Self.value("ExecReload", hostLines) != nil, "\(host) has an ExecReload=")
            let instance = host.replacingOccurrences(of: "@.", with: "@%i.")
            let manager = host.contains("@") ? "+/usr/bin/systemctl" : "/usr/bin/systemctl --user"
            #expect(
                update.filter { $0.hasPrefix("ExecStartPost=") } == [
                    Substring("ExecStartPost=\(manager) try-reload-or-restart \(instance)")
                ], "\(service)")
            // No reload after a refusal: ExecStartPost= runs only when ExecStart= succeeded, so no
            // "-" that would turn a refusal (6, 7, …) into a success.
            #expect(update.filter { $0.hasPrefix("ExecStart=") }.count == 1, "\(service)")
            #expect(!update.contains { $0.hasPrefix("ExecStart=-") || $0.hasPrefix("SuccessExitStatus=") })
            #expect(!update.contains { $0.hasPrefix("[Install]") }, "\(service) is started by its timer only")
        }
    }

    @Test("the plugin-update timers spread a fleet over half an hour, catch up after downtime, and are not enabled")
    func pluginUpdateTimers() throws {
        for (service, timer, _) in Self.updateUnits {
            let lines = try Self.lines(timer)
            // The timer starts the service of its own name (no Unit=).
            #expect((timer as NSString).deletingPathExtension == (service as NSString).deletingPathExtension)
            #expect(Self.value("Unit", lines) == nil, "\(timer)")
            #expect(Self.value("OnCalendar", lines) == "hourly", "\(timer)")
            #expect(Self.value("RandomizedDelaySec", lines) == "30min", "\(timer)")
            #expect(Self.value("FixedRandomDelay", lines) == "true", "\(timer)")
            #expect(Self.value("Persistent", lines) == "true", "\(timer)")
            #expect(Self.value("WantedBy", lines) == "timers.target", "\(timer)")
        }
        // Installed, never enabled: the package has no maintainer script (scripts/package-deb.sh),
        // and the operator enables a timer.
        let installed = try Self.installedUnits()
        let examples = try FileManager.default.contentsOfDirectory(
            atPath: VigilExecutable.packageRoot + "/Examples/systemd")
        let shipped = examples.filter { $0.hasSuffix(".service") || $0.hasSuffix(".timer") }
        #expect(
            Set(installed.keys) == Set(shipped).subtracting(["my-signer.service"]),
            "the Makefile installs every unit of Examples/systemd but the example to copy")
        for name in installed.keys {
            #expect(installed[name] == (name.contains("@") ? "lib/systemd/system" : "lib/systemd/user"), "\(name)")
        }
        let packaging = try TextFile.read(VigilExecutable.packageRoot + "/scripts/package-deb.sh")
        #expect(!packaging.contains("DEBIAN/postinst") && !packaging.contains("deb-systemd-helper"))
    }

    static let make = RuntimeFixtures.which("make")

    @Test(
        "make install-units writes every unit for PREFIX, and make uninstall removes each",
        .enabled(if: make != nil, "make is not installed (scripts/install-deps.sh installs it)"))
    func makeInstallAndUninstall() async throws {
        let make = try #require(Self.make)
        let dir = try TestDirectory("vigil-make-units")
        defer { dir.remove() }
        let arguments = ["--no-print-directory", "-C", VigilExecutable.packageRoot, "PREFIX=/opt/vigil"]
        var r = try await VigilExecutable.run(
            executable: make, arguments + ["DESTDIR=\(dir.path)", "install-units"], in: dir.path)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let units = try Self.installedUnits()
        #expect(units.count == 6)
        for (name, directory) in units {
            let relative = "opt/vigil/\(directory)/\(name)"
            let text = String(decoding: try dir.read(relative), as: UTF8.self)
            let source = try TextFile.read(VigilExecutable.packageRoot + "/Examples/systemd/" + name)
            #expect(text == source.replacingOccurrences(of: "/usr/bin/vigil", with: "/opt/vigil/bin/vigil"), "\(name)")
            #expect(try dir.mode(relative) == 0o644, "\(name)")
        }
        #expect(
            String(decoding: try dir.read("opt/vigil/lib/systemd/user/vigil-plugin-update.service"), as: UTF8.self)
                .contains("ExecStart=/opt/vigil/bin/vigil plugin update --config "))
        r = try await VigilExecutable.run(
            executable: make, arguments + ["DESTDIR=\(dir.path)", "uninstall"], in: dir.path)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let left = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String }.filter {
            var info = stat()
            return lstat(dir.url($0), &info) == 0 && info.st_mode & S_IFMT != S_IFDIR
        }
        #expect(left == [], "make uninstall left files behind")
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
        let docs = try ["docs/supervisor.md", "docs/host-guide.md", "docs/signing.md"].map {
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
