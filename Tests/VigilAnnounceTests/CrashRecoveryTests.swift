import Foundation
import Testing
import Vigil
import VigilAnnounce
import VigilAudio
import VigilCore
import VigilPlugin
import VigilTestSupport

/// A process killed (SIGKILL) mid-prompt leaves the other apps lowered; the next start puts
/// their volume and module-stream-restore's saved entry back.
@Suite("Announcements: nothing left quiet after a crash", .serialized)
struct CrashRecoveryTests {
    /// module-stream-restore's entry `name`, read over the protocol (on a thread of its own).
    static func restoreEntry(_ server: PulseAudioServer, _ name: String) async -> PulseMixer.RestoreEntry? {
        let address = server.address
        return await blockingCall { () -> PulseMixer.RestoreEntry? in
            let mixer = PulseMixer(server: address, applicationName: "vigil-tests", logger: quietLogger)
            guard (try? mixer.connect()) != nil else { return nil }
            return (try? mixer.restoreEntries())??.first { $0.name == name }
        }
    }

    @Test(
        "SIGKILL of `vigil announce` mid-prompt, then a host start: volume and stream-restore entry are back",
        arguments: [true, false])
    func killedMidPrompt(playerStillPlaying: Bool) async throws {
        try await PulseAudioServer.with(modules: DuckingTests.modules, directory: "vigil-announce") { server, state in
            let player = try server.playTone(role: "music")
            defer { player.signal(SIGKILL); player.wait() }
            let first = try await server.waitForSinkInput { $0.role == "music" }
            // The user's own level for music, which module-stream-restore saves.
            try server.pactl(["set-sink-input-volume", "\(first.index)", "80%"])
            let music = try await server.waitForSinkInput { $0.index == first.index && $0.volume != first.volume }
            let key = try #require(music.properties["module-stream-restore.id"])
            #expect(key == "sink-input-by-media-role:music")
            let entryBefore = try #require(await Self.restoreEntry(server, key))
            #expect(entryBefore.volume == music.volume)

            var environment = server.environment
            environment["XDG_STATE_HOME"] = state.path
            let cli = try ChildProcess(
                VigilExecutable.path,
                [
                    "announce", "--say",
                    "This announcement is long enough to be interrupted by a crash before it ends, "
                        + "so the music stays lowered until somebody puts it back.",
                ],
                environment: environment, stderr: state.url("cli.log"))
            let ducked = PulseMixer.scaled(music.volume, by: 0.3)
            _ = try await server.waitForSinkInput(timeout: 20) { $0.index == music.index && $0.volume == ducked }
            #expect(FileManager.default.fileExists(atPath: state.path + "/vigil/announce/duck-journal.json"))
            cli.signal(SIGKILL)
            _ = await blockingCall { cli.wait() }
            // Left lowered, and module-stream-restore saved the lowered volume for music.
            #expect(try server.sinkInputSnapshots().first { $0.index == music.index }?.volume == ducked)
            #expect(await Self.restoreEntry(server, key)?.volume == ducked)
            if !playerStillPlaying {
                // The music app quits while lowered: only its saved entry remains to put back.
                player.signal(SIGKILL)
                _ = await blockingCall { player.wait() }
                #expect(try await RuntimeFixtures.waitUntil(timeout: 5) { try server.sinkInputSnapshots().isEmpty })
            }

            // The next start of a host restores before its plugins start.
            var variables = ProcessInfo.processInfo.environment
            variables["XDG_STATE_HOME"] = state.path
            let host = try VigilHost(
                plugins: [],
                options: VigilHost.Options(
                    publishStatus: false, environment: .init(variables: variables),
                    announce: AnnounceSettings(pulseServer: server.address)),
                logger: quietLogger)
            let events = host.announcements
            await host.keepAlive()
            if playerStillPlaying {
                #expect(try server.sinkInputSnapshots().first { $0.index == music.index }?.volume == music.volume)
            }
            #expect(await Self.restoreEntry(server, key) == entryBefore)
            #expect(!FileManager.default.fileExists(atPath: state.path + "/vigil/announce/duck-journal.json"))
            var iterator = events.makeAsyncIterator()
            if case .recovered(let report) = await iterator.next() {
                // A playing stream put back re-saves its own entry; a gone one's entry is rewritten.
                #expect(report.restored == (playerStillPlaying ? [music.index] : []))
                #expect(report.restoreEntries == (playerStillPlaying ? [] : [key]))
            } else {
                Issue.record("no recovered event")
            }
            await host.stop()
        }
    }
}
