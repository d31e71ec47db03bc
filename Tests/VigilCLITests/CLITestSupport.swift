import Foundation
import Testing
import VigilTestSupport

/// A sandbox for one CLI test: a working directory, private state/config homes, and an empty
/// first-party manifest directory unless the test asks for the real one.
struct CLISandbox {
    let dir: TestDirectory
    var firstParty: String

    init(realFirstParty: Bool = false) throws {
        dir = try TestDirectory("vigil-cli")
        try dir.makeDirectory("work")
        try dir.makeDirectory("first-party")
        firstParty = realFirstParty ? VigilExecutable.packageRoot + "/manifests" : dir.url("first-party")
    }

    var work: String { dir.url("work") }

    var environment: [String: String?] {
        [
            "XDG_STATE_HOME": dir.url("state"), "XDG_CONFIG_HOME": dir.url("config"),
            "VIGIL_FIRST_PARTY_MANIFESTS": firstParty, "VIGIL_KEY_PASSWORD": nil,
        ]
    }

    @discardableResult
    func vigil(_ arguments: String..., stdin: String? = nil) async throws -> VigilExecutable.Output {
        try await VigilExecutable.run(arguments, in: work, environment: environment, stdin: stdin)
    }

    func text(_ relative: String) throws -> String {
        String(decoding: try dir.read("work/" + relative), as: UTF8.self)
    }

    func remove() { dir.remove() }

    /// Creates `work/manifests/NAME` with a manifest and a key pair, signed by `vigil`.
    @discardableResult
    func makePlugin(_ name: String, version: String = "1.0.0", keyName: String? = nil) async throws -> String {
        let keys = keyName ?? name
        if !FileManager.default.fileExists(atPath: dir.url("work/keys/\(keys).key")) {
            let r = try await vigil("plugin", "keygen", "--name", keys, "--dir", "keys")
            #expect(r.status == 0, "\(r.stderr)")
        }
        try dir.write("work/manifests/\(name)/data.bin", [1, 2, 3])
        try dir.write(
            "work/manifests/\(name)/plugin.json",
            """
            {"schema": "vigil.plugin-manifest/v1", "name": "\(name)", "version": "\(version)", "entry": "\(name)",
             "description": "evil\\u202eder",
             "host_requirements": [{"kind": "background-mode", "value": "audio"}, {"kind": "executable", "value": "pactl"}],
             "resources": [{"path": "data.bin"}]}
            """)
        let r = try await vigil("plugin", "sign", "manifests/\(name)", "--key", "keys/\(keys).key")
        #expect(r.status == 0, "\(r.stderr)")
        return dir.url("work/manifests/\(name)")
    }

    /// The fingerprint printed by keygen for `keys/NAME.pub`.
    func fingerprint(ofKey name: String) throws -> String {
        let pub = try text("keys/\(name).pub").split(separator: "\n")[1]
        let blob = [UInt8](Data(base64Encoded: String(pub))!)
        return "ed25519:" + Data(blob[10...]).base64EncodedString()
    }
}
