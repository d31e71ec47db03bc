import Foundation
import Testing
import VigilTestSupport

/// The ALSA backend against a real sound server: `device = "default"` reaches PulseAudio through
/// the ALSA pulse plugin (Debian's 99-pulse.conf routes `default` there when a server runs).
/// Runs in its own process (the `SilentEngineBench` host), because ALSA reads that routing once
/// per process, when it first loads its configuration.
@Suite("ALSA backend through the sound server", .serialized)
struct ALSABackendTests {
    @Test(
        "device=default: sink RUNNING, stream named with no media role, interrupted and resumed across a server restart"
    )
    func throughThePulsePlugin() async throws {
        let host = try RestartLeakTests.requireBenchHost()
        try await PulseAudioServer.with { server in
            let output = server.directory.appendingPathComponent("host.out").path
            var environment = server.environment
            environment["PULSE_PROP"] = "media.role=music"
            let child = try ChildProcess(
                host.path, ["device=default", "retry_initial_ms=50", "retry_max_ms=400"],
                environment: environment, stdout: output, stderr: "/dev/null")
            defer {
                child.signal(SIGKILL)
                child.wait()
            }
            func lines() -> [String] { RestartLeakTests.lines(output) }
            func waitForLine(_ predicate: (String) -> Bool, timeout: Double) async throws -> Bool {
                let deadline = Date().addingTimeInterval(timeout)
                while Date() < deadline {
                    if lines().contains(where: predicate) { return true }
                    try await Task.sleep(nanoseconds: 50_000_000)
                }
                return lines().contains(where: predicate)
            }
            try #require(try await waitForLine({ $0 == "ready" }, timeout: 10), "host output: \(lines())")
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2))
            let inputs = try server.sinkInputs()
            #expect(inputs.contains("application.name = \"silent-engine-bench (Vigil keep-alive)\""), "\(inputs)")
            #expect(!inputs.contains("media.role"), "\(inputs)")
            // The ALSA plugin's stream ("ALSA Playback"), not the native backend's ("keep-alive").
            #expect(inputs.contains("media.name = \"ALSA Playback\""), "\(inputs)")

            try await server.restart()
            #expect(try await waitForLine({ $0.hasPrefix("event interrupted") }, timeout: 3), "host output: \(lines())")
            #expect(lines().first { $0.hasPrefix("event interrupted") }?.contains("snd_pcm") == true, "\(lines())")
            #expect(try await waitForLine({ $0 == "event resumed" }, timeout: 3), "host output: \(lines())")
            #expect(await server.waitForSink(state: "RUNNING", timeout: 2))

            child.signal(SIGTERM)
            _ = await blockingCall { child.wait() }
            #expect(lines().last == "stopped")
        }
    }
}
