import Foundation
import Testing
import VigilAnnounce
import VigilAudio
import VigilTestSupport

/// A Unix socket that accepts connections (the kernel completes them from the backlog) and
/// never answers: a sound server that hangs.
final class SilentSocket {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() where i < raw.count - 1 { raw[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard fd >= 0, bound == 0, listen(fd, 64) == 0 else { throw FixtureError("cannot listen on \(path)") }
    }

    func close() {
        _ = Glibc.close(fd)
        unlink(path)
    }
}

/// `vigil announce` as a user runs it, against real sound servers: it never hangs, whatever
/// the server, the lock or the file does; and the duck journal is protected like sshd's
/// StrictModes protect `authorized_keys` (issue 25, classes 3 and 4; issue 26, point 3).
@Suite("Announcements: no hang, no trust in planted state", .serialized)
struct AnnounceHardeningTests {
    static let longText =
        "This announcement is long enough to keep the prompt playing for a few seconds while the test looks at it."

    /// The environment of a `vigil announce` child: this process's, with its state in `state`
    /// and no sound server of the machine's.
    static func environment(_ state: TestDirectory, server: String? = nil) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_STATE_HOME"] = state.url("state")
        environment["XDG_RUNTIME_DIR"] = state.url("runtime")
        environment["PULSE_SERVER"] = server
        environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
        return environment
    }

    /// Runs `vigil announce ARGUMENTS --json` (killed after `timeout` s); its exit status, JSON
    /// document and the seconds it took.
    static func announce(
        _ arguments: [String], environment: [String: String], timeout: Double = 60
    ) async throws -> (status: Int32, document: [String: Any], seconds: Double, output: RuntimeFixtures.Output) {
        let start = Date()
        let output = try await RuntimeFixtures.run(
            VigilExecutable.path, ["announce"] + arguments + ["--json"], environment: environment, timeout: timeout)
        let seconds = Date().timeIntervalSince(start)
        #expect(!output.timedOut, "vigil announce \(arguments) hung for \(timeout) s; stderr: \(output.stderr)")
        let document =
            (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) as? [String: Any] ?? [:]
        #expect(!document.isEmpty, "no JSON document: \(output.stdout) \(output.stderr)")
        return (output.status, document, seconds, output)
    }

    static func errorCode(_ document: [String: Any]) -> String? {
        (document["error"] as? [String: Any])?["code"] as? String
    }

    static func errorMessage(_ document: [String: Any]) -> String {
        (document["error"] as? [String: Any])?["message"] as? String ?? ""
    }

    // MARK: Class 3: a server that accepts and never answers

    @Test("--say with a sound server that accepts and never answers: one JSON error within the deadline")
    func sayToASilentServer() async throws {
        let dir = try TestDirectory("vigil-announce")
        defer { dir.remove() }
        let silent = try SilentSocket(path: dir.url("silent.sock"))
        defer { silent.close() }
        let run = try await Self.announce(
            ["--say", "hello"], environment: Self.environment(dir, server: "unix:" + silent.path), timeout: 40)
        #expect(run.status == 69)
        #expect(Self.errorCode(run.document) == "sound-server", "\(run.document)")
        #expect(run.seconds < 20, "took \(run.seconds) s")
    }

    @Test(
        "espeak-ng opens no sound-server connection of its own: with PULSE_SERVER silent, --say plays on [announce] pulse_server"
    )
    func speechNeverTouchesTheEnvironmentsServer() async throws {
        try await PulseAudioServer.with(directory: "vigil-announce") { server, state in
            let silent = try SilentSocket(path: state.url("silent.sock"))
            defer { silent.close() }
            let config = try state.write(
                "vigil.toml", "[announce]\npulse_server = \"\(server.address)\"\nducking = \"client\"\n")
            let run = try await Self.announce(
                ["--config", config, "--say", "hello"],
                environment: Self.environment(state, server: "unix:" + silent.path),
                timeout: 40)
            #expect(run.status == 0, "\(run.document) \(run.output.stderr)")
            #expect(run.document["ok"] as? Bool == true)
            // espeak-ng's own probe of the silent server would hold synthesis until libpulse gives up.
            #expect(run.seconds < 15, "took \(run.seconds) s")
            #expect((run.document["prompt_seconds"] as? Double ?? 0) > 0.3)
        }
    }

