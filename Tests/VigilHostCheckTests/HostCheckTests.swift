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

    @Test("warnings for unmet declarations and probes, located at the plugin's entry in plugins = [...]")
    func warningsAreLocated() throws {
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
        #expect(!report.hasErrors)
        #expect(
            report.diagnostics.map(\.description) == [
                "\(project.configPath):3:3: warning: [engine] requires background_modes to include \"audio\" — add it under "
                    + "[host] in vigil.toml: background_modes = [\"audio\"] (why: keeps the sink awake)",
                "\(project.configPath):3:3: warning: [engine] will wait for the executable \"pactl\" at start: needs the "
                    + "executable \"pactl\" on PATH, but it is not there — install the package that provides pactl, or add "
                    + "its directory to PATH",
            ])
        // What a build can know: declarations only.
        #expect(checker(project, probe: false).run(configPath: project.configPath).diagnostics.count == 1)
        #expect(report.plugins.map(\.name) == ["engine"])
        #expect(report.plugins.map(\.ready) == [true])
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
