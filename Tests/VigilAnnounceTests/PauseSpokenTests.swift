import Foundation
import Testing
import VigilAnnounce
import VigilAudio
import VigilTestSupport

/// `pause-spoken` against real MPRIS players on a private dbus-daemon, read back with playerctl.
@Suite("Announcements pause spoken audio", .serialized)
struct PauseSpokenTests {
    static let fixture = RuntimeFixtures.fixtureScript("mpris_player.py")

    static func status(_ player: String, bus: DBusDaemon) -> String? { bus.playerStatus(player) }

    @Test("a playing player is paused for the prompt and resumed after; a paused one is left paused")
    func pausesAndResumes() async throws {
        try await PulseAudioServer.with(directory: "vigil-announce") { server, state in
            let bus = try DBusDaemon()
            defer { bus.stop() }
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            let podcast = try ChildProcess(
                "/usr/bin/python3", [Self.fixture, "podcast", "Playing"], environment: environment)
            defer { podcast.signal(SIGKILL); podcast.wait() }
            let radio = try ChildProcess(
                "/usr/bin/python3", [Self.fixture, "radio", "Paused"], environment: environment)
            defer { radio.signal(SIGKILL); radio.wait() }
            #expect(
                await RuntimeFixtures.waitUntil(timeout: 10) {
                    Self.status("podcast", bus: bus) == "Playing" && Self.status("radio", bus: bus) == "Paused"
                })

            let announcer = makeAnnouncer(
                server, directory: state.path,
                settings: AnnounceSettings(
                    policy: .pauseSpoken, players: ["podcast", "radio", "absent"], sessionBus: bus.address))
            let watcher = AnnouncementWatcher(announcer)
            let (task, ducked) = try await startAnnouncement(announcer, .play(.silence(seconds: 2)), watcher: watcher)
            #expect(ducked.isEmpty)
            #expect(Self.status("podcast", bus: bus) == "Paused")
            let report = try await task.value
            #expect(report.pausedPlayers == ["org.mpris.MediaPlayer2.podcast"])
            #expect(Self.status("podcast", bus: bus) == "Playing")
            #expect(Self.status("radio", bus: bus) == "Paused")
        }
    }
}