    @Test("--say with the real PulseAudio SIGSTOPped: one JSON error within the deadline")
    func sayToAStoppedServer() async throws {
        try await PulseAudioServer.with(directory: "vigil-announce") { server, state in
            let pid = try #require(server.pid)
            kill(pid, SIGSTOP)
            defer { kill(pid, SIGCONT) }
            let run = try await Self.announce(
                ["--say", "hello"], environment: Self.environment(state, server: server.address), timeout: 40)
            #expect(run.status == 69)
            #expect(Self.errorCode(run.document) == "sound-server", "\(run.document)")
            #expect(run.seconds < 20, "took \(run.seconds) s")
        }
    }

    /// Holds the announce lock from another process (as a stuck announcer would), declaring a
    /// deadline `seconds` from now, or nothing when `seconds` is nil.
    static func holdLock(_ path: String, seconds: Double, in dir: TestDirectory) throws -> ChildProcess {
        let script = try dir.write(
            "hold-lock.py",
            """
            import fcntl, os, sys, time
            fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            deadline = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + int(float(sys.argv[2]) * 1e9)
            os.write(fd, f"{os.getpid()} {deadline}\\n".encode())
            time.sleep(600)
            """)
        return try ChildProcess("/usr/bin/python3", [script, path, "\(seconds)"])
    }

