import Foundation
import Testing
import VigilAnnounce
import VigilAudio
import VigilTestSupport

/// Client-side ducking against a real PulseAudio server (null sink, module-stream-restore):
/// a music player in another process (`paplay`, media.role=music) is lowered during a prompt
/// and put back exactly after.
@Suite("Announcements duck other apps (PulseAudio)", .serialized)
struct DuckingTests {
    static let modules = ["module-stream-restore restore_device=false"]

    /// Runs `body` with a PulseAudio server loading `modules`, a state directory and a music
    /// player (`paplay`, media.role=music) whose stream is up; stops the player after.
    private func withMusic(
        modules: [String] = Self.modules,
        _ body: (PulseAudioServer, TestDirectory, SinkInputSnapshot) async throws -> Void
    ) async throws {
        try await PulseAudioServer.with(modules: modules, directory: "vigil-announce") { server, state in
            let player = try server.playTone(role: "music")
            defer { player.signal(SIGKILL); player.wait() }
            let music = try await server.waitForSinkInput { $0.role == "music" }
            try await body(server, state, music)
        }
    }

    @Test("a music stream drops to the duck level during the prompt (volume and sound) and is restored exactly")
    func duckAndRestore() async throws {
        try await withMusic { server, state, music in
            #expect(await server.waitForSink(state: "RUNNING", timeout: 5))
            let before = try await level(server)
            #expect(before > 0.2, "the tone should be loud before the prompt: \(before)")

            let announcer = makeAnnouncer(server, directory: state.path)
            let watcher = AnnouncementWatcher(announcer)
            let (task, ducked) = try await startAnnouncement(announcer, .play(.silence(seconds: 6)), watcher: watcher)
            let expected = PulseMixer.scaled(music.volume, by: 0.3)
            #expect(ducked.map(\.index) == [music.index])
            let during = try server.sinkInputSnapshots().first { $0.index == music.index }
            #expect(
                during?.volume == expected,
                "volume during the prompt: \(String(describing: during?.volume)), expected \(expected)")
            let duringLevel = try await level(server)
            let ratio = duringLevel / before
            #expect(
                ratio > 0.2 && ratio < 0.4,
                "captured level during the prompt: \(duringLevel) of \(before) (ratio \(ratio))")

