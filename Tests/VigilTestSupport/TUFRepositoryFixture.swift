import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// TUF repositories of plugins, built with python-tuf's Metadata API by
/// `Tests/Fixtures/tuf/make-repo.py` (in the virtual environment `scripts/tuf-venv.sh` keeps), and
/// the one loopback HTTP server per test process that serves them all (a directory per repository).
public enum TUFRepositoryFixture {
    /// The generator script.
    public static let script = VigilExecutable.packageRoot + "/Tests/Fixtures/tuf/make-repo.py"

    /// The virtual environment's python, created by `scripts/tuf-venv.sh` on first use.
    public static let python: Result<String, TUFFixtureError> = {
        do {
            let out = try ChildProcess.run(VigilExecutable.packageRoot + "/scripts/tuf-venv.sh", [])
            let path = out.trimmingCharacters(in: .whitespacesAndNewlines)
            guard access(path, X_OK) == 0 else { return .failure(TUFFixtureError("tuf-venv.sh printed \(path)")) }
            return .success(path)
        } catch {
            return .failure(TUFFixtureError("\(error)"))
        }
    }()

    /// Runs `make-repo.py` with `arguments`; throws with its standard error when it fails.
    public static func generate(_ arguments: [String]) throws {
        try ChildProcess.run(try python.get(), [script] + arguments)
    }

    /// The loopback server: `root` is served at `http://127.0.0.1:PORT/`.
    public struct Server: Sendable {
        /// The directory served.
        public let root: String
        /// Its port.
        public let port: Int
        /// `http://127.0.0.1:PORT/` + `relative` + `/`.
        public func url(_ relative: String) -> String { "http://127.0.0.1:\(port)/\(relative)/" }
    }

    /// Started once per test process (it ends with the process, removing what it served: the script
    /// watches its parent).
    public static let server: Result<Server, TUFFixtureError> = {
        do {
            let root = try TestDirectory("vigil-tuf-served").path
            let portFile = root + "/.port"
            let python = try python.get()
            _ = try ChildProcess(python, [script, "serve", root, "--port-file", portFile, "--remove-on-exit"])
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                    let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
                {
                    return .success(Server(root: root, port: port))
                }
                usleep(20_000)
            }
            return .failure(TUFFixtureError("the repository server did not start within 20 s"))
        } catch {
            return .failure(TUFFixtureError("\(error)"))
        }
    }()

    /// A new repository under the served directory: `init`ed, with `mirror` its URL and `path` its
    /// directory (holding `metadata/` and `targets/`; its keys are in `PATH.keys/`).
    public struct Repository: Sendable {
        /// The repository's directory.
        public let path: String
        /// Its mirror URL on the loopback server.
        public let mirror: String

        /// `make-repo.py COMMAND PATH ARGUMENTS…`.
        public func run(_ command: String, _ arguments: [String] = []) throws {
            try TUFRepositoryFixture.generate([command, path] + arguments)
        }

        /// Publishes signed plugin directories; `keys` maps each name to its minisign secret key file.
        public func publish(_ directories: [String], keys: [String: String]) throws {
            try run(
                "publish", directories + keys.sorted { $0.key < $1.key }.flatMap { ["--key", "\($0.key)=\($0.value)"] })
        }

        /// Removes the repository and its keys.
        public func remove() {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: path + ".keys")
        }

        /// The SHA-256 of `metadata/1.root.json`, for `root_sha256`.
        public func rootSHA256() throws -> String {
            try ChildProcess.run("/usr/bin/sha256sum", [path + "/metadata/1.root.json"]).split(separator: " ")[0]
                .description
        }
    }

    /// Creates and `init`s a repository named `name` (unique per test) on the shared server.
    public static func makeRepository(_ name: String = "repo-\(UUID().uuidString.prefix(8))") throws -> Repository {
        let server = try server.get()
        let path = server.root + "/" + name
        try generate(["init", path])
        return Repository(path: path, mirror: server.url(name))
    }
}

/// Why a TUF fixture could not be set up.
public struct TUFFixtureError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
