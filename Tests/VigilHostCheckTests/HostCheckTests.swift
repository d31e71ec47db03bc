import Foundation
import Testing
import VigilCore
import VigilHostCheck
import VigilPlugin
import VigilTestSupport

/// The shared checker behind `vigil check`, the build plugin and `vigil up`.
@Suite("HostCheck diagnostics", .timeLimit(.minutes(1)))
struct HostCheckTests {
    /// A checker for a host whose one implementation is the `ledger` entry the test manifests name.
    private func checker(_ project: HostProject, probe: Bool = true) -> HostCheck {
        HostCheck(
            entries: ["ledger"], environment: project.dir.environment(["PATH": "/nonexistent"]),
            probeEnvironment: probe)
    }

    @Test("a missing declaration is an error (blocked), an unmet probe a warning (waiting), at the plugin's entry")
    func missingDeclarationIsAnError() throws {
        let project = try HostProject()
        defer { project.remove() }
        let fp = try project.signedPlugin(
            "engine",
            requirements:
                #"[{"kind": "background-mode", "value": "audio", "why": "keeps the sink awake"}, {"kind": "executable", "value": "pactl"}]"#
        )
        try project.config(
            """
            # host config
            plugins = [
              "engine",
            ]
            [trusted_plugins]
            engine = "\(fp)"
            """)
        let report = checker(project).run(configPath: project.configPath)
        #expect(report.hasErrors)
        #expect(
            report.diagnostics.map(\.description) == [
                "\(project.configPath):3:3: error: [engine] blocked by a missing declaration (it would not start): "
                    + "requires background_modes to include \"audio\" — add it under [host] in vigil.toml: "
                    + "background_modes = [\"audio\"] (why: keeps the sink awake)",
                "\(project.configPath):3:3: warning: [engine] waiting for the executable \"pactl\" at start: needs the "
                    + "executable \"pactl\" on PATH, but it is not there — install the package that provides pactl, or add "
                    + "its directory to PATH",
            ])
        // What a build can know: declarations only, and the missing one is an error there too.
        let build = checker(project, probe: false).run(configPath: project.configPath)
        #expect(build.diagnostics.map(\.severity) == [.error])
        #expect(build.plugins.map(\.state) == [.blocked])
        #expect(report.plugins.map(\.name) == ["engine"])
        #expect(report.plugins.map(\.state) == [.blocked])
        #expect(report.plugins.map(\.phrase) == ["blocked by a missing declaration"])
    }

    @Test("each plugin's state in the one vocabulary: verified, waiting for …, blocked by … (services), failed")
    func pluginStates() throws {
        let project = try HostProject()
        defer { project.remove() }
        let waits = try project.signedPlugin("waits", requirements: #"[{"kind": "executable", "value": "pactl"}]"#)
        let service = try project.signedPlugin(
            "svc", requirements: #"[{"kind": "service", "value": "supervisor"}, {"kind": "executable", "value": "x"}]"#)
        let plain = try project.signedPlugin("plain")
        try project.config(
            """
            plugins = ["waits", "svc", "plain", "absent"]
            [trusted_plugins]
            waits = "\(waits)"
            svc = "\(service)"
            plain = "\(plain)"
            """)
        let report = checker(project).run(configPath: project.configPath)
        #expect(report.plugins.map(\.state) == [.waiting, .blocked, .verified, .failed])
        #expect(
            report.plugins.map(\.phrase) == [
                "waiting for the executable \"pactl\"", "blocked by a missing declaration", "verified", "failed",
            ])
        // The missing `services` declaration is an error at svc's entry; the probes only warn.
        let errors = report.diagnostics.filter { $0.severity == .error }
        #expect(errors.contains { $0.plugin == "svc" && $0.message.contains("requires services to include") })
        #expect(!report.diagnostics.contains { $0.plugin == "waits" && $0.severity == .error })
        #expect(report.plugins[1].reason?.hasPrefix("requires services to include \"supervisor\"") == true)
        #expect(report.plugins[3].reason != nil && report.plugins[2].reason == nil)
    }

    @Test("errors for a tampered or untrusted plugin; a warning and the banner for an acknowledged unsigned one")
    func errorsAndUnsafe() throws {
        let project = try HostProject()
        defer { project.remove() }
        let fp = try project.signedPlugin("tampered")
        try project.tamper("tampered")
        try project.signedPlugin("stranger")
        try project.signedPlugin("dev", sign: false)
        try project.config(
            """
            plugins = ["tampered", "stranger", "dev"]
            acknowledge_unsafe_plugins = ["dev"]
            [trusted_plugins]
            tampered = "\(fp)"
            """)
        let report = checker(project).run(configPath: project.configPath)
        #expect(report.hasErrors)
        let lines = report.diagnostics.map(\.description)
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("\(project.configPath):1:12: error: [tampered] "))
        #expect(lines[0].contains("signature"))
        #expect(lines[1].hasPrefix("\(project.configPath):1:24: error: [stranger] "))
        #expect(lines[1].contains("vigil plugin trust stranger"))
        #expect(
            lines[2]
                == "\(project.configPath):2:31: warning: [dev] loads UNSIGNED under acknowledge_unsafe_plugins — sign it "
                + "(vigil plugin sign), trust it (vigil plugin trust dev) and remove it from acknowledge_unsafe_plugins before production"
        )
        #expect(report.unsafePlugins == ["dev"])
        #expect(report.banner == CoreBanner.unsafePlugins(["dev"]))
    }

    @Test("a broken vigil.toml is one located error, with the path as given")
    func brokenConfig() throws {
        let project = try HostProject()
        defer { project.remove() }
        try project.config("plugins = [\"a\"]\n[host]\nbackground_modes = \"audio\"\n")
        let report = checker(project).run(configPath: project.configPath)
        #expect(report.diagnostics.count == 1)
        let diagnostic = try #require(report.diagnostics.first)
        #expect(diagnostic.severity == .error)
        #expect(diagnostic.location?.path == project.configPath)
        #expect(diagnostic.location?.line == 3)
        #expect(diagnostic.description.hasPrefix("\(project.configPath):3:"))
        let missing = checker(project).run(configPath: project.dir.path + "/nope.toml")
        #expect(missing.hasErrors)
        #expect(missing.diagnostics.first?.message.contains("does not exist") == true)
    }
}
