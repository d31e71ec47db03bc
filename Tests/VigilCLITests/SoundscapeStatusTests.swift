import Foundation
import Testing
import VigilTestSupport

/// `vigil status` follows the soundscape as `vigil soundscape` changes it: the plugin reports each
/// change, so the status file is rewritten at once (not at the next unrelated event).
@Suite("vigil status follows the soundscape", .serialized, .timeLimit(.minutes(1)))
struct SoundscapeStatusTests {
    @Test("volume, soundscape and pause set through the control channel show in vigil status --json")
    func statusFollowsControlChannel() async throws {
        try await PulseAudioServer.with { server in
            let (project, environment) = try await HostCommandTests.Project.soundscape(on: server)
            defer { project.dir.remove() }
            let child = try ChildProcess(
                VigilExecutable.path, ["up", "--config", project.config], environment: environment,
                stdout: project.dir.path + "/up.out", stderr: project.dir.path + "/up.err")
            defer { child.terminate(grace: 2) }
            func details(_ plugin: [String: Any]) -> [String: Any] { plugin["details"] as? [String: Any] ?? [:] }
            // The volume with two decimals, as text ("0.30").
            func volume(_ plugin: [String: Any]) -> String? { details(plugin)["volume"] as? String }

            let started = try await project.pluginStatus("soundscape") {
                $0["state"] as? String == "running" && details($0)["control_socket"] != nil
            }
            #expect(
                started.flatMap(volume) == "0.30",
                "\(started ?? [:]) \((try? String(contentsOfFile: project.dir.path + "/up.err", encoding: .utf8)) ?? "")"
            )

            #expect(try await project.vigil("soundscape", "volume", "0.5").status == 0)
            let louder = try await project.pluginStatus("soundscape", timeout: 10) { volume($0) == "0.50" }
            #expect(louder.flatMap { details($0)["preset"] as? String } == "high", "\(louder ?? [:])")

            #expect(try await project.vigil("soundscape", "select", "rain").status == 0)
            let rain = try await project.pluginStatus("soundscape", timeout: 10) {
                details($0)["soundscape"] as? String == "rain"
            }
            #expect(rain != nil, "the status still shows the old soundscape")

            #expect(try await project.vigil("soundscape", "pause").status == 0)
            let paused = try await project.pluginStatus("soundscape", timeout: 10) {
                details($0)["playback"] as? String == "paused"
            }
            #expect(paused.flatMap { $0["state"] as? String } == "running", "\(paused ?? [:])")
        }
    }
}
