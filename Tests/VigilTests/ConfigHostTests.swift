import Foundation
import Testing
import VigilCore
import VigilPlugin
import VigilTestSupport

@testable import Vigil
@testable import VigilHostCore

/// `VigilHost(configPath:)` with real signed plugins: verified → registry → prepared; anything
/// that does not verify, is not trusted or names an unknown entry stays failed and never gets an instance.
@Suite("Config-based host with signed plugins", .timeLimit(.minutes(1)))
struct ConfigHostTests {
    private func options(_ project: HostProject, publish: Bool = false) -> VigilHost.Options {
        VigilHost.Options(publishStatus: publish, environment: project.environment)
    }

    /// A host of `project`'s vigil.toml whose only plugin implementation is the test plugin, recording into `ledger`.
    private func makeHost(_ project: HostProject, ledger: InstanceLedger) throws -> VigilHost {
        try VigilHost(
            configPath: project.configPath, registry: PluginRegistry([TestPlugins.implementation(ledger: ledger)]),
            options: options(project), logger: TestPlugins.quietLogger)
    }

    @Test("a trusted plugin runs with manifest settings overlaid by its vigil.toml table and the [host] name")
    func trustedPluginRuns() async throws {
        let project = try HostProject()
        defer { project.remove() }
        let fp = try project.signedPlugin("alpha", requirements: #"[{"kind": "background-mode", "value": "audio"}]"#)
        try project.config(
            """
            plugins = ["alpha"]
            [host]
            name = "signer-node"
            background_modes = ["audio"]
            [trusted_plugins]
            alpha = "\(fp)"
            [alpha]
            mode = "sine"
            """)
        let ledger = InstanceLedger()
        let host = try makeHost(project, ledger: ledger)
        #expect(host.hostName == "signer-node")
        #expect(host.unsafePlugins.isEmpty)
        let status = try #require(await host.keepAlive()[plugin: "alpha"])
        #expect(status.state == .running)
        #expect(status.version == "1.2.3")
        #expect(status.details == ["mode": "sine", "host": "signer-node"])
        #expect(ledger.snapshot.made == 1)
        await host.stop()
        #expect(ledger.snapshot.live == 0)
        // The accepted version was recorded for rollback protection in the project's state dir.
        #expect(FileManager.default.fileExists(atPath: project.dir.path + "/state/vigil/rollback.json"))
    }

    @Test("a tampered manifest stays failed with invalid-signature and is never instantiated; the others run")
    func tamperedPluginNeverInstantiated() async throws {
        let project = try HostProject()
        defer { project.remove() }
        let good = try project.signedPlugin("good")
        let bad = try project.signedPlugin("bad")
        try project.tamper("bad")
        try project.config(
            """
            plugins = ["bad", "good"]
            [trusted_plugins]
            good = "\(good)"
            bad = "\(bad)"
            """)
        let ledger = InstanceLedger()
        let host = try makeHost(project, ledger: ledger)
        for _ in 0..<3 {
            let status = await host.keepAlive()
            guard case .failed(let failure) = status[plugin: "bad"]?.state else {
                Issue.record("expected bad to be failed, got \(String(describing: status[plugin: "bad"]))")
                return
            }
            #expect(failure.code == .refused(.invalidSignature))
            // The plugin is a field, rendered once (the description), not baked into the message.
            #expect(failure.plugin == "bad" && !failure.message.hasPrefix("[bad] "))
            #expect(failure.description == "[bad] " + failure.message)
            #expect((failure.cause?.error as? CoreError)?.code == .invalidSignature, "the refusal stays typed")
            #expect(status[plugin: "good"]?.state == .running)
            await host.stop()
            #expect(await host.status()[plugin: "bad"]?.state.name == "failed")
        }
        #expect(ledger.snapshot.made == 3, "only `good` may ever be instantiated (once per start)")
        #expect(ledger.snapshot.violations.isEmpty)
    }

    @Test(
        "untrusted key, unknown entry and a not-activated unsigned plugin: failed with the core's remedy, no instance")
    func refusedPlugins() async throws {
        let project = try HostProject()
        defer { project.remove() }
        try project.signedPlugin("stranger")
        let fp = try project.signedPlugin("odd", entry: "no-such-entry")
        try project.signedPlugin("raw", sign: false)
        try project.config(
            """
            plugins = ["stranger", "odd", "raw"]
            [trusted_plugins]
            odd = "\(fp)"
            """)
        let ledger = InstanceLedger()
        let host = try makeHost(project, ledger: ledger)
        let status = await host.keepAlive()
        func failure(_ name: String) -> PluginFailure? {
            if case .failed(let f) = status[plugin: name]?.state { f } else { nil }
        }
        #expect(failure("stranger")?.code == .refused(.untrustedKey))
        #expect(failure("stranger")?.message.contains("vigil plugin trust stranger") == true)
        #expect(failure("odd")?.code == .plugin(.unknownEntry))
        #expect(failure("odd")?.message.contains("\"no-such-entry\"") == true)
        #expect(failure("raw")?.code == .refused(.notSigned))
        #expect(ledger.snapshot.made == 0)
        await host.stop()
    }

    @Test("an acknowledged unsigned plugin runs and is reported as unsafe")
    func acknowledgedUnsafe() async throws {
        let project = try HostProject()
        defer { project.remove() }
        try project.signedPlugin("dev", sign: false)
        try project.config(
            """
            plugins = ["dev"]
            acknowledge_unsafe_plugins = ["dev"]
            """)
        let ledger = InstanceLedger()
        let host = try makeHost(project, ledger: ledger)
        #expect(host.unsafePlugins == ["dev"])
        #expect(await host.keepAlive()[plugin: "dev"]?.state == .running)
        await host.stop()
    }

    @Test("an unmet declaration blocks a verified plugin with the exact fix")
    func unmetDeclarationBlocks() async throws {
        let project = try HostProject()
        defer { project.remove() }
        let fp = try project.signedPlugin("svc", requirements: #"[{"kind": "service", "value": "supervisor"}]"#)
        try project.config("plugins = [\"svc\"]\n[trusted_plugins]\nsvc = \"\(fp)\"\n")
        let ledger = InstanceLedger()
        let host = try makeHost(project, ledger: ledger)
        let state = await host.keepAlive()[plugin: "svc"]?.state
        #expect(
            state?.description
                == "blocked by a missing declaration: requires services to include \"supervisor\" — add it under [host] in vigil.toml: services = [\"supervisor\"]"
        )
        #expect(ledger.snapshot.made == 0)
    }

    @Test("a broken vigil.toml is a configuration error with path:line:column; a missing one says how to fix it")
    func configurationErrors() async throws {
        let project = try HostProject()
        defer { project.remove() }
        try project.config("plugins = [\"a\"]\nunknown_key = 1\n")
        #expect {
            try VigilHost(configPath: project.configPath, options: options(project), logger: TestPlugins.quietLogger)
        } throws: { error in
            guard let error = error as? VigilError else { return false }
            return error.code == .configuration && error.message.contains("vigil.toml:2:1")
        }
        #expect {
            try VigilHost(
                configPath: project.dir.path + "/missing.toml", options: options(project),
                logger: TestPlugins.quietLogger)
        } throws: { error in
            (error as? VigilError)?.message.contains("does not exist") == true
        }
    }

    @Test("Vigil.keepAlive()/stop(): one shared host, reused, stopped and restarted; another config is refused")
    func sharedHostConvenience() async throws {
        let project = try HostProject()
        defer { project.remove() }
        let fp = try project.signedPlugin("shared")
        try project.config("plugins = [\"shared\"]\n[trusted_plugins]\nshared = \"\(fp)\"\n")
        let ledger = InstanceLedger()
        let registry = PluginRegistry([TestPlugins.implementation(ledger: ledger)])
        resetSharedHost()
        defer { resetSharedHost() }
        let first = try sharedHost(
            configPath: project.configPath, logger: TestPlugins.quietLogger, registry: registry,
            options: options(project))
        // The public calls now reuse that host.
        let again = try await Vigil.keepAlive(configPath: project.configPath)
        #expect(first === again)
        #expect(await again.status()[plugin: "shared"]?.state == .running)
        #expect(try await Vigil.keepAlive() === first)  // nil config: the shared host, whatever the cwd
        await Vigil.stop()
        #expect(await first.status()[plugin: "shared"]?.state == .idle)
        #expect(ledger.snapshot.live == 0)
        #expect(throws: VigilError.self) {
            try sharedHost(configPath: project.dir.path + "/other.toml", logger: TestPlugins.quietLogger)
        }
        // Concurrent callers through the convenience API settle consistently.
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                group.addTask { if i % 2 == 0 { _ = try? await Vigil.keepAlive() } else { await Vigil.stop() } }
            }
        }
        _ = try await Vigil.keepAlive()
        #expect(await first.status()[plugin: "shared"]?.state == .running)
        await Vigil.stop()
        #expect(ledger.snapshot.live == 0)
        #expect(ledger.snapshot.violations.isEmpty)
    }
}
