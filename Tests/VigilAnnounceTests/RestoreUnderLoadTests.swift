import Foundation
import Testing
import VigilAnnounce
import VigilAudio
import VigilTestSupport

/// Issue 26, point 5: with 50+ other streams and the CPU busy, every path out of a prompt —
/// SIGKILL at any point of the ramp, cancellation — leaves no stream lowered once the next
/// announcer (or `--recover`) ran, and the journal is gone only when everything is back.
///
/// A stress check, run with `VIGIL_STRESS=1` (not part of `scripts/test.sh`): on a two-core machine
/// with two busy loops the private PulseAudio server itself sometimes goes away mid-test
/// ("Connection refused" from pactl), which says nothing about the restore; and neither test
/// reproduced the reported window on the code before the fixes (docs/announce.md).
@Suite(
    "Announcements: exact restore under load", .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["VIGIL_STRESS"] == "1", "a stress check: VIGIL_STRESS=1"))
struct RestoreUnderLoadTests {
    static let streams = 52

    /// Runs `body` with a private PulseAudio (module-stream-restore), `streams` players and both
    /// cores kept busy; stops them all after.
    static func withLoad(
        _ body: (PulseAudioServer, TestDirectory, [SinkInputSnapshot]) async throws -> Void
    ) async throws {
        try await PulseAudioServer.with(modules: DuckingTests.modules, directory: "vigil-announce") { server, state in
            var children: [ChildProcess] = []
            defer {
                for child in children { child.signal(SIGKILL) }
                for child in children { child.wait() }
            }
            // Tones that outlast both tests (each ends within about 2 minutes), started in batches
            // so a machine that is busy already admits them all.
            func playing() throws -> Int {
                try server.sinkInputSnapshots().filter { $0.applicationName?.hasPrefix("player-") == true }.count
            }
            for batch in stride(from: 0, to: streams, by: 13) {
                for i in batch..<min(batch + 13, streams) {
                    children.append(
                        try server.playTone(seconds: 240, role: i % 2 == 0 ? "music" : nil, client: "player-\(i)"))
                }
                let expected = min(batch + 13, streams)
                #expect(try await RuntimeFixtures.waitUntil(timeout: 120) { try playing() == expected })
            }
            for _ in 0..<2 { children.append(try ChildProcess("/bin/sh", ["-c", "while :; do :; done"])) }
            let players = try server.sinkInputSnapshots().filter { $0.applicationName?.hasPrefix("player-") == true }
            try await body(server, state, players)
        }
    }

    /// The players whose volume is not what it was in `before`.
    static func changed(_ server: PulseAudioServer, from before: [SinkInputSnapshot]) throws -> [String] {
        let now = try server.sinkInputSnapshots()
        return before.compactMap { stream in
            let volume = now.first { $0.index == stream.index }?.volume
            return volume == stream.volume ? nil : "#\(stream.index) \(String(describing: volume)) ≠ \(stream.volume)"
        }
    }

    @Test("SIGKILL of `vigil announce` at many points of the ramp, then `--recover`: every stream is back exactly")
    func killedAtEveryPointOfTheRamp() async throws {
        try await Self.withLoad { server, state, players in
            let config = try state.write(
                "vigil.toml", "[announce]\nramp_ms = 1000\nducking = \"client\"\npulse_server = \"\(server.address)\"\n"
            )
            var environment = AnnounceHardeningTests.environment(state, server: server.address)
            environment["PULSE_SERVER"] = nil
            let journal = state.url("state/vigil/announce/duck-journal.json")
            // From the journal's first write (before the first volume is lowered) to past the ramp.
            for delay in [0, 15, 40, 80, 130, 200, 300, 450, 650, 900, 1300] {
                let cli = try ChildProcess(
                    VigilExecutable.path,
                    ["announce", "--config", config, "--say", AnnounceHardeningTests.longText],
                    environment: environment)
                let appeared = await RuntimeFixtures.waitUntil(timeout: 60, interval: .milliseconds(2)) {
                    FileManager.default.fileExists(atPath: journal) || !cli.isRunning
                }
                #expect(appeared && cli.isRunning, "no journal before the kill at \(delay) ms")
                if delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
                cli.signal(SIGKILL)
                _ = await blockingCall { cli.wait() }

                let run = try await AnnounceHardeningTests.announce(
                    ["--config", config, "--recover"], environment: environment, timeout: 60)
                #expect(run.status == 0, "after the kill at \(delay) ms: \(run.document)")
                let wrong = try Self.changed(server, from: players)
                #expect(
                    wrong.isEmpty,
                    "after the kill at \(delay) ms, \(wrong.count) stream(s) not back: \(wrong.prefix(5))")
                #expect(!FileManager.default.fileExists(atPath: journal), "journal left after the kill at \(delay) ms")
            }
        }
    }

    @Test("a prompt cancelled at many points of the ramp puts all 52 streams back before it returns")
    func cancelledAtEveryPointOfTheRamp() async throws {
        try await Self.withLoad { server, state, players in
            var settings = AnnounceSettings()
            settings.rampMilliseconds = 1000
            settings.ducking = .client
            let announcer = makeAnnouncer(server, directory: state.path, settings: settings)
            let journal = state.path + "/announce/duck-journal.json"
            for delay in [0, 40, 150, 400, 800, 1200] {
                let task = Task { try await announcer.announce(.play(.silence(seconds: 4))) }
                #expect(
                    await RuntimeFixtures.waitUntil(timeout: 60, interval: .milliseconds(2)) {
                        FileManager.default.fileExists(atPath: journal)
                    }, "no journal before the cancel at \(delay) ms")
                if delay > 0 { try await Task.sleep(for: .milliseconds(delay)) }
                task.cancel()
                let result = await task.result
                if case .failure(let error as AnnounceError) = result {
                    #expect(error.code == .cancelled, "\(error)")
                }
                let wrong = try Self.changed(server, from: players)
                #expect(
                    wrong.isEmpty,
                    "after the cancel at \(delay) ms, \(wrong.count) stream(s) not back: \(wrong.prefix(5))")
                #expect(
                    !FileManager.default.fileExists(atPath: journal), "journal left after the cancel at \(delay) ms")
            }
            await announcer.close()
        }
    }
}
