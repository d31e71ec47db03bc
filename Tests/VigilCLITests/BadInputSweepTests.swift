import Foundation
import Testing
import VigilCrypto
import VigilTestSupport

/// Every malformed `vigil.toml`, manifest, public key and signature in the fuzz corpora
/// (`Fuzz/Corpus/*/bad-*`) and every input that once crashed a target (`Fuzz/Regressions`) goes through the
/// real `vigil`: each command refuses it with an error on stderr (or, with `--json`, exactly one
/// JSON document carrying the error) and a non-zero exit, and no file it was given — nor anything
/// else in the sandbox — changes.
@Suite struct BadInputSweepTests {
    static let fuzz = VigilExecutable.packageRoot + "/Fuzz"

    /// The malformed inputs of one kind: the corpus's `bad-*` seeds and the fuzz-found inputs.
    static func malformed(_ target: String) -> [String] {
        let seeds = ((try? FileManager.default.contentsOfDirectory(atPath: "\(fuzz)/Corpus/\(target)")) ?? [])
            .filter { $0.hasPrefix("bad-") }.map { "Corpus/\(target)/\($0)" }
        let found = ((try? FileManager.default.contentsOfDirectory(atPath: "\(fuzz)/Regressions/\(target)")) ?? [])
            .map { "Regressions/\(target)/\($0)" }
        return (seeds + found).sorted()
    }

    @Test func theCorporaHoldMalformedInputsOfEveryKind() {
        for target in ["config", "manifest", "minisign-key", "minisign-signature"] {
            #expect(Self.malformed(target).count >= 5, "\(target)")
        }
    }

    @Test(arguments: malformed("config"))
    func malformedConfigurationIsRefused(input: String) async throws {
        let sweep = try Sweep()
        defer { sweep.remove() }
        try sweep.writePlugin(manifest: nil)
        try sweep.give("work/vigil.toml", input)
        try await sweep.expectRefusal(["check"], input)
        try await sweep.expectRefusal(["check", "--json"], input)
        try await sweep.expectRefusal(["plugin", "list", "--json"], input)
        try await sweep.expectRefusal(["plugin", "trust", "fuzzseed", "--yes", "--json"], input)
    }

    @Test(arguments: malformed("manifest"))
    func malformedManifestIsRefusedEvenWithAValidSignature(input: String) async throws {
        try await Self.sweepPlugin(replacing: "plugin.json", with: input)
    }

    @Test(arguments: malformed("minisign-key"))
    func malformedPublicKeyIsRefused(input: String) async throws {
        try await Self.sweepPlugin(replacing: "plugin.pub", with: input)
    }

    @Test(arguments: malformed("minisign-signature"))
    func malformedSignatureIsRefused(input: String) async throws {
        try await Self.sweepPlugin(replacing: "plugin.json.minisig", with: input)
    }

    /// The plugin `fuzzseed` with `file` replaced by `input` (a manifest is signed validly over its
    /// exact bytes, so the decoder is what refuses it), activated in `vigil.toml`.
    static func sweepPlugin(replacing file: String, with input: String) async throws {
        let sweep = try Sweep()
        defer { sweep.remove() }
        if file == "plugin.json" {
            try sweep.writePlugin(manifest: try sweep.bytes(input))
        } else {
            try sweep.writePlugin(manifest: nil)
            try sweep.give("work/manifests/fuzzseed/\(file)", input)
        }
        try sweep.writeConfig()
        for arguments in [
            ["plugin", "verify", "manifests/fuzzseed"], ["plugin", "trust", "fuzzseed", "--yes", "--json"],
            ["check", "--json"],
        ] {
            try await sweep.expectRefusal(arguments, input)
        }
        try await sweep.expectListedAsError(input)
    }
}

/// One sandbox: a plugin `fuzzseed` signed in-process with a fresh key (no `vigil` runs to set up),
/// a `vigil.toml` that activates it untrusted, and a snapshot of every file to compare after each run.
private struct Sweep {
    let sandbox: CLISandbox
    let key = MinisignSecretKey.generate()

    init() throws { sandbox = try CLISandbox() }

    func remove() { sandbox.remove() }

