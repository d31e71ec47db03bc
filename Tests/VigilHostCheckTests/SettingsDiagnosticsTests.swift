import Foundation
import Testing
import VigilCore
import VigilHostCheck
import VigilPlugin
import VigilTestSupport

/// The settings part of HostCheck with third-party plugins (the first-party ones are in
/// VigilCLITests' SettingsCheckTests): a v2 plugin's table is checked against its schema, a v1
/// plugin's table is reported as unchecked, and stray tables are errors unless the host reads them
/// or marks them foreign.
@Suite("HostCheck: plugin settings and stray tables", .timeLimit(.minutes(1)))
struct SettingsDiagnosticsTests {
    static let schema = #"""
        {"level": {"type": "integer", "description": "how loud", "min": 0, "max": 10, "default": 3},
         "mode": {"type": "string", "description": "what", "choices": ["zero", "sine"], "default": "zero"}}
        """#

    private func check(_ project: HostProject) -> HostCheck.Report {
        HostCheck(entries: ["ledger"], environment: project.dir.environment(), probeEnvironment: false)
            .run(configPath: project.configPath)
    }

    @Test("a third-party v2 plugin's table: each problem an error at its key; the plugin is not ready")
    func thirdPartySchema() throws {
        let project = try HostProject()
        defer { project.remove() }
        let fp = try project.signedPlugin("alpha", settings: Self.schema, schema: "vigil.plugin-manifest/v2")
        try project.config(
            """
            plugins = ["alpha"]
            [trusted_plugins]
            alpha = "\(fp)"
            [alpha]
            levle = 4
            mode = "sin"
            """)
        let report = check(project)
        #expect(
            report.diagnostics.map(\.description) == [
                "\(project.configPath):5:1: error: [alpha] setting `levle`: unknown setting; did you mean `level`? "
                    + "Known: level, mode — fix it in the [alpha] table (the plugin would not start)",
                "\(project.configPath):6:1: error: [alpha] setting `mode`: \"sin\" is not one of \"zero\", \"sine\"; "
                    + "did you mean \"sine\"? — fix it in the [alpha] table (the plugin would not start)",
            ])
        #expect(report.plugins.map(\.state) == [.failed])
    }

    @Test("a valid v2 table passes; a v1 plugin's table is a warning that it is checked only at start")
    func validAndUnschemed() throws {
        let project = try HostProject()
        defer { project.remove() }
        let alpha = try project.signedPlugin("alpha", settings: Self.schema, schema: "vigil.plugin-manifest/v2")
        let beta = try project.signedPlugin("beta")
        try project.config(
            """
            plugins = ["alpha", "beta"]
            [trusted_plugins]
            alpha = "\(alpha)"
            beta = "\(beta)"
            [alpha]
            level = 10
            [beta]
            anything = 1
            """)
        let report = check(project)
        #expect(
            report.diagnostics.map(\.description) == [
                "\(project.configPath):7:1: warning: [beta] its manifest (vigil.plugin-manifest/v1) has no settings "
                    + "schema, so [beta] is checked only when the plugin starts — ask its publisher for a "
                    + "vigil.plugin-manifest/v2 manifest"
            ])
        #expect(report.plugins.map(\.state) == [.verified, .verified])
    }

    @Test(
        "stray tables: a plugin that exists but is not activated, a near name, none; [announce] and foreign ones pass")
    func strayTables() throws {
        let project = try HostProject()
        defer { project.remove() }
        let alpha = try project.signedPlugin("alpha", settings: Self.schema, schema: "vigil.plugin-manifest/v2")
        try project.signedPlugin("gamma")
        try project.config(
            """
            plugins = ["alpha"]
            [host]
            foreign_tables = ["myapp"]
            [trusted_plugins]
            alpha = "\(alpha)"
            [alhpa]
            level = 1
            [gamma]
            x = 1
            [zzzz]
            x = 1
            [myapp]
            x = 1
            [announce]
            policy = "duck"
            """)
        let report = check(project)
        #expect(
            report.diagnostics.map(\.description) == [
                "\(project.configPath):6:1: error: unknown table [alhpa]: no activated plugin or host table has this "
                    + "name, so nothing reads it; did you mean [alpha]? — rename or remove it, or list it in [host] "
                    + "foreign_tables if another program reads it",
                "\(project.configPath):8:1: error: [gamma] configures the plugin gamma, which is not activated: its "
                    + "settings are not used — add \"gamma\" to plugins, remove the table, or list it in [host] "
                    + "foreign_tables",
                "\(project.configPath):10:1: error: unknown table [zzzz]: no activated plugin or host table has this "
                    + "name, so nothing reads it — rename or remove it, or list it in [host] foreign_tables if another "
                    + "program reads it",
            ])
    }
}
