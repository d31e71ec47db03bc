import Foundation
import VigilCore
import VigilCrypto
import VigilPlugin

/// A temp host project for config-based host tests: `vigil.toml`, plugins signed in place with
/// fresh keys (through the core's `PluginSigner`), and private state and runtime directories.
public struct HostProject {
    public let dir: TestDirectory
    public var configPath: String { dir.path + "/vigil.toml" }
    /// The project's own environment: state and runtime under it, it is the working directory.
    public var environment: HostEnvironment { dir.environment() }

    public init() throws {
        dir = try TestDirectory("vigil-host")
        try FileManager.default.createDirectory(
            atPath: dir.path + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    public func remove() { dir.remove() }

    /// Writes `manifests/NAME/plugin.json` and signs it with a fresh key (the signer fills in the
    /// resource digests); returns the key's fingerprint. Unsigned plugins get no resources.
    /// `key` signs instead of a fresh key; `extra` adds members to the manifest (`"expires": …`).
    /// `settings` is the manifest's `settings` object: defaults in a v1 manifest (`schema`), a
    /// settings schema in a v2 one.
    @discardableResult
    public func signedPlugin(
        _ name: String, entry: String? = nil, requirements: String = "[]",
        settings: String = #"{"mode": "zero", "level": 3}"#, sign: Bool = true, key: MinisignSecretKey? = nil,
        extra: String = "", schema: String = "vigil.plugin-manifest/v1"
    ) throws -> String {
        try dir.write("manifests/\(name)/payload.txt", "payload of \(name)\n")
        try dir.write(
            "manifests/\(name)/plugin.json",
            """
            {"schema": "\(schema)", "name": "\(name)", "version": "1.2.3",
             "description": "test plugin \(name)", "entry": "\(entry ?? "ledger")",
             "host_requirements": \(requirements), "resources": \(sign ? #"[{"path": "payload.txt"}]"# : "[]"), "settings": \(settings)\(extra)}
            """)
        guard sign else { return "" }
        let key = key ?? MinisignSecretKey.generate()
        _ = try PluginSigner.sign(directory: dir.path + "/manifests/\(name)", with: key)
        return key.publicKey.fingerprint.description
    }

    /// Flips one byte of a signed plugin's manifest (the signature no longer matches).
    public func tamper(_ name: String) throws {
        let path = dir.path + "/manifests/\(name)/plugin.json"
        let text = try TextFile.read(path)
        precondition(text.contains("\"1.2.3\""))
        try text.replacingOccurrences(of: "\"1.2.3\"", with: "\"1.2.9\"").write(
            toFile: path, atomically: false, encoding: .utf8)
    }

    /// Gives a signed plugin's manifest a new version and description and signs it again with a
    /// fresh key (a new verified manifest, as a plugin update brings); returns the key's fingerprint.
    @discardableResult
    public func resign(_ name: String, version: String) throws -> String {
        let path = dir.path + "/manifests/\(name)/plugin.json"
        let text = try TextFile.read(path)
        precondition(text.contains("\"1.2.3\""))
        try text.replacingOccurrences(of: "\"1.2.3\"", with: "\"\(version)\"")
            .replacingOccurrences(of: "test plugin \(name)", with: "updated plugin \(name)")
            .write(toFile: path, atomically: false, encoding: .utf8)
        // A new publisher's key: the old key and signature files go (no rotation statement).
        for file in ["plugin.pub", "plugin.json.minisig"] { unlink(dir.path + "/manifests/\(name)/" + file) }
        let key = MinisignSecretKey.generate()
        _ = try PluginSigner.sign(directory: dir.path + "/manifests/\(name)", with: key)
        return key.publicKey.fingerprint.description
    }

    /// Writes vigil.toml and returns its path.
    @discardableResult
    public func config(_ text: String) throws -> String {
        try dir.write("vigil.toml", text)
    }
}