            let report = try await task.value
            let after = try server.sinkInputSnapshots().first { $0.index == music.index }
            #expect(
                after?.volume == music.volume,
                "volume after: \(String(describing: after?.volume)), before \(music.volume)")
            #expect(report.method == .client)
            #expect(report.restored == [music.index])
            #expect(report.keptUserChange.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: state.path + "/announce/duck-journal.json"))
            let afterLevel = try await level(server)
            #expect(abs(afterLevel / before - 1) < 0.1, "level after: \(afterLevel), before: \(before)")
        }
    }

    @Test("a volume the user sets during the prompt is kept")
    func userChangeWins() async throws {
        try await withMusic { server, state, music in
            let announcer = makeAnnouncer(server, directory: state.path)
            let watcher = AnnouncementWatcher(announcer)
            let (task, _) = try await startAnnouncement(announcer, .play(.silence(seconds: 2)), watcher: watcher)
            try server.pactl(["set-sink-input-volume", "\(music.index)", "50%"])
            let report = try await task.value
            let after = try server.sinkInputSnapshots().first { $0.index == music.index }
            #expect(after?.volume == [32768, 32768], "\(String(describing: after?.volume))")
            #expect(report.keptUserChange == [music.index])
            #expect(report.restored.isEmpty)
        }
    }

    @Test("a stream that starts during the prompt is ducked too and restored; cancelling stops the prompt")
    func lateStream() async throws {
        try await PulseAudioServer.with(modules: Self.modules, directory: "vigil-announce") { server, state in
            let first = try server.playTone(role: "music")
            defer { first.signal(SIGKILL); first.wait() }
            _ = try await server.waitForSinkInput { $0.role == "music" }
            let announcer = makeAnnouncer(server, directory: state.path)
            let watcher = AnnouncementWatcher(announcer)
            // The prompt (90 s of silence, 8 kHz mono) outlasts any wait below; the test ends it by
            // cancelling once it has seen the late stream lowered, so a slow machine cannot end
            // the prompt first.
            let long = PromptAudio(samples: [Int16](repeating: 0, count: 90 * 8000), sampleRate: 8000, channels: 1)
            let (task, _) = try await startAnnouncement(announcer, .play(long), watcher: watcher)
            let late = try server.playTone(frequency: 880, role: nil, client: "late-player")
            defer { late.signal(SIGKILL); late.wait() }
            let lateDucked = await watcher.wait(timeout: 60) { event -> DuckedStream? in
                if case .duckedLate(_, let stream) = event { stream } else { nil }
            }
            let ducked = try #require(lateDucked, "no duckedLate event: \(watcher.all)")
            #expect(ducked.application == "late-player")
            let during = try server.sinkInputSnapshots().first { $0.index == ducked.index }
            #expect(during?.volume == PulseMixer.scaled(ducked.originalVolume, by: 0.3))
            task.cancel()
            do {
                _ = try await task.value
                Issue.record("the cancelled prompt played to its end")
            } catch let error as AnnounceError {
                #expect(error.code == .cancelled, "\(error)")
            }
            let after = try server.sinkInputSnapshots().first { $0.index == ducked.index }
            #expect(after?.volume == ducked.originalVolume)
            #expect(!FileManager.default.fileExists(atPath: state.path + "/announce/duck-journal.json"))
        }
    }

    @Test("the silent keep-alive is never ducked and keeps the sink RUNNING through the prompt")
    func keepAliveUntouched() async throws {
        try await PulseAudioServer.with(modules: Self.modules, directory: "vigil-announce") { server, state in
            let keepAlive = try await startKeepAlive(server)
            defer { Task { await keepAlive.stop() } }
            #expect(await server.waitForSink(state: "RUNNING", timeout: 5))
            let player = try server.playTone(role: "music")
            defer { player.signal(SIGKILL); player.wait() }
            let music = try await server.waitForSinkInput { $0.role == "music" }
            let ours = try await server.waitForSinkInput { $0.properties["vigil.stream"] == "keep-alive" }
            let announcer = makeAnnouncer(server, directory: state.path)
            let watcher = AnnouncementWatcher(announcer)
            let (task, ducked) = try await startAnnouncement(announcer, .play(.silence(seconds: 2)), watcher: watcher)
            #expect(ducked.map(\.index) == [music.index])
            #expect(try server.sinkInputSnapshots().first { $0.index == ours.index }?.volume == ours.volume)
            #expect(try server.sinkState() == "RUNNING")
            _ = try await task.value
            #expect(try server.sinkState() == "RUNNING")
            #expect(try server.sinkInputSnapshots().first { $0.index == ours.index }?.volume == ours.volume)
            #expect(keepAlive.status.state == .running)
            #expect(keepAlive.status.interruptions == 0)
            await keepAlive.stop()
        }
    }

    @Test("with module-role-ducking loaded, the prompt takes its trigger role and Vigil lowers nothing itself")
    func serverSideDucking() async throws {
        try await withMusic(
            modules: Self.modules + ["module-role-ducking trigger_roles=phone ducking_roles=music volume=-20dB"]
        ) { server, state, music in
            #expect(await server.waitForSink(state: "RUNNING", timeout: 5))
            let before = try await level(server)
            let announcer = makeAnnouncer(server, directory: state.path)
            let watcher = AnnouncementWatcher(announcer)
            let (task, ducked) = try await startAnnouncement(announcer, .play(.silence(seconds: 6)), watcher: watcher)
            #expect(ducked.isEmpty)
            let prompt = try server.sinkInputSnapshots().first { $0.properties["vigil.stream"] == "announcement" }
            #expect(prompt?.role == "phone")
            // The server applies its factor without changing the stream's volume.
            #expect(try server.sinkInputSnapshots().first { $0.index == music.index }?.volume == music.volume)
            let during = try await level(server)
            #expect(during / before < 0.2, "-20 dB from the server: \(during) of \(before)")
            let report = try await task.value
            #expect(report.method == .server(role: "phone"))
        }
    }

    @Test("spoken text is audible from the start of the prompt to its end")
    func speech() async throws {
        try await PulseAudioServer.with(directory: "vigil-announce") { server, state in
            let announcer = makeAnnouncer(server, directory: state.path)
            let text = "Attention please. A signing request is waiting for your approval at the front desk."
            let recording = try await server.startRecording()
            let report = try await announcer.announce(.say(text))
            try await recording.waitForMore(seconds: 0.3)  // the prompt's last samples reach parec
            let speech = AudioAnalysis(interleaved: try await recording.finish())
            #expect(speech.rms > 0.01, "speech RMS \(speech.rms)")
            // 14 words at 175 words a minute: about 4.8 s; espeak-ng pauses at full stops.
            #expect(report.promptSeconds > 2.5 && report.promptSeconds < 10, "\(report.promptSeconds) s")
            // Heard from the first word to the last: the words fill most of the prompt (espeak-ng
            // ends it with a short silence); an underrun on a loaded machine may stretch it a little.
            let span = speech.audibleSpan(threshold: 1000)
            #expect(
                span > 0.85 * report.promptSeconds && span < report.promptSeconds + 0.5,
                "heard for \(span) s of a \(report.promptSeconds) s prompt")
            #expect(report.method == .client)
            #expect(report.ducked.isEmpty)
        }
    }
}

/// The prompt itself: it starts at once and is heard from its first to its last sample.
@Suite("Announcement playback", .serialized)
struct PromptPlaybackTests {
    @Test("a 1 s tone prompt is heard whole, with the keep-alive's 2 s buffer on the sink")
    func heardWhole() async throws {
        try await PulseAudioServer.with(directory: "vigil-announce") { server, state in
            let keepAlive = try await startKeepAlive(server)
            #expect(await server.waitForSink(state: "RUNNING", timeout: 5))
            let announcer = makeAnnouncer(server, directory: state.path)
            let recording = try await server.startRecording()
            let report = try await announcer.announce(
                .play(.tone(frequency: 660, seconds: 1, amplitude: 0.5), policy: .mix))
            try await recording.waitForMore(seconds: 0.3)  // the prompt's last samples reach parec
            let samples = try await recording.finish()
            await keepAlive.stop()
            // Audible 10 ms windows: the tone, from its first to its last sample.
            let heard = Double(AudioAnalysis(interleaved: samples).audibleWindows(threshold: 8000).count) / 100
            #expect(abs(heard - 1.0) < 0.06, "heard \(heard) s of a 1 s prompt")
            // Generous for a loaded machine; before the fix it waited out the sink's ~1.7 s of mixed-ahead audio.
            #expect(report.firstSampleMilliseconds < 1000, "first sample after \(report.firstSampleMilliseconds) ms")
        }
    }
}
