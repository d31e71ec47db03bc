import Foundation
import Testing
import VigilConfine
import VigilCore
import VigilHostCheck
import VigilTestSupport

/// `[confinement] acknowledge_unenforced` in `vigil check`, on the signed example plugin (a shared
/// library): what this kernel cannot enforce of a plugin's confinement is an error unless the
/// operator acknowledged it for that plugin; an acknowledgement is shown, and one for no activated
/// plugin is an error with the near name.
@Suite("confinement acknowledgements in vigil check", .timeLimit(.minutes(1)))
struct ConfinementCheckTests {
    static let full = ConfinementSupport(
        landlockABI: 7, seccompFilter: true, noNewPrivileges: true, userNamespaces: true)
    static let old = ConfinementSupport(
        landlockABI: 3, seccompFilter: true, noNewPrivileges: true, userNamespaces: true)

    private func check(_ confinement: String, support: ConfinementSupport) throws -> [String] {
        let dir = try TestDirectory("vigil-confinement-check")
        defer { dir.remove() }
        try dir.write("vigil.toml", ExamplePluginTests.config("interval_ms = 500") + "\n" + confinement)
        // Its declared capabilities accepted as `vigil plugin trust` does (a malformed vigil.toml
        // cannot be loaded for that: its error is what those cases expect).
        try? ExamplePluginTests.trust(dir)
        let report = HostCheck(environment: dir.environment(), confinementSupport: support)
            .run(configPath: dir.path + "/vigil.toml")
        // The example's signed key rotation is a warning of its own, whatever the confinement.
        return report.diagnostics.map { $0.description.replacingOccurrences(of: dir.path + "/", with: "") }
            .filter { !$0.contains("rotated its keys") }
    }

    @Test func aKernelThatCannotEnforceTheConfinementIsAnErrorUnlessAcknowledged() throws {
        let clean = try check("", support: Self.full)
        #expect(clean.isEmpty, "\(clean)")
        let old = try check("", support: Self.old)
        #expect(
            old == [
                "vigil.toml:1:12: error: [heartbeat-example] this kernel cannot enforce its declared confinement (it "
                    + "lacks Landlock signal and abstract-socket scoping (ABI 6; this kernel has 3)), so it would not "
                    + "start — run it on Linux 6.12 or later, or accept the weaker confinement with "
                    + "acknowledge_unenforced = [\"heartbeat-example\"] under [confinement] in vigil.toml"
            ])
        let acknowledged = "[confinement]\nacknowledge_unenforced = [\"heartbeat-example\"]\n"
        let partly = try check(acknowledged, support: Self.old)
        #expect(
            partly == [
                "vigil.toml:8:27: warning: [heartbeat-example] runs with its declared confinement only partly enforced "
                    + "(acknowledged in [confinement] acknowledge_unenforced): this kernel lacks Landlock signal and "
                    + "abstract-socket scoping (ABI 6; this kernel has 3) — run it on Linux 6.12 or later to enforce "
                    + "all of it"
            ])
        let unneeded = try check(acknowledged, support: Self.full)
        #expect(
            unneeded == [
                "vigil.toml:8:27: warning: [heartbeat-example] is acknowledged in [confinement] "
                    + "acknowledge_unenforced, but this kernel (Landlock ABI 7, seccomp) enforces all of its "
                    + "confinement — remove it, so that a kernel that cannot is refused rather than accepted"
            ])
    }

    @Test func anAcknowledgementForNoActivatedPluginIsAnErrorWithTheNearName() throws {
        let lines = try check("[confinement]\nacknowledge_unenforced = [\"heartbeat-exampel\"]\n", support: Self.full)
        #expect(
            lines == [
                "vigil.toml:8:27: error: [confinement] acknowledge_unenforced names \"heartbeat-exampel\", which is not "
                    + "an activated plugin; did you mean \"heartbeat-example\"? — correct the name or remove it (an "
                    + "acknowledgement applies to one plugin by name)"
            ])
    }

    @Test(arguments: [
        (
            "[confinement]\nacknowledge_unenforcd = []\n",
            "unknown key `acknowledge_unenforcd` in [confinement]; did you mean acknowledge_unenforced?"
        ),
        ("[confinement]\nacknowledge_unenforced = \"heartbeat-example\"\n", "expected an array of strings"),
        ("[confinement]\nacknowledge_unenforced = [\"a\", \"a\"]\n", "\"a\" is listed twice"),
        ("[confinement]\nacknowledge_unenforced = [\"../x\"]\n", "confinement.acknowledge_unenforced"),
    ])
    func aMalformedConfinementTableIsAConfigError(text: String, message: String) throws {
        let lines = try check(text, support: Self.full)
        #expect(lines.count == 1 && lines[0].contains("error:") && lines[0].contains(message), "\(lines)")
    }
}
