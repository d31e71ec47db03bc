import Foundation
import Testing
import VigilPlugin
import VigilSoundFile
import VigilTestSupport

@testable import VigilSoundscape

@Suite("soundscape: vigil soundscape and user files, on PulseAudio", .serialized)
struct CLIAndFilesTests {
    @Test("`vigil soundscape` drives a running host through its socket; exit codes 0, 1, 3, 64; --json is one document")
    func cli() async throws {
        try await PulseAudioServer.with(directory: "vigil-soundscape") { server, state in
            let plugin = try makePlugin(server, state: state.path)
            try await plugin.start()
            let socket = controlSocket(server, state: state.path)
            func vigil(_ arguments: [String]) async throws -> VigilExecutable.Output {
                try await VigilExecutable.run(["soundscape"] + arguments + ["--socket", socket], in: state.path)
            }
            var out = try await vigil(["select", "rain"])
            #expect(out.status == 0, "\(out.stderr)")
            #expect(out.stdout.contains("Rain (rain): playing, volume 0.30 (med)"), "\(out.stdout)")
            out = try await vigil(["preset", "high"])
            #expect(out.stdout.contains("volume 0.50 (high)"))
            #expect(SoundscapeController.running?.current.volume == 0.5)
            out = try await vigil(["list", "--json"])
            let document = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])
            #expect((document["soundscapes"] as? [[String: Any]])?.count == 4)
            out = try await vigil(["select", "forest"])
            #expect(out.status == 1)
            #expect(out.stderr.contains("no soundscape \"forest\""), "\(out.stderr)")
            out = try await vigil(["volume", "2"])
            #expect(out.status == 64)
            out = try await vigil(["pause"])
            #expect(out.stdout.contains("paused"))
            #expect(try server.sinkState() == "RUNNING")
            await plugin.stop()
            out = try await vigil(["--json"])
            #expect(out.status == 3)
            let failure = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])
            #expect(failure["ok"] as? Bool == false)
        }
    }

    @Test("another user cannot use the control channel: the directory stops them, and so does the peer check")
    func otherUser() async throws {
        try await PulseAudioServer.with(directory: "vigil-soundscape") { server, state in
            let (plugin, controller) = try await startPlugin(server, state: state.path)
            let socket = controlSocket(server, state: state.path)
            let script = """
                import socket, sys
                s = socket.socket(socket.AF_UNIX)
                try:
                    s.connect(sys.argv[1])
                except OSError as e:
                    print("refused", e.errno); sys.exit(0)
                try:
                    # The host may close the refused connection before the request is sent (EPIPE).
                    s.sendall(b'{"command":"pause"}\\n')
                    print("answer", repr(s.recv(4096)))
                except OSError as e:
                    print("answer b''", e.errno)
                """
            func asNobody() throws -> String {
                // runuser switches every uid and drops root's capabilities (setpriv --reuid keeps them).
                try ChildProcess.run(
                    "/usr/sbin/runuser", ["-u", "nobody", "--", "/usr/bin/python3", "-c", script, socket])
            }
            // The socket's directory is 0700: another user cannot even reach the socket.
            #expect(try asNobody().hasPrefix("refused 13"))
            // Opened up by mistake (every directory down to it), the host still refuses: it checks
            // the caller's uid.
            var directory = (socket as NSString).deletingLastPathComponent
            while directory.count >= server.directory.path.count {
                chmod(directory, 0o755)
                directory = (directory as NSString).deletingLastPathComponent
            }
            chmod(socket, 0o666)
            let answer = try asNobody()
            #expect(answer.contains("answer b''"), "\(answer)")
            #expect(controller.current.playback == .playing)
            // The owner still gets answers (the channel is alive, so the refusal above was the check).
            let mine = try await offThread {
                Result { () throws(SoundscapeError) in
                    try SoundscapeClient(path: socket).send(ControlRequest(command: "pause"))
                }
            }.get()
            #expect(mine.state?.playback == .paused)
            await plugin.stop()
        }
    }

    @Test("configured files are measured, listed (paths escaped) and played; a bad one is left out and reported")
    func files() async throws {
        try await PulseAudioServer.with(directory: "vigil-soundscape") { server, state in
            let tone = state.url("tone.ogg")
            let writer = try SoundFileWriter(path: tone, format: .oggVorbis, sampleRate: 44_100, channels: 2)
            try writer.write(
                (0..<(3 * 44_100)).flatMap { i -> [Float] in
                    let v = Float(0.5 * sin(2 * Double.pi * 330 * Double(i) / 44_100))
                    return [v, v]
                })
            try writer.finish()
            let broken = try state.write("broken.mp3", "ID3 but not really")
            // A path that would forge a line and reverse the text after it on a terminal.
            let tricky = state.url("tone\u{202E}ggo.exe\nforged.ogg")
            try FileManager.default.copyItem(atPath: tone, toPath: tricky)
            let plugin = try makePlugin(
                server, state: state.path,
                [
                    "files": .table(["tone": .string(tone), "broken": .string(broken), "tricky": .string(tricky)]),
                    "soundscape": .string("tone"), "volume": .double(1),
                ])
            try await plugin.start()
            let controller = try #require(SoundscapeController.running)
            #expect(
                controller.soundscapes.map(\.id) == [
                    "ocean-waves", "rain", "brown-noise", "pink-noise", "tone", "tricky",
                ])
            #expect(controller.current.soundscape == "tone")
            #expect(await plugin.details()["files_unavailable"] == "broken")
            let list = try await VigilExecutable.run(
                ["soundscape", "list", "--socket", controlSocket(server, state: state.path)],
                in: state.path)
            #expect(list.status == 0, "\(list.stderr)")
            let lines = list.stdout.split(separator: "\n").map(String.init)
            #expect(lines.last == "  tricky  tricky  \(state.path)/tone?ggo.exe?forged.ogg", "\(lines)")
            #expect(lines.count == 6 && lines.contains("* tone  tone  \(tone)"), "\(lines)")
            #expect(await server.waitForSink(state: "RUNNING", timeout: 3))
            try await Task.sleep(for: .milliseconds(1200))
            let samples = try await server.captureMonitor(seconds: 4)  // past a loop point
            let analysis = AudioAnalysis(interleaved: samples, trimSeconds: 0.3)
            #expect(abs(analysis.zeroCrossingFrequency - 330) < 3, "\(analysis.zeroCrossingFrequency) Hz")
            // Levelled: a 0.5 sine is far louder than −27 LUFS; it plays at the common level (RMS ≈ 0.034).
            #expect(analysis.rms > 0.02 && analysis.rms < 0.08, "RMS \(analysis.rms)")
            await plugin.stop()
        }
    }
}
