import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `Fixtures/tuf_mirror.py` on loopback: a TUF mirror that is honest (`good`) or hostile in one
/// way per URL prefix (`old`, `mix`, `mix-targets`, `endless`, `slow`, `stall`, `drop`, `reset`),
/// serving the publications (directories of `metadata/` and `targets/`) it is given, over plain
/// HTTP or TLS. Stop it with ``stop()`` (call it in a `defer`).
public final class TUFMirrorServer: @unchecked Sendable {
    /// The port it listens on (127.0.0.1).
    public let port: Int
    /// `http` or `https`.
    public let scheme: String
    private let process: ChildProcess
    private let output: String

    /// Starts the server and returns once it listens (its port printed), within 20 s.
    /// - Parameters:
    ///   - publications: name (`old`, `new`) → directory.
    ///   - tls: a PEM certificate and key file, to serve HTTPS.
    public init(publications: [String: String], tls: (certificate: String, key: String)? = nil) async throws {
        output = NSTemporaryDirectory() + "/vigil-tuf-mirror-\(UUID().uuidString.prefix(8)).out"
        var arguments = [RuntimeFixtures.fixtureScript("tuf_mirror.py")]
        for (name, directory) in publications.sorted(by: { $0.key < $1.key }) {
            arguments += ["--publication", "\(name)=\(directory)"]
        }
        if let tls { arguments += ["--tls", tls.certificate, tls.key] }
        scheme = tls == nil ? "http" : "https"
        let child = try ChildProcess("/usr/bin/python3", arguments, stdout: output, stderr: output + ".err")
        process = child
        let file = output
        var line: String?
        _ = await RuntimeFixtures.waitUntil(timeout: 20) {
            let text = (try? TextFile.read(file)) ?? ""
            if let end = text.firstIndex(of: "\n") { line = String(text[..<end]) }
            return line != nil || !child.isRunning
        }
        guard let line, let port = Int(line) else {
            let errors = (try? TextFile.read(file + ".err")) ?? ""
            child.terminate(grace: 1)
            unlink(file)
            unlink(file + ".err")
            throw FixtureError("tuf_mirror.py did not print its port within 20 s: \(errors)")
        }
        self.port = port
    }

    /// The base URL of one behaviour: `SCHEME://127.0.0.1:PORT/MODE/`.
    public func url(_ mode: String) -> String { "\(scheme)://127.0.0.1:\(port)/\(mode)/" }

    /// Bytes the server has sent for each behaviour so far (read through plain sockets: the server
    /// counts what it wrote, whatever the client kept).
    public func bytesSent() async throws -> [String: Int] {
        let result = try await RuntimeFixtures.run(
            "/usr/bin/python3",
            [
                "-c",
                "import json,ssl,sys,urllib.request as u;"
                    + "c=ssl._create_unverified_context();"
                    + "print(u.urlopen(sys.argv[1],context=c,timeout=10).read().decode())",
                "\(scheme)://127.0.0.1:\(port)/_stats",
            ], timeout: 20)
        guard result.status == 0, let data = result.stdout.data(using: .utf8),
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Int]
        else { throw FixtureError("cannot read the mirror's byte counts: \(result.stderr)") }
        return object
    }

    /// Stops the server and removes its output files.
    public func stop() {
        process.terminate(grace: 1)
        unlink(output)
        unlink(output + ".err")
    }

    deinit { stop() }
}