    func bytes(_ input: String) throws -> [UInt8] {
        let path = BadInputSweepTests.fuzz + "/" + input
        return try TextFile.bytes(path)
    }

    func give(_ relative: String, _ input: String) throws {
        try sandbox.dir.write(relative, try bytes(input))
    }

    /// Writes `manifest` (a valid one when `nil`) with a valid signature over exactly its bytes.
    func writePlugin(manifest: [UInt8]?) throws {
        let bytes =
            manifest
            ?? Array(
                #"{"schema": "vigil.plugin-manifest/v1", "name": "fuzzseed", "version": "1.0.0", "entry": "silent-engine", "description": "sweep", "host_requirements": [], "resources": []}"#
                    .utf8)
        let signature = try MinisignSignature.sign(bytes, with: key, trustedComment: "fuzzseed@1.0.0")
        try sandbox.dir.write("work/manifests/fuzzseed/plugin.json", bytes)
        try sandbox.dir.write("work/manifests/fuzzseed/plugin.json.minisig", signature.fileContents())
        try sandbox.dir.write("work/manifests/fuzzseed/plugin.pub", key.publicKey.fileContents())
    }

    func writeConfig() throws {
        try sandbox.dir.write(
            "work/vigil.toml", "plugins = [\"fuzzseed\"]\nplugin_paths = [\"manifests\"]\n[host]\nname = \"sweep\"\n")
    }

    /// Every file under the sandbox with its bytes and modification time.
    func snapshot() throws -> [String: FileState] {
        var files: [String: FileState] = [:]
        let root = sandbox.dir.path
        guard let walker = FileManager.default.enumerator(atPath: root) else { return files }
        while let relative = walker.nextObject() as? String {
            var st = stat()
            guard lstat(root + "/" + relative, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { continue }
            files[relative] = FileState(
                bytes: try sandbox.dir.read(relative), seconds: st.st_mtim.tv_sec, nanoseconds: st.st_mtim.tv_nsec)
        }
        return files
    }

    /// Runs `vigil ARGS`: a non-zero exit, an error said, one JSON document with `--json`, nothing changed.
    func expectRefusal(_ arguments: [String], _ input: String) async throws {
        let before = try snapshot()
        let r = try await VigilExecutable.run(arguments, in: sandbox.work, environment: sandbox.environment)
        let what = "vigil \(arguments.joined(separator: " ")) with \(input)"
        #expect(r.status != 0 && r.status != 64, "\(what) exited \(r.status): \(r.stdout) \(r.stderr)")
        #expect(r.status < 128, "\(what) died of a signal: \(r.stderr)")
        if arguments.contains("--json") {
            let document = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
            #expect(document != nil, "\(what) printed no single JSON object: \(r.stdout)")
            // `check` lists diagnostics with a count of errors; the other commands carry one error object.
            let errors = (document?["errors"] as? Int ?? 0) + (document?["error"] is [String: Any] ? 1 : 0)
            #expect(errors > 0, "\(what) printed no error: \(r.stdout)")
        } else {
            #expect(r.stderr.contains("error"), "\(what) said no error: \(r.stderr)")
        }
        #expect(!r.stdout.contains("\u{1B}") && !r.stderr.contains("\u{1B}"), "\(what) printed a raw escape")
        #expect(try snapshot() == before, "\(what) changed a file")
    }

    /// `vigil plugin list --json` lists the plugin (listing is not a refusal) with its error.
    func expectListedAsError(_ input: String) async throws {
        let before = try snapshot()
        let r = try await VigilExecutable.run(
            ["plugin", "list", "--json"], in: sandbox.work, environment: sandbox.environment)
        let document = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let plugin = (document?["plugins"] as? [[String: Any]])?.first { $0["name"] as? String == "fuzzseed" }
        #expect(plugin?["status"] as? String == "error", "plugin list with \(input): \(r.stdout) \(r.stderr)")
        #expect(plugin?["error"] is [String: Any], "plugin list with \(input): \(r.stdout)")
        #expect(try snapshot() == before, "vigil plugin list with \(input) changed a file")
    }
}

private struct FileState: Equatable {
    var bytes: [UInt8]
    var seconds: Int
    var nanoseconds: Int
}
