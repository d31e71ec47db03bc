import Glibc
public import VigilCrypto

/// The publisher's side of key rotation: writes `rotations/N.json` in a plugin directory and signs
/// it with old and new keys (`vigil plugin rotate`).
public enum PluginRotator {
    /// What a rotation command did.
    public struct Result: Sendable {
        /// The statement signed.
        public let rotation: KeyRotation
        /// Its path relative to the plugin directory.
        public let file: String
        /// The signature files written by this run.
        public let wroteSignatures: [String]
        /// Distinct old keys that have signed it now, and how many must.
        public let oldSigners: Int
        /// Distinct new keys that have signed it now (0 for a revocation).
        public let newSigners: Int

        /// True when both thresholds are met: hosts will follow it.
        public var isComplete: Bool {
            oldSigners >= rotation.from.threshold && newSigners >= (rotation.to?.threshold ?? 0)
        }
    }

    /// The statements in `directory`, in order, each parsed (the publisher's own files).
    static func statements(directory: String, name: String) throws(CoreError) -> [KeyRotation] {
        var out: [KeyRotation] = []
        var version = 1
        while let bytes = try SafeFile.readIfPresent(
            relativePath: KeyRotation.fileName(version), inside: directory, cap: KeyRotation.maxFileSize,
            what: "key rotation", plugin: name)
        {
            guard version <= KeyRotation.maxChainLength else {
                throw CoreError(
                    code: .rotationInvalid, plugin: name,
                    message: "it already has \(KeyRotation.maxChainLength) key rotations, the most hosts follow — "
                        + "publish the plugin under a new name instead")
            }
            out.append(try KeyRotation.decode(bytes, plugin: name, file: KeyRotation.fileName(version)))
            version += 1
        }
        return out
    }

    /// Writes the next statement, from the directory's current keys (the last rotation's `to`, else
    /// the keys it offers in `plugin.pub`, `plugin.N.pub`, all of which must sign) to `to` with
    /// `threshold` (all of `to` by default), or to no keys when `to` is empty (a revocation); signs
    /// it with every key of `signers`; and, for a rotation, replaces the key files with the new
    /// keys and removes the manifest signatures by the old ones (sign the manifest again with the
    /// new keys).
    ///
    /// - Throws: ``CoreError``: `.rotationInvalid` when the previous statement is not fully signed
    ///   yet, the plugin was revoked, or a signer is neither an old nor a new key; `.keyInvalid`.
    @discardableResult
    public static func rotate(
        directory: String, to newKeys: [MinisignPublicKey], threshold: Int?, signers: [MinisignSecretKey]
    ) throws(CoreError) -> Result {
        let directory = Path.normalized(directory)
        let name = Path.lastComponent(of: directory)
        if let problem = PluginName.problem(name) {
            throw CoreError(code: .pluginNotFound, plugin: name, message: problem)
        }
        let previous = try statements(directory: directory, name: name)
        let from: TrustedKeys
        if let last = previous.last {
            let state = try progress(directory: directory, name: name, last)
            guard state.isComplete else {
                throw CoreError(
                    code: .rotationInvalid, plugin: name,
                    message: "its key rotation \(state.file) is not fully signed yet (\(state.oldSigners) of "
                        + "\(last.from.threshold) old, \(state.newSigners) of \(last.to?.threshold ?? 0) new keys) — "
                        + "finish it with `vigil plugin rotate PLUGIN_DIR --cosign KEY` before rotating again")
            }
            guard let to = last.to else {
                throw CoreError(
                    code: .rotationInvalid, plugin: name,
                    message: "it was revoked by \(state.file); a revoked plugin cannot rotate — publish it under a new "
                        + "name")
            }
            from = to
        } else {
            let files = try PluginLoader.readFiles(directory: directory, name: name)
            let offered = try PluginLoader.offeredKeys(files, name: name)
            guard !offered.isEmpty else {
                throw CoreError(
                    code: .noPublicKey, plugin: name,
                    message: "it has no plugin.pub, so there is no current key to rotate from — sign it first with "
                        + "`vigil plugin sign`")
            }
            from = try keySet(offered.map(\.fingerprint), threshold: offered.count, name: name)
        }
        let to =
            newKeys.isEmpty
            ? nil : try keySet(newKeys.map(\.fingerprint), threshold: threshold ?? newKeys.count, name: name)
        if to == from {
            throw CoreError(
                code: .rotationInvalid, plugin: name, message: "the new keys are the current ones — nothing to rotate")
        }
        let rotation = KeyRotation(plugin: name, version: previous.count + 1, from: from, to: to)
        let file = KeyRotation.fileName(rotation.version)
        try ensureRotationsDirectory(directory, name: name)
        try AtomicFile.write(rotation.serialized(), to: Path.join(directory, file), mode: 0o644)
        let result = try sign(directory: directory, name: name, rotation, signers: signers)
        if let to {
            // The directory now offers the new keys; manifest signatures by the old keys are stale.
            let files = try PluginLoader.readFiles(directory: directory, name: name)
            for old in files.publicKeys { try remove(Path.join(directory, PluginLoader.publicKeyFileName(old.number))) }
            for old in files.signatures { try remove(Path.join(directory, PluginLoader.signatureFileName(old.number))) }
            for (i, key) in newKeys.enumerated() where to.contains(key.fingerprint) {
                try AtomicFile.write(
                    Array(key.fileContents().utf8), to: Path.join(directory, PluginLoader.publicKeyFileName(i + 1)),
                    mode: 0o644)
            }
        }
        return result
    }

