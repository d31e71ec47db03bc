import Foundation
import Testing
import VigilAnnounce
import VigilAudio
import VigilTestSupport

/// Client-side ducking on pipewire-pulse (its role policy cannot duck for a protocol client).
@Suite("Announcements duck other apps (pipewire-pulse)", .serialized)
struct PipeWireDuckingTests {
    @Test("a music stream is lowered during the prompt and put back after")
    func duckAndRestore() async throws {
        try await PipeWireServer.with(directory: "vigil-announce") { server, state in
            let player = try server.playTone(role: "music")
            defer { player.signal(SIGKILL); player.wait() }
            // pipewire-pulse lists a new stream before its volume is applied (all channels 0 for
            // a moment): wait for the volume the ducking must put back.
            let music = try await server.waitForSinkInput { $0.role == "music" && $0.volume.contains { $0 > 0 } }
            let before = try await level(server)
            #expect(before > 0.2, "the tone should be loud before the prompt: \(before)")
            let announcer = makeAnnouncer(
                server, directory: state.path, settings: AnnounceSettings(sink: server.sinkName))
            let watcher = AnnouncementWatcher(announcer)
            let (task, ducked) = try await startAnnouncement(announcer, .play(.silence(seconds: 6)), watcher: watcher)
            #expect(ducked.map(\.index) == [music.index])
            let during = try server.sinkInputSnapshots().first { $0.index == music.index }
            let expected = PulseMixer.scaled(music.volume, by: 0.3)
            #expect(
                during?.volume.isClose(to: expected) == true, "\(String(describing: during?.volume)) vs \(expected)")
            let duringLevel = try await level(server)
            #expect(duringLevel / before < 0.45, "captured level during the prompt: \(duringLevel) of \(before)")
            let report = try await task.value
            #expect(report.restored == [music.index])
            let after = try server.sinkInputSnapshots().first { $0.index == music.index }
            #expect(
                after?.volume.isClose(to: music.volume) == true,
                "\(String(describing: after?.volume)) vs \(music.volume)")
        }
    }
}