    @Test("a holder that keeps the announce lock past its declared deadline: `busy`, naming it, nothing lowered")
    func lockWaitHasADeadline() async throws {
        try await PulseAudioServer.with(modules: DuckingTests.modules, directory: "vigil-announce") { server, state in
            let player = try server.playTone(role: "music")
            defer { player.signal(SIGKILL); player.wait() }
            let music = try await server.waitForSinkInput { $0.role == "music" }
            let directory = try state.makeDirectory("state/vigil/announce")
            #expect(chmod(directory, 0o700) == 0)
            let holder = try Self.holdLock(directory + "/announce.lock", seconds: 1, in: state)
            defer { holder.signal(SIGKILL); holder.wait() }
            #expect(
                await RuntimeFixtures.waitUntil(timeout: 10) {
                    ((try? state.read("state/vigil/announce/announce.lock")) ?? []).count > 3
                })
            let run = try await Self.announce(
                ["--say", "hello"], environment: Self.environment(state, server: server.address), timeout: 60)
            #expect(run.status == 75)
            #expect(Self.errorCode(run.document) == "busy", "\(run.document)")
            #expect(Self.errorMessage(run.document).contains("process \(holder.pid) (python3)"), "\(run.document)")
            #expect(run.seconds < 30, "took \(run.seconds) s")
            #expect(try server.sinkInputSnapshots().first { $0.index == music.index }?.volume == music.volume)
        }
    }

    // MARK: Issue 26 point 6: messages in the user's words

    @Test("a sound server that dies mid-prompt: the error says what happened and what to do, in no library's words")
    func serverGoneMidPrompt() async throws {
        try await PulseAudioServer.with(modules: DuckingTests.modules, directory: "vigil-announce") { server, state in
            let player = try server.playTone(role: "music")
            defer { player.signal(SIGKILL); player.wait() }
            _ = try await server.waitForSinkInput { $0.role == "music" }
            var settings = AnnounceSettings()
            settings.ducking = .client
            let announcer = makeAnnouncer(server, directory: state.path, settings: settings)
            let watcher = AnnouncementWatcher(announcer)
            let (task, ducked) = try await startAnnouncement(announcer, .play(.silence(seconds: 8)), watcher: watcher)
            #expect(ducked.count == 1)
            server.kill()
            let result = await task.result
            await announcer.close()
            guard case .failure(let error as AnnounceError) = result else {
                Issue.record("the prompt did not fail: \(result)")
                return
            }
            #expect(error.code == .soundServer)
            #expect(!error.message.contains("connect()"), "\(error.message)")
            #expect(error.message.contains("the next announcement or host start restores from it"), "\(error.message)")
            #expect(FileManager.default.fileExists(atPath: state.path + "/announce/duck-journal.json"))
        }
    }

    // MARK: Issue 26 point 3: files that block on open

    @Test("a FIFO or a socket as the prompt is refused at once, naming what it is", arguments: ["FIFO", "socket"])
    func specialFilesAreRefused(kind: String) async throws {
        let dir = try TestDirectory("vigil-announce")
        defer { dir.remove() }
        let path = dir.url("prompt.wav")
        var socketFile: SilentSocket?
        if kind == "FIFO" {
            #expect(mkfifo(path, 0o600) == 0)
        } else {
            socketFile = try SilentSocket(path: path)
        }
        defer { socketFile?.close() }
        let run = try await Self.announce([path], environment: Self.environment(dir), timeout: 30)
        #expect(run.status == 65)
        #expect(Self.errorCode(run.document) == "invalid-prompt", "\(run.document)")
        #expect(Self.errorMessage(run.document).contains("is a \(kind), not a regular file"), "\(run.document)")
        #expect(run.seconds < 10)
    }

    // MARK: Class 4: the journal is a state file, checked and bounded

    enum Plant: String, CaseIterable, CustomTestStringConvertible {
        case loudOriginal, worldWritable, otherOwner, openDirectory, linkedDirectory, linkedParent
        var testDescription: String { rawValue }
    }

    /// The server's run cookie (a journal names the run its indexes belong to).
    static func cookie(_ server: PulseAudioServer) async throws -> UInt32 {
        let address = server.address
        return try await blockingCall { () -> Result<UInt32, AudioError> in
            let mixer = PulseMixer(server: address, applicationName: "vigil-tests", logger: quietLogger)
            return Result { () throws(AudioError) -> UInt32 in
                try mixer.connect()
                return try mixer.serverInfo().cookie
            }
        }.get()
    }

    @Test(
        "a planted or exposed duck journal is not acted on: `--recover` refuses it and the stream keeps its volume",
        arguments: Plant.allCases)
    func plantedJournal(_ plant: Plant) async throws {
        try await PulseAudioServer.with(modules: DuckingTests.modules, directory: "vigil-announce") { server, state in
            let player = try server.playTone(role: "music")
            defer { player.signal(SIGKILL); player.wait() }
            let music = try await server.waitForSinkInput { $0.role == "music" }
            // The stream is at what a duck to 0.3 of 100 % gives: a real journal would put it back.
            let ducked = PulseMixer.scaled([65536, 65536], by: 0.3)
            try server.pactl(["set-sink-input-volume", "\(music.index)"] + ducked.map(String.init))
            _ = try await server.waitForSinkInput { $0.index == music.index && $0.volume == ducked }
            let original: [UInt32] = plant == .loudOriginal ? [2_147_483_647, 2_147_483_647] : [65536, 65536]
            let journal = """
                {"absentRestoreIDs":[],"level":0.3,"pid":999999,"rampSteps":4,"server":null,\
                "serverCookie":\(try await Self.cookie(server)),\
                "streams":[{"ducked":[\(ducked[0]),\(ducked[1])],"index":\(music.index),\
                "original":[\(original[0]),\(original[1])]}],"version":1}
                """
            // The journal's directory, or where a link sends it.
            let stateDirectory = try state.makeDirectory("state/vigil")
            #expect(chmod(stateDirectory, 0o700) == 0)
            var journalDirectory = stateDirectory + "/announce"
            var foreign: String?
            switch plant {
            case .linkedDirectory:
                foreign = try state.makeDirectory("other-user")
                journalDirectory = foreign!
                #expect(symlink(foreign!, stateDirectory + "/announce") == 0)
            case .linkedParent:
                foreign = try state.makeDirectory("other-user/vigil")
                _ = try state.makeDirectory("other-user/vigil/announce")
                journalDirectory = foreign! + "/announce"
                #expect(rename(stateDirectory, state.url("state/vigil.moved")) == 0)
                #expect(symlink(foreign!, stateDirectory) == 0)
            default:
                _ = try state.makeDirectory("state/vigil/announce")
            }
            #expect(chmod(journalDirectory, plant == .openDirectory ? 0o777 : 0o700) == 0)
            let journalPath = journalDirectory + "/duck-journal.json"
            _ = try state.write(String(journalPath.dropFirst(state.path.count + 1)), journal)
            #expect(chmod(journalPath, plant == .worldWritable ? 0o666 : 0o600) == 0)
            if plant == .otherOwner { #expect(chown(journalPath, 65534, 65534) == 0) }
            if let foreign {
                #expect(chown(foreign, 65534, 65534) == 0)
                #expect(chmod(foreign, 0o755) == 0)
            }

            let run = try await Self.announce(
                ["--recover"], environment: Self.environment(state, server: server.address), timeout: 40)
            if plant == .loudOriginal {
                #expect(run.status == 74)
                #expect(Self.errorCode(run.document) == "journal", "\(run.document)")
                #expect(Self.errorMessage(run.document).contains("above 99957 (153 %)"), "\(run.document)")
            } else {
                #expect(run.status == 77)
                #expect(Self.errorCode(run.document) == "state-unsafe", "\(run.document)")
            }
            #expect(try server.sinkInputSnapshots().first { $0.index == music.index }?.volume == ducked)
            // Left for the user to inspect, and no lock made in a directory that is not ours.
            #expect(FileManager.default.fileExists(atPath: journalPath))
            if let foreign {
                #expect(!FileManager.default.fileExists(atPath: journalDirectory + "/announce.lock"), "\(foreign)")
            }
        }
    }
}
