import Foundation
import Testing
import VigilTestSupport

@testable import VigilSoundscape

/// The control channel under slow and many clients, on a real soundscape (private PulseAudio) and
/// the real `vigil soundscape`: a client that trickles its request holds up no one, and one more
/// client than the channel serves is told that the host is busy.
@Suite("soundscape control channel: slow clients, many clients", .serialized, .timeLimit(.minutes(2)))
struct ControlChannelLoadTests {
    /// Opens `count` connections to `socket`, each sending `{"command":"status"}\n` one byte every
    /// `interval` seconds until the host answers or closes; writes `marker` once every connection
    /// sent its first byte, and each connection's answer (one line each, `-` for none) to `answers`.
    static let tricklingClients = """
        import socket, sys, time
        path, count, interval, marker, answers = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
        request = b'{"command":"status"}\\n'
        conns = []
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.sendall(request[:1])
            conns.append([s, 1, b"", False])
        open(marker, "w").close()
        deadline = time.time() + 30
        while time.time() < deadline and not all(c[3] for c in conns):
            time.sleep(interval)
            for c in conns:
                if c[3]:
                    continue
                try:
                    got = c[0].recv(65536, socket.MSG_DONTWAIT)
                    c[2] += got
                    if not got or got.endswith(b"\\n"):
                        c[3] = True
                        continue
                except BlockingIOError:
                    pass
                if c[1] < len(request):
                    try:
                        c[0].send(request[c[1]:c[1] + 1])
                        c[1] += 1
                    except OSError:
                        c[3] = True
        with open(answers, "w") as f:
            for c in conns:
                f.write((c[2].decode(errors="replace").strip() or "-") + "\\n")
        """

    static func trickle(
        _ socket: String, count: Int, interval: Double, in directory: TestDirectory
    ) throws -> (ChildProcess, marker: String, answers: String) {
        let marker = directory.url("trickle-\(count).ready"), answers = directory.url("trickle-\(count).answers")
        let child = try ChildProcess(
            "/usr/bin/python3", ["-c", tricklingClients, socket, String(count), String(interval), marker, answers],
            stdout: "/dev/null", stderr: directory.url("trickle-\(count).err"))
        return (child, marker, answers)
    }

    /// Runs `body` with a soundscape playing on a private PulseAudio, its control socket, and
    /// ``trickle(_:count:interval:in:)`` clients connected to it (their answers' file).
    static func withTricklingClients(
        count: Int, interval: Double,
        _ body: (_ socket: String, _ state: TestDirectory, _ answers: String) async throws -> Void
    ) async throws {
        try await PulseAudioServer.with(directory: "vigil-soundscape") { server, state in
            let (plugin, _) = try await startPlugin(server, state: state.path)
            let socket = controlSocket(server, state: state.path)
            let files = try TestDirectory("vigil-trickle")
            defer { files.remove() }
            let (clients, marker, answers) = try trickle(socket, count: count, interval: interval, in: files)
            defer { clients.terminate(grace: 1) }
            #expect(await eventually { FileManager.default.fileExists(atPath: marker) })
            try await body(socket, state, answers)
            await plugin.stop()
        }
    }

    @Test("a client sending one byte every 1.5 s holds up no one, and is answered with an error at its deadline")
    func slowClientBlocksNoOne() async throws {
        try await Self.withTricklingClients(count: 1, interval: 1.5) { socket, state, answers in

            // Twice, so that the second is still within the slow client's connection.
            for _ in 0..<2 {
                let out = try await VigilExecutable.run(["soundscape", "--socket", socket], in: state.path)
                #expect(out.status == 0, "\(out.status) \(out.stderr)")
                #expect(out.stdout.contains("playing"), "\(out.stdout)")
            }
            // The slow client is cut at the channel's deadline, with the reason.
            #expect(await eventually(20) { FileManager.default.fileExists(atPath: answers) })
            let answer = (try? String(contentsOfFile: answers, encoding: .utf8)) ?? ""
            #expect(answer.contains("did not arrive within 2 s"), "\(answer)")
        }
    }

    @Test("one client more than the channel serves is told the host is busy (exit 4), and served once they go")
    func busyHostSaysSo() async throws {
        try await Self.withTricklingClients(count: ControlChannel.maxConnections, interval: 5) {
            socket, state, answers in

            // In process first (no start-up time), then the CLI, within the clients' 2 s.
            let inProcess = Result { () throws(SoundscapeError) in
                try SoundscapeClient(path: socket).send(ControlRequest(command: "status"))
            }
            #expect((try? inProcess.get())?.error?.code == .busy, "\(inProcess)")
            let busy = try await VigilExecutable.run(["soundscape", "--socket", socket, "--json"], in: state.path)
            #expect(busy.status == 4, "\(busy.status) \(busy.stdout) \(busy.stderr)")
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(busy.stdout.utf8)) as? [String: Any], "\(busy.stdout)")
            #expect((document["error"] as? [String: Any])?["code"] as? String == "soundscape-busy")
            let message = (document["error"] as? [String: Any])?["message"] as? String
            #expect(message?.contains("try again") == true, "\(message ?? "")")

            // Once the channel cut them at their deadline, it serves again.
            #expect(await eventually(20) { FileManager.default.fileExists(atPath: answers) })
            let cut = ((try? String(contentsOfFile: answers, encoding: .utf8)) ?? "").split(separator: "\n")
            #expect(cut.count == ControlChannel.maxConnections && cut.allSatisfy { $0.contains("did not arrive") })
            let served = try await VigilExecutable.run(["soundscape", "--socket", socket], in: state.path)
            #expect(served.status == 0, "\(served.stderr)")
        }
    }
}