    /// Adds signatures by `signers` to the latest statement (the new keys co-signing).
    @discardableResult
    public static func cosign(directory: String, signers: [MinisignSecretKey]) throws(CoreError) -> Result {
        let directory = Path.normalized(directory)
        let name = Path.lastComponent(of: directory)
        guard let last = try statements(directory: directory, name: name).last else {
            throw CoreError(
                code: .rotationInvalid, plugin: name,
                message: "it has no key rotation to co-sign — start one with `vigil plugin rotate PLUGIN_DIR --from "
                    + "OLD.key --to NEW.pub`")
        }
        return try sign(directory: directory, name: name, last, signers: signers)
    }

    /// Signs `rotation` with each signer that has not signed it yet, in new numbered files.
    private static func sign(
        directory: String, name: String, _ rotation: KeyRotation, signers: [MinisignSecretKey]
    ) throws(CoreError) -> Result {
        let file = KeyRotation.fileName(rotation.version)
        let bytes = rotation.serialized()
        guard
            let onDisk = try SafeFile.readIfPresent(
                relativePath: file, inside: directory, cap: KeyRotation.maxFileSize, what: "key rotation", plugin: name),
            onDisk == bytes
        else {
            throw CoreError(
                code: .rotationInvalid, plugin: name,
                message: "\(file) is not in the form vigil writes — rewrite it with `vigil plugin rotate`")
        }
        let eligible = rotation.from.keys + (rotation.to?.keys ?? [])
        for signer in signers where !eligible.contains(signer.publicKey.fingerprint) {
            throw CoreError(
                code: .rotationInvalid, plugin: name,
                message: "the key \(signer.publicKey.fingerprint) is neither an old nor a new key of \(file) — sign "
                    + "with the old keys (--from) and the new keys (--cosign)")
        }
        var existing = try RotationChain.readSignatures(directory: directory, name: name, version: rotation.version)
        let signed = try Signatures.signers(existing, over: bytes, keys: eligible, name: name)
        var wrote: [String] = []
        for signer in signers where !signed.contains(signer.publicKey.fingerprint) {
            guard
                let number = (1...KeyRotation.maxSignatureFiles).first(where: { n in
                    !existing.contains { $0.name == KeyRotation.signatureFileName(rotation.version, n) }
                })
            else {
                throw CoreError(
                    code: .rotationInvalid, plugin: name,
                    message: "\(file) already has \(KeyRotation.maxSignatureFiles) signature files; remove stray ones")
            }
            let signature = try MinisignSignature.sign(
                bytes, with: signer, plugin: name, trustedComment: "\(name) key rotation \(rotation.version)",
                untrustedComment: "key rotation signature from vigil plugin rotate (\(name))")
            let sigFile = KeyRotation.signatureFileName(rotation.version, number)
            let contents = Array(signature.fileContents().utf8)
            try AtomicFile.write(contents, to: Path.join(directory, sigFile), mode: 0o644)
            existing.append((sigFile, contents))
            wrote.append(sigFile)
        }
        var result = try progress(directory: directory, name: name, rotation)
        result = Result(
            rotation: rotation, file: file, wroteSignatures: wrote, oldSigners: result.oldSigners,
            newSigners: result.newSigners)
        return result
    }

    /// How far the signatures of `rotation` are.
    static func progress(directory: String, name: String, _ rotation: KeyRotation) throws(CoreError) -> Result {
        let bytes =
            try SafeFile.readIfPresent(
                relativePath: KeyRotation.fileName(rotation.version), inside: directory, cap: KeyRotation.maxFileSize,
                what: "key rotation", plugin: name) ?? []
        let files = try RotationChain.readSignatures(directory: directory, name: name, version: rotation.version)
        let old = try Signatures.signers(files, over: bytes, keys: rotation.from.keys, name: name)
        let new = try Signatures.signers(files, over: bytes, keys: rotation.to?.keys ?? [], name: name)
        return Result(
            rotation: rotation, file: KeyRotation.fileName(rotation.version), wroteSignatures: [],
            oldSigners: old.count, newSigners: new.count)
    }

    private static func keySet(_ keys: [Fingerprint], threshold: Int, name: String) throws(CoreError) -> TrustedKeys {
        do {
            return try TrustedKeys(keys: keys, threshold: threshold)
        } catch {
            throw CoreError(code: .rotationInvalid, plugin: name, message: "the new key set is invalid: \(error)")
        }
    }

    private static func ensureRotationsDirectory(_ directory: String, name: String) throws(CoreError) {
        let path = Path.join(directory, "rotations")
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw CoreError.io("create", path: path, errno: errno, call: "mkdir")
        }
        guard SystemCall.fileType(path) == S_IFDIR else {
            throw CoreError(
                code: .notRegularFile, plugin: name, message: "\(path) is not a directory — remove it and run again")
        }
    }

    private static func remove(_ path: String) throws(CoreError) {
        if unlink(path) != 0 && errno != ENOENT {
            throw CoreError.io("remove", path: path, errno: errno, call: "unlink")
        }
    }
}
