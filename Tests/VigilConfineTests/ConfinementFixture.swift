import Foundation
import Testing
import VigilConfine
import VigilCore
import VigilPlugin
import VigilTestSupport

/// The attack plugin (`Fixtures/AttackPlugin.c`) and the test launcher (`Fixtures/Launcher.c`, a
/// stand-in for the helper process: it applies the policy with the real CVigilConfine source,
/// maps the plugin from a memfd and calls one attack), compiled here with the system cc, in a
/// temporary directory holding a fake HOME with an SSH key and the plugin's state directory.
struct ConfinementFixture {
    let dir: TestDirectory
    var home: String { dir.path + "/home" }
    var stateDirectory: String { dir.path + "/state/attack" }
    var sshKey: String { home + "/.ssh/id_ed25519" }
    var launcher: String { dir.path + "/launcher" }
    var plugin: String { dir.path + "/attack.so" }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Fixtures"

    init() async throws {
        dir = try TestDirectory("vigil-confine")
        do {
            try dir.write("home/.ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n", mode: 0o600)
            try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
            let include = Self.repository + "/Sources/CVigilConfine/include"
            try await Self.compile([
                "-O1", "-std=gnu11", "-D_GNU_SOURCE", "-rdynamic", "-I", include, "-I",
                Self.repository + "/Sources/CVigilPluginABI/include", "-o", launcher,
                Self.fixtures + "/Launcher.c", Self.repository + "/Sources/CVigilConfine/vigil_confine.c", "-lseccomp",
            ])
            try await Self.compile([
                "-shared", "-fPIC", "-O1", "-std=gnu11", "-D_GNU_SOURCE", "-o", plugin,
                Self.fixtures + "/AttackPlugin.c",
            ])
        } catch {
            dir.remove()
            throw error
        }
    }

    func remove() { dir.remove() }

    private static func compile(_ arguments: [String]) async throws {
        let out = try await RuntimeFixtures.run("/usr/bin/cc", arguments, timeout: 60)
        guard out.status == 0 else { throw RuntimeFixtures.Failure("cc failed: \(out.stderr)") }
    }

    /// The plan for `capabilities` in this fixture's state directory.
    func plan(_ capabilities: PluginCapabilities) throws -> ConfinementPlan {
        try ConfinementPlan(capabilities: capabilities, stateDirectory: stateDirectory)
    }

    /// What one attack run produced: the plugin's own verdict, and the helper's denial reports.
    struct Run {
        let output: RuntimeFixtures.Output
        let denials: [ConfinementDenial]
        /// The plugin's "result WHAT …" line.
        var result: String {
            output.stdout.split(separator: "\n").first { $0.hasPrefix("result ") }.map(String.init) ?? ""
        }
    }

    /// Runs attack `what` with `argument` in the launcher, confined by `plan` (`nil`: unconfined,
    /// the control).
    func attack(_ what: String, _ argument: String, plan: ConfinementPlan?, plugin: String? = nil) async throws -> Run {
        let label = UUID().uuidString.prefix(8)
        let report = dir.path + "/report-\(label)"
        var policy = "-"
        if let plan { policy = try dir.write("policy-\(label)", plan.encoded) }
        let output = try await RuntimeFixtures.run(
            launcher, [policy, report, plugin ?? self.plugin, what, argument],
            environment: ["HOME": home, "PATH": "/usr/bin:/bin"],
            timeout: 20)
        let text = (try? TextFile.read(report)) ?? ""
        return Run(output: output, denials: ConfinementDenial.parse(text))
    }
}
