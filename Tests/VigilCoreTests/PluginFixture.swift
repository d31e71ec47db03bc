import Foundation
import VigilCore
import VigilCrypto
import VigilTestSupport

/// Builds signed plugin directories under a test directory's `plugins/`.
struct PluginFixture {
    let root: TestDirectory
    var pluginsDirectory: String { root.url("plugins") }

    init() throws {
        root = try TestDirectory("vigil-core")
        try root.makeDirectory("plugins")
        try root.makeDirectory("state")
    }

    func remove() { root.remove() }

    static func manifestText(
        name: String, version: String = "1.0.0", resources: [String] = [], extra: String = ""
    ) -> String {
        let res = resources.map { "{\"path\": \"\($0)\"}" }.joined(separator: ", ")
        return """
            {
              "schema": "vigil.plugin-manifest/v1",
              "name": "\(name)",
              "version": "\(version)",
              "description": "test plugin \(name)",
              "entry": "\(name)",\(extra)
              "host_requirements": [{"kind": "background-mode", "value": "audio", "why": "test"}, {"kind": "audio-output"}],
              "resources": [\(res)],
              "settings": {"mode": "zero", "level": 0.5, "count": 3, "on": true, "list": [1, "a"], "nested": {"x": 1}}
            }
            """
    }

    /// Writes plugin.json (and the given resource files) and signs the directory with `key`.
    @discardableResult
    func makeSigned(
        _ name: String, key: MinisignSecretKey, version: String = "1.0.0",
        resources: [String: [UInt8]] = [:], directoryName: String? = nil, manifest: String? = nil
    ) throws -> String {
        let dir = "plugins/\(directoryName ?? name)"
        try root.makeDirectory(dir)
        for (path, bytes) in resources { try root.write("\(dir)/\(path)", bytes) }
        try root.write(
            "\(dir)/plugin.json",
            manifest ?? Self.manifestText(name: name, version: version, resources: resources.keys.sorted()))
        _ = try PluginSigner.sign(directory: root.url(dir), with: key)
        return root.url(dir)
    }

    /// Signs arbitrary bytes as `dir/plugin.json` without parsing them (as a hostile publisher could).
    func writeRawSigned(_ dir: String, manifest: [UInt8], key: MinisignSecretKey) throws {
        try root.makeDirectory("plugins/\(dir)")
        try root.write("plugins/\(dir)/plugin.json", manifest)
        let signature = try MinisignSignature.sign(manifest, with: key, trustedComment: "raw")
        try root.write("plugins/\(dir)/plugin.json.minisig", signature.fileContents())
        try root.write("plugins/\(dir)/plugin.pub", key.publicKey.fileContents())
    }

    func configuration(
        trusted: [String: Fingerprint] = [:], keySets: [String: TrustedKeys] = [:], acknowledged: [String] = [],
        plugins: [String] = []
    ) -> HostConfiguration {
        HostConfiguration(
            path: root.url("vigil.toml"), plugins: plugins, trustedPlugins: trusted, trustedKeys: keySets,
            acknowledgedUnsafePlugins: acknowledged, pluginPaths: [pluginsDirectory], environment: root.environment())
    }

    var store: RollbackStore { RollbackStore(directory: root.url("state/vigil")) }

    func loader(
        trusted: [String: Fingerprint] = [:], keySets: [String: TrustedKeys] = [:], acknowledged: [String] = [],
        rollback: Bool = true
    ) -> PluginLoader {
        PluginLoader(
            configuration: configuration(trusted: trusted, keySets: keySets, acknowledged: acknowledged),
            rollbackStore: rollback ? store : nil)
    }

    /// The load error's code, or `nil` when the plugin loaded.
    func errorCode(_ name: String, _ loader: PluginLoader) -> CoreError.Code? {
        switch loader.load(name) {
        case .success: nil
        case .failure(let error): error.code
        }
    }
}

extension CoreError {
    static func of(_ result: Result<LoadedPlugin, CoreError>) -> CoreError? {
        if case .failure(let e) = result { return e }
        return nil
    }
}
