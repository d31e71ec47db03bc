import Foundation
import Logging
import Testing
import Vigil
import VigilCore
import VigilPlugin
import VigilTestSupport

/// The example third-party plugin in Examples/HeartbeatPlugin: written in Swift with
/// VigilPluginSDK, shipped as the shared library its manifest (signed with the examples key) names.
@Suite("Example shared-library plugin", .serialized, .timeLimit(.minutes(2)))
struct ExamplePluginTests {
    static let directory = VigilExecutable.packageRoot + "/Examples/HeartbeatPlugin"
    static let fingerprint = "ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY="

    /// A `vigil.toml` activating and trusting the example, with `table` as its `[heartbeat-example]`
    /// table (line 6 onwards).
    static func config(_ table: String) -> String {
        """
        plugins = ["heartbeat-example"]
        plugin_paths = ["\(directory)"]
        [trusted_plugins]
        heartbeat-example = "\(fingerprint)"
        [heartbeat-example]
        \(table)
        """
    }

    /// Reviews and trusts the example for `dir`'s `vigil.toml` as `vigil plugin trust heartbeat-example
    /// --yes` does: its capabilities are recorded as accepted in the rollback state under `dir/state`
    /// (a plugin that declares capabilities fails closed without that record).
    static func trust(_ dir: TestDirectory) throws {
        let environment = dir.environment()
        let config = try HostConfiguration.load(path: dir.path + "/vigil.toml", environment: environment)
        let store = try RollbackStore.standard(environment: environment)
        let review = try TrustTransaction.review(
            name: "heartbeat-example", configuration: config, pinned: [], store: store)
        _ = try TrustTransaction.commit(review, store: store)
    }

    private func beats(_ path: String) -> Int? {
        guard let text = try? TextFile.read(path), text.hasPrefix("beat ") else { return nil }
        return Int(text.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test("the signed example loads and runs through keepAlive()/stop(), and again after a stop")
    func signedExampleRuns() async throws {
        let dir = try TestDirectory("vigil-example")
        defer { dir.remove() }
        try FileManager.default.createDirectory(
            atPath: dir.path + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // The default file: heartbeat in its state directory, the one file its manifest declares.
        let beat = dir.path + "/state/vigil/plugins/heartbeat-example/heartbeat"
        try dir.write("vigil.toml", Self.config("interval_ms = 100"))
        try Self.trust(dir)
        let host = try VigilHost(
            configPath: dir.path + "/vigil.toml",
            options: VigilHost.Options(
                publishStatus: false,
                environment: RequirementChecker.Environment(
                    variables: [
                        "XDG_STATE_HOME": dir.path + "/state", "XDG_RUNTIME_DIR": dir.path + "/run", "HOME": dir.path,
                    ],
                    soundDeviceDirectory: "/nonexistent-vigil-snd")),
            logger: Logger(label: "example-test", factory: { _ in SwiftLogNoOpLogHandler() }))
        for round in 1...2 {
            let status = try #require(await host.keepAlive()[plugin: "heartbeat-example"])
            #expect(status.state == .running, "round \(round): \(status.state)")
            #expect(status.version == "0.3.0")
            #expect(status.details["file"] == beat)
            #expect(status.details["interval_ms"] == "100")
            let confinement = status.details["confinement"] ?? ""
            #expect(confinement.hasPrefix("confined (Landlock ABI "), "round \(round): \(confinement)")
            let start = beats(beat) ?? 0
            let advanced = await RuntimeFixtures.waitUntil(timeout: 20) { (beats(beat) ?? 0) >= start + 3 }
            #expect(advanced, "round \(round): the heartbeat file advances while running")
            await host.stop()
            #expect(await host.status()[plugin: "heartbeat-example"]?.state == .idle)
        }
    }

    @Test(
        "a shared-library plugin's table is checked against its signed schema before the library is mapped",
        arguments: [
            ("interval_ms = 5", "setting `interval_ms`: 5 is out of range; use an integer from 100 to 3600000"),
            ("intervall_ms = 500", "setting `intervall_ms`: unknown setting; did you mean `interval_ms`?"),
            ("file = 3", "setting `file`: expected a non-empty string, found integer 3"),
        ])
    func settingsCheckedBeforeMapping(_ example: (String, String)) async throws {
        let dir = try TestDirectory("vigil-example-settings")
        defer { dir.remove() }
        try dir.write("vigil.toml", Self.config(example.0))
        try Self.trust(dir)
        let host = try VigilHost(
            configPath: dir.path + "/vigil.toml",
            options: VigilHost.Options(publishStatus: false, environment: dir.environment()),
            logger: Logger(label: "example-test", factory: { _ in SwiftLogNoOpLogHandler() }))
        guard case .failed(let failure) = await host.status()[plugin: "heartbeat-example"]?.state else {
            Issue.record("expected heartbeat-example to be failed")
            return
        }
        #expect(failure.code == .plugin(.invalidSetting))
        #expect(failure.message.contains(example.1), "\(failure.message)")
        #expect(failure.message.contains(dir.path + "/vigil.toml:6:"), "\(failure.message)")
    }
}
