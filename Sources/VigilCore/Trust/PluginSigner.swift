public import VigilCrypto

/// Signs a plugin directory: refreshes the manifest's resource sizes and digests, then writes
/// `plugin.json`, `plugin.json.minisig` (trusted comment `NAME@VERSION`) and, if absent,
/// `plugin.pub`. Each file is written atomically.
public enum PluginSigner {
    /// The result of signing.
    public struct Result: Sendable {
        /// The manifest as signed.
        public let manifest: PluginManifest
        /// The plugin directory (absolute).
        public let directory: String
        /// True when `plugin.pub` was written.
        public let wrotePublicKey: Bool
    }

    /// Signs the plugin in `directory` (absolute, so that its last component is the plugin's
    /// name; resolve a relative one against ``HostEnvironment/workingDirectory``) with `key`.
    ///
    /// - Throws: ``CoreError``: `.malformedManifest`, `.nameMismatch` (the manifest's name must be
    ///   the directory's name), `.resourceMismatch` (a listed resource is missing or not a regular
    ///   file), `.keyRotation` (plugin.pub holds another key), `.ioFailure`.
    public static func sign(directory: String, with key: MinisignSecretKey) throws(CoreError) -> Result {
        let directory = Path.normalized(directory)
        let dirName = Path.lastComponent(of: directory)
        let files = try PluginLoader.readFiles(directory: directory, name: dirName)

        // The publisher's own file: parse strictly so what gets signed is a valid manifest.
        var tree: JSONValue
        do {
            tree = try StrictJSON.parse(files.manifest, maxSize: ManifestDecoder.maxManifestSize)
        } catch {
            throw ManifestDecoder.malformed(
                dirName, path: error.path, "\(error.reason) (line \(error.line), column \(error.column))")
        }
        // Refresh resources: only each entry's "path" is needed; size and SHA-256 are computed.
        if case .object(var members) = tree, let index = members.firstIndex(where: { $0.key == "resources" }),
            case .array(let entries) = members[index].value
        {
            var refreshed: [JSONValue] = []
            for (i, entry) in entries.enumerated() {
                let at = "$.resources[\(i)]"
                guard case .object(let fields) = entry, case .string(let path)? = entry["path"] else {
                    throw ManifestDecoder.malformed(dirName, path: at, "expected an object with a \"path\" string")
                }
                if let unknown = fields.first(where: { !["path", "sha256", "size"].contains($0.key) }) {
                    throw ManifestDecoder.malformed(
                        dirName, path: at, "unknown field \(JSONValue.quote(Sanitizer.display(unknown.key)))")
                }
                if let problem = ManifestDecoder.resourcePathProblem(path) {
                    throw ManifestDecoder.malformed(dirName, path: at + ".path", problem)
                }
                guard
                    let bytes = try SafeFile.readIfPresent(
                        relativePath: path, inside: directory, cap: ManifestDecoder.maxResourceSize,
                        what: "resource", plugin: dirName)
                else {
                    throw CoreError(
                        code: .resourceMismatch, plugin: dirName,
                        message: "the resource \(path) listed in plugin.json does not exist — add the file or "
                            + "remove it from \"resources\"")
                }
                refreshed.append(
                    .object([
                        ("path", .string(path)),
                        ("sha256", .string(Digest.hex(Digest.sha256(bytes)))),
                        ("size", .number(String(bytes.count))),
                    ]))
            }
            members[index].value = .array(refreshed)
            tree = .object(members)
        }
        let manifest = try ManifestDecoder.decode(tree, plugin: dirName)
        guard manifest.name == dirName else {
            throw CoreError(
                code: .nameMismatch, plugin: dirName,
                message: "the manifest's name is \"\(Sanitizer.display(manifest.name))\" but its directory is "
                    + "\"\(dirName)\" — rename one so they match")
        }

        // Key consistency: plugin.pub must hold the signing key (or be absent).
        if let pub = files.publicKey {
            guard let text = String(validating: pub, as: UTF8.self),
                let offered = try? MinisignPublicKey(fileContents: text)
            else {
                throw CoreError(
                    code: .keyInvalid, plugin: dirName,
                    message: "\(directory)/plugin.pub is not a valid minisign public key — delete it and sign again")
            }
            if offered.fingerprint != key.publicKey.fingerprint {
                throw CoreError(
                    code: .keyRotation, plugin: dirName,
                    message: "plugin.pub holds key \(offered.fingerprint) but you are signing with "
                        + "\(key.publicKey.fingerprint). If you are rotating keys on purpose, delete plugin.pub and sign "
                        + "again: every host will see a KEY ROTATION and must re-run `vigil plugin trust \(dirName)`")
            }
        }

        // Keep the publisher's formatting when nothing changed.
        let unchanged = (try? ManifestDecoder.decode(files.manifest, plugin: dirName)) == manifest
        let manifestBytes = unchanged ? files.manifest : tree.serialized()

        let signature: MinisignSignature
        do {
            signature = try MinisignSignature.sign(
                manifestBytes, with: key, trustedComment: "\(manifest.name)@\(manifest.version)",
                untrustedComment: "signature from vigil plugin sign (\(manifest.name))")
        } catch {
            throw CoreError(code: .ioFailure, plugin: dirName, message: "signing failed: \(error)")
        }
        if manifestBytes != files.manifest {
            try AtomicFile.write(manifestBytes, to: Path.join(directory, "plugin.json"))
        }
        try AtomicFile.write(
            Array(signature.fileContents().utf8), to: Path.join(directory, "plugin.json.minisig"), mode: 0o644)
        var wrotePublicKey = false
        if files.publicKey == nil {
            try AtomicFile.write(
                Array(key.publicKey.fileContents().utf8), to: Path.join(directory, "plugin.pub"), mode: 0o644)
            wrotePublicKey = true
        }
        return Result(manifest: manifest, directory: directory, wrotePublicKey: wrotePublicKey)
    }
}
