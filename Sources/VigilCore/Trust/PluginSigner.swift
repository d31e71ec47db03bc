import Glibc
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
        /// True when a key file (`plugin.pub`, or `plugin.N.pub` for a co-signer) was written.
        public let wrotePublicKey: Bool
        /// The signature file written (`plugin.json.minisig`, or `plugin.json.N.minisig`).
        public let signatureFile: String
        /// True when the signature was added next to other valid ones (a co-signature).
        public let cosigned: Bool
        /// Other signature files removed because they no longer verify over the new manifest bytes
        /// (their signers must sign again).
        public let removedSignatures: [String]
    }

    /// Signs the plugin in `directory` (absolute, so that its last component is the plugin's
    /// name; resolve a relative one against ``HostEnvironment/workingDirectory``) with `key`.
    ///
    /// - Throws: ``CoreError``: `.malformedManifest`, `.nameMismatch` (the manifest's name must be
    ///   the directory's name), `.resourceMismatch` (a listed resource is missing or not a regular
    ///   file), `.keyRotation` (plugin.pub holds another key), `.ioFailure`.
    @discardableResult
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

        // Keep the publisher's formatting when nothing changed.
        let unchanged = (try? ManifestDecoder.decode(files.manifest, plugin: dirName)) == manifest
        let manifestBytes = unchanged ? files.manifest : tree.serialized()

        // Key consistency: the signing key is one the directory offers (plugin.pub, plugin.N.pub),
        // or the directory offers none yet, or it co-signs an already signed, unchanged manifest.
        let offered: [(number: Int, key: MinisignPublicKey)]
        do throws(CoreError) {
            offered = try files.publicKeys.map { file throws(CoreError) in
                let one = PluginLoader.Files(manifest: [], signatures: [], publicKeys: [file])
                guard let key = try PluginLoader.offeredKeys(one, name: dirName).first else {
                    throw CoreError(code: .keyInvalid, plugin: dirName, message: "empty key file")
                }
                return (file.number, key)
            }
        } catch {
            throw CoreError(
                code: .keyInvalid, plugin: dirName,
                message: "\(directory) has a key file that is not a valid minisign public key (\(error.message)) — "
                    + "delete it and sign again")
        }
        // The signature files that verify over the bytes about to be signed, with the key of their number.
        let stillValid = files.signatures.filter { file in
            guard let key = offered.first(where: { $0.number == file.number })?.key,
                let signature = try? MinisignSignature(fileContents: file.bytes)
            else { return false }
            return (try? signature.verify(manifestBytes, with: key)) != nil
        }
        let number: Int
        var cosigned = false
        if let mine = offered.first(where: { $0.key.fingerprint == key.publicKey.fingerprint }) {
            number = mine.number
        } else if offered.isEmpty {
            number = 1
        } else if manifestBytes == files.manifest, !stillValid.isEmpty {
            guard
                let free = (2...TrustedKeys.maxKeys).first(where: { n in
                    !files.publicKeys.contains { $0.number == n } && !files.signatures.contains { $0.number == n }
                })
            else {
                throw CoreError(
                    code: .ioFailure, plugin: dirName,
                    message: "it already has \(TrustedKeys.maxKeys) signature or key files; remove unused "
                        + "plugin.json.N.minisig / plugin.N.pub files first")
            }
            number = free
            cosigned = true
        } else {
            let keys = offered.map { "\($0.key.fingerprint)" }.joined(separator: ", ")
            throw CoreError(
                code: .keyRotation, plugin: dirName,
                message: "the plugin's key files hold \(keys) but you are signing with "
                    + "\(key.publicKey.fingerprint), and "
                    + "no signature by the plugin's keys verifies over the manifest as it is now (it changed since it "
                    + "was signed, or was never signed), so this cannot be a co-signature"
                    + ". To rotate keys, publish a rotation statement (`vigil plugin rotate \(dirName) --from OLD.key "
                    + "--to NEW.pub`); to co-sign, first sign with an existing key, then sign again with yours")
        }

        let signature = try MinisignSignature.sign(
            manifestBytes, with: key, plugin: dirName, trustedComment: "\(manifest.name)@\(manifest.version)",
            untrustedComment: "signature from vigil plugin sign (\(manifest.name))")
        if manifestBytes != files.manifest {
            try AtomicFile.write(manifestBytes, to: Path.join(directory, "plugin.json"))
        }
        let signatureFile = PluginLoader.signatureFileName(number)
        try AtomicFile.write(
            Array(signature.fileContents().utf8), to: Path.join(directory, signatureFile), mode: 0o644)
        // Signatures over the old bytes no longer verify: remove them so no stale file is shipped.
        var removed: [String] = []
        for file in files.signatures
        where file.number != number && !stillValid.contains(where: { $0.number == file.number }) {
            let name = PluginLoader.signatureFileName(file.number)
            let signaturePath = Path.join(directory, name)
            if unlink(signaturePath) != 0 {
                throw CoreError.io("remove", path: signaturePath, errno: errno, call: "unlink")
            }
            removed.append(name)
        }
        var wrotePublicKey = false
        if !offered.contains(where: { $0.number == number }) {
            try AtomicFile.write(
                Array(key.publicKey.fileContents().utf8),
                to: Path.join(directory, PluginLoader.publicKeyFileName(number)), mode: 0o644)
            wrotePublicKey = true
        }
        return Result(
            manifest: manifest, directory: directory, wrotePublicKey: wrotePublicKey, signatureFile: signatureFile,
            cosigned: cosigned, removedSignatures: removed)
    }
}

extension MinisignSignature {
    /// Signs `bytes` for plugin `plugin`'s files (a manifest, a key rotation, a revocation list); a
    /// failure is the core's ``CoreError/Code/ioFailure``.
    static func sign(
        _ bytes: [UInt8], with key: MinisignSecretKey, plugin: String, trustedComment: String, untrustedComment: String
    ) throws(CoreError) -> MinisignSignature {
        do {
            return try sign(bytes, with: key, trustedComment: trustedComment, untrustedComment: untrustedComment)
        } catch {
            throw CoreError(code: .ioFailure, plugin: plugin, message: "signing failed: \(error)")
        }
    }
}
