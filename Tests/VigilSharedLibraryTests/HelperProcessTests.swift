import Foundation
import Testing
import Vigil
import VigilCore
import VigilPlugin
import VigilTestSupport

/// Each shared-library plugin runs in `vigil-plugin-helper`, a process of its own started with a
/// fresh exec: nothing of the host's memory or descriptors, in the host's cgroup, gone with the
/// plugin; a helper that dies or hangs fails the plugin with a code. (Its plugin names differ from
/// the other suites', which run in parallel and look for their own names in this process's children.)
@Suite("Shared-library plugins in a helper process", .serialized, .timeLimit(.minutes(2)))
struct HelperProcessTests {
    private func running(_ f: NativePluginFixture, _ name: String, settings: String? = nil) async throws -> (
        VigilHost, PluginStatus
    ) {
        try await f.simplePlugin(name, settings: settings)
        try f.config([name])
        let host = try f.host()
        let status = try #require(await host.keepAlive()[plugin: name])
        return (host, status)
    }

    private func text(_ path: String) -> String {
        String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
    }

    /// Waits (as long as the suite's limit) for `name`'s resume failure and returns its reason.
    private func resumeFailure(_ events: AsyncStream<HostEvent>, _ name: String) async -> String? {
        for await event in events where event.plugin == name {
            if case .resumeFailed(let reason) = event.kind { return reason }
        }
        return nil
    }

    @Test("the plugin runs in a fresh helper process: only its socket and memfds open, the host's cgroup, gone at stop")
    func runsInHelper() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let (host, status) = try await running(f, "solo")
        #expect(status.state == .running)
        #expect(status.details["who"] == "solo")
        let pid = try #require(status.details["helper-pid"].flatMap { Int32($0) })
        #expect(NativePluginFixture.childProcesses().contains(pid), "a child of the host")
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
        #expect(exe.hasSuffix("/vigil-plugin-helper"), "a fresh exec of the helper, not a fork of the host: \(exe)")
        #expect(text("/proc/\(pid)/cgroup") == text("/proc/self/cgroup"), "in the host's cgroup")
        let maps = text("/proc/\(pid)/maps")
        #expect(maps.contains("vigil-plugin:solo:"), "the plugin is mapped in the helper")
        #expect(!text("/proc/self/maps").contains("vigil-plugin:solo:"), "and not in the host")
        // Nothing of the host's descriptors: 0-2, the socket on 3, its memfds, its report pipe.
        for (fd, target) in NativePluginFixture.descriptors(of: pid) where fd > 2 {
            #expect(
                (fd == 3 && target.hasPrefix("socket:")) || target.contains("memfd:vigil-plugin:solo:")
                    || target.hasPrefix("pipe:"),
                "descriptor \(fd) of the helper is \(target)")
        }
        #expect(status.details["confinement"]?.isEmpty == false)
        await host.stop()
        #expect(!NativePluginFixture.childProcesses().contains(pid), "the helper is gone after stop")
        #expect(kill(pid, 0) != 0, "and reaped")
        #expect(f.markerLines("solo") == ["start solo", "stop solo"])
    }

    @Test("a helper killed from outside while the plugin runs: the plugin fails with the PID, the signal and the code")
    func helperKilled() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let (host, status) = try await running(f, "killed")
        let events = host.events
        let pid = try #require(status.details["helper-pid"].flatMap { Int32($0) })
        #expect(kill(pid, SIGKILL) == 0)
        let reason = try #require(await resumeFailure(events, "killed"))
        #expect(reason.contains("PID \(pid)"), "\(reason)")
        #expect(reason.contains("killed by signal 9"), "\(reason)")
        #expect(reason.contains("plugin-helper-died"), "\(reason)")
        #expect(status.details["helper-pid"] != nil)
        if case .failed(let failure) = await host.status()[plugin: "killed"]?.state {
            #expect(failure.code.description == "resume-failed")
        } else {
            Issue.record("killed is not failed")
        }
        await host.stop()
        // The next keepAlive() starts a fresh helper.
        let again = try #require(await host.keepAlive()[plugin: "killed"])
        #expect(again.state == .running)
        #expect(again.details["helper-pid"] != String(pid))
        await host.stop()
    }

    @Test("the plugin's own code crashes in its helper: the host lives on and the plugin fails with the signal")
    func pluginCrashes() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("bystander")
        try await f.simplePlugin("crasher", settings: #"{"marker": "\#(f.marker("crasher"))", "crash": true}"#)
        try f.config(["crasher", "bystander"])
        let host = try f.host()
        let events = host.events
        // It crashes 0.2 s after its start returned: keepAlive() may already see it failed.
        _ = await host.keepAlive()
        #expect(f.markerLines("crasher") == ["start crasher"], "it started")
        let reason = try #require(await resumeFailure(events, "crasher"))
        #expect(reason.contains("killed by signal 6"), "\(reason)")
        #expect(reason.contains("plugin-helper-died"), "\(reason)")
        #expect(await host.status()[plugin: "bystander"]?.state == .running, "another plugin is not affected")
        await host.stop()
    }

    @Test("a helper that does not answer within its deadline is killed, and the plugin fails with the code")
    func helperHangs() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("hanger", settings: #"{"marker": "\#(f.marker("hanger"))", "hang_details": true}"#)
        try f.config(["hanger"])
        let host = try f.host()
        let events = host.events
        let clock = ContinuousClock()
        let started = clock.now
        // The status keepAlive() returns asks for details: the helper never answers.
        let status = await host.keepAlive()[plugin: "hanger"]
        #expect(clock.now - started < .seconds(8), "the host waited past the helper's deadline")
        #expect(status?.details["who"] == nil)
        let reason = try #require(await resumeFailure(events, "hanger"))
        #expect(reason.contains("plugin-helper-timeout"), "\(reason)")
        #expect(reason.contains("did not report details within 2 s"), "\(reason)")
        #expect(f.markerLines("hanger") == ["start hanger"])
        await host.stop()
        #expect(NativePluginFixture.mappings(of: "hanger").isEmpty, "the helper was killed")
    }
}
