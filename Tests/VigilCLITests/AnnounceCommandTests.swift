import Foundation
import Testing
import VigilTestSupport

/// `vigil announce`: usage, settings and server errors, and a real spoken prompt.
@Suite("vigil announce", .serialized)
struct AnnounceCommandTests {
    /// Runs `vigil announce ARGUMENTS --json` against `server` while its monitor is recorded, from
    /// before the prompt to after it; returns the exit status, the recording and the JSON document.
    static func announce(
        _ arguments: [String], on server: PulseAudioServer, in sandbox: CLISandbox
    ) async throws -> (status: Int32, samples: [Int16], document: [String: Any]?) {
        var environment = server.environment
        environment["XDG_STATE_HOME"] = sandbox.dir.url("state")
        let out = sandbox.dir.url("announce.json")
        // The monitor carries what the sink mixes, when it mixes it: record from before the prompt.
        let recording = try await server.startRecording()
        let cli = try ChildProcess(
            VigilExecutable.path, ["announce"] + arguments + ["--json"], environment: environment, stdout: out)
        let status = await blockingCall { cli.wait() }
        try await recording.waitForMore(seconds: 0.3)  // the prompt's last samples reach parec
        let samples = try await recording.finish()
        let document =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as? [String: Any]
        return (status, samples, document)
    }

    @Test("no prompt is a usage error (64)")
    func usage() async throws {
        let sandbox = try CLISandbox()
        defer { sandbox.remove() }
        #expect(try await sandbox.vigil("announce").status == 64)
        #expect(try await sandbox.vigil("announce", "--say", "hi", "--duck-level", "2").status == 64)
        #expect(
            try await sandbox.vigil("announce", "--say", "hi", "--policy", "mix", "--duck-level", "0.2").status == 64)
    }

    @Test("an invalid [announce] table exits 65 naming the key")
    func invalidSettings() async throws {
        let sandbox = try CLISandbox()
        defer { sandbox.remove() }
        try sandbox.dir.write("work/vigil.toml", "plugins = []\n\n[announce]\nduck_level = 3\n")
        let output = try await sandbox.vigil("announce", "--say", "hello", "--json")
        #expect(output.status == 65)
        let document = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        #expect(document?["ok"] as? Bool == false)
        let error = document?["error"] as? [String: Any]
        #expect(error?["code"] as? String == "invalid-settings")
        let message = error?["message"] as? String ?? ""
        #expect(message.contains("`duck_level`") && message.contains("[announce]"), "\(output.stdout)")
    }

    @Test("no sound server: exit 69 and one JSON document")
    func noServer() async throws {
        let sandbox = try CLISandbox()
        defer { sandbox.remove() }
        var environment = sandbox.environment
        environment["PULSE_SERVER"] = "unix:" + sandbox.dir.url("no-such-socket")
        let output = try await VigilExecutable.run(
            ["announce", "--say", "hello", "--json"], in: sandbox.work, environment: environment)
        #expect(output.status == 69, "\(output.stdout)\(output.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        #expect((document?["error"] as? [String: Any])?["code"] as? String == "sound-server")
    }

    @Test("--say speaks audibly, for as long as the words take, and reports it")
    func say() async throws {
        try await PulseAudioServer.with { server in
            let sandbox = try CLISandbox()
            defer { sandbox.remove() }
            let (status, samples, document) = try await Self.announce(
                ["--say", "Attention please. The signing service is ready for the next request."], on: server,
                in: sandbox)
            #expect(status == 0)
            let rms = AudioAnalysis(interleaved: samples, trimSeconds: 0.1).rms
            #expect(rms > 0.005, "speech RMS over the recording \(rms)")
            #expect(document?["ok"] as? Bool == true)
            let seconds = (document?["prompt_seconds"] as? NSNumber)?.doubleValue ?? 0
            // 11 words at 175 a minute: about 3.8 s, with pauses at the full stops.
            #expect(seconds > 2 && seconds < 9, "\(seconds) s")
            let span = AudioAnalysis(interleaved: samples).audibleSpan(threshold: 1000)
            #expect(span > 0.85 * seconds && span < seconds + 0.5, "heard for \(span) s of a \(seconds) s prompt")
        }
    }

    @Test("FILE plays a sound file: audible, decoded to its full length")
    func file() async throws {
        try await PulseAudioServer.with { server in
            let sandbox = try CLISandbox()
            defer { sandbox.remove() }
            let flac = sandbox.dir.url("chime.flac")
            try ChildProcess.run(
                "/usr/bin/sox", ["-n", "-r", "44100", "-c", "1", flac, "synth", "3", "sine", "660", "vol", "0.5"])
            let (status, samples, document) = try await Self.announce([flac], on: server, in: sandbox)
            #expect(status == 0)
            let analysis = AudioAnalysis(interleaved: samples)
            #expect(analysis.peak > 14_000, "tone peak \(analysis.peak)")
            #expect(abs(analysis.zeroCrossingFrequency - 660) < 5, "\(analysis.zeroCrossingFrequency) Hz")
            #expect(document?["ok"] as? Bool == true)
            #expect((document?["prompt_seconds"] as? NSNumber)?.doubleValue == 3)
            #expect(
                abs(analysis.audibleSpan(threshold: 8000) - 3) < 0.06,
                "heard \(analysis.audibleSpan(threshold: 8000)) s")
        }
    }

    @Test("a file that is not audio exits 65 with the file's problem")
    func badFile() async throws {
        let sandbox = try CLISandbox()
        defer { sandbox.remove() }
        let path = try sandbox.dir.write("work/notes.wav", "these are not samples\n")
        let output = try await sandbox.vigil("announce", path, "--json")
        #expect(output.status == 65, "\(output.stdout)")
        let document = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        let error = document?["error"] as? [String: Any]
        #expect(error?["code"] as? String == "invalid-prompt")
        #expect((error?["message"] as? String)?.contains("notes.wav") == true)
        #expect(try await sandbox.vigil("announce", path, "--say", "both").status == 64)
    }
}
