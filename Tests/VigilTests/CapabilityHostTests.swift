import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilPlugin
import VigilTestSupport

@testable import Vigil
@testable import VigilHostCore

/// A host refuses, at start, a plugin whose signed manifest asks for capabilities no review
/// accepted (`capabilities-grown`, never instantiated), runs it once `vigil plugin trust`'s
/// transaction accepted them, and runs a plugin that asks for nothing as before.
@Suite("Capabilities at host start", .timeLimit(.minutes(1)))
struct CapabilityHostTests {
    func host(_ project: HostProject, ledger: InstanceLedger) throws -> VigilHost {
        try VigilHost(
            configPath: project.configPath, registry: PluginRegistry([TestPlugins.implementation(ledger: ledger)]),
            options: VigilHost.Options(publishStatus: false, environment: project.environment),
            logger: TestPlugins.quietLogger)
    }

    @Test func aPluginAskingForUnacceptedCapabilitiesIsRefusedAtStartUntilReviewed() async throws {
        let project = try HostProject()
        defer { project.remove() }
        let asking = try project.signedPlugin(
            "asking", extra: #", "capabilities": {"network": "any", "spawn": ["/bin/sh"]}"#)
        let plain = try project.signedPlugin("plain")
        try project.config(
            """
            plugins = ["asking", "plain"]
            [trusted_plugins]
            asking = "\(asking)"
            plain = "\(plain)"
            """)
        let ledger = InstanceLedger()
        let first = try host(project, ledger: ledger)
        let status = await first.keepAlive()
        guard case .failed(let failure) = status[plugin: "asking"]?.state else {
            Issue.record("expected asking to be failed, got \(String(describing: status[plugin: "asking"]))")
            return
        }
        #expect(failure.code == .refused(.capabilitiesGrown))
        #expect(
            failure.message.hasPrefix("version 1.2.3 asks to connect to any network address; run /bin/sh — no review"),
            "\(failure.message)")
        #expect(failure.message.contains("`vigil plugin trust asking`"))
        #expect(status[plugin: "plain"]?.state == .running, "a plugin that asks for nothing runs as before")
        #expect(ledger.snapshot.made == 1, "the refused plugin never got an instance")
        await first.stop()

        // The operator reviews and accepts what it asks for (vigil plugin trust's transaction).
        let store = try RollbackStore.standard(environment: project.environment)
        let configuration = try HostConfiguration.load(path: project.configPath, environment: project.environment)
        let review = try TrustTransaction.review(
            name: "asking", configuration: configuration, pinned: [], store: store)
        #expect(review.addedCapabilities == ["connect to any network address", "run /bin/sh"])
        _ = try TrustTransaction.commit(review, store: store)

        let second = try host(project, ledger: ledger)
        let after = await second.keepAlive()
        #expect(after[plugin: "asking"]?.state == .running)
        #expect(after[plugin: "plain"]?.state == .running)
        await second.stop()
    }
}
