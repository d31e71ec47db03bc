import VigilBase
public import VigilCrypto

// Which keys a plugin is verified with (configured, rotated, offered) and the signature checks.
extension PluginLoader {
    /// The keys to verify with under the loader's rules, or `nil` for an acknowledged unsigned plugin.
    static func trustDecision(
        files: Files, offered: [MinisignPublicKey], name: String, directory: String, trusted: TrustedKeys?,
        acknowledged: Bool
    ) throws(CoreError) -> TrustedKeys? {
        guard files.isSigned else {
            if acknowledged && trusted == nil { return nil }
            if trusted != nil {
                throw CoreError(
                    code: .notSigned, plugin: name,
                    message: "it has no signature (\(directory)/plugin.json.minisig is missing) although a key is "
                        + "trusted for it in [trusted_plugins] — a stripped signature is refused even when "
                        + "acknowledged; restore the signed release, or remove the trust entry "
                        + "(`vigil plugin untrust \(name)`) to develop it unsigned")
            }
            throw notSigned(name: name, directory: directory, acknowledgeable: true)
        }
        guard let trusted else {
            let ack = acknowledged ? " (acknowledge_unsafe_plugins only admits plugins with no signature at all)" : ""
            guard let first = offered.first else {
                throw CoreError(
                    code: .noPublicKey, plugin: name,
                    message: "it is signed but ships no plugin.pub and no key is trusted for it\(ack) — ask the "
                        + "publisher for plugin.pub, or pin the key you got from them with "
                        + "`\(TrustCommand.display(name, "--fingerprint ed25519:…"))`")
            }
            let list =
                offered.count == 1
                ? "key \(first.fingerprint)" : "keys " + offered.map { "\($0.fingerprint)" }.joined(separator: ", ")
            throw CoreError(
                code: .untrustedKey, plugin: name,
                message: "it is signed with \(list), which is not trusted\(ack) — review it and "
                    + "run `\(TrustCommand.display(name))`")
        }
        if let other = offered.first(where: { !trusted.contains($0.fingerprint) }) {
            throw CoreError(
                code: .keyRotation, plugin: name,
                message: "the trusted key \(trusted) does not match the key the plugin offers, "
                    + "\(other.fingerprint) — if you typed it, fix it under [trusted_plugins]; if the publisher "
                    + "rotated keys, confirm the new fingerprint with them, review and trust again "
                    + "(`\(TrustCommand.display(name))`); otherwise the plugin was replaced")
        }
        return trusted
    }

    /// Verifies every signature file against `keys` and counts the distinct keys with a valid
    /// signature; at least `keys.threshold` must have signed.
    ///
    /// Each signature file is verified over the exact manifest bytes; a key counts once however many
    /// files (or key ids) it signed. A malformed signature file or one in minisign's legacy `Ed`
    /// form refuses the plugin (fail closed); a well-formed signature by a key outside the set counts
    /// for nothing.
    ///
    /// - Returns: the keys that signed.
    @discardableResult
    static func verifyThreshold(
        _ files: Files, keys: TrustedKeys, offered: [MinisignPublicKey], name: String
    ) throws(CoreError) -> [Fingerprint] {
        var signers: [Fingerprint] = []
        var firstFailure: CoreError?
        for file in files.signatures {
            // A malformed file or a legacy `Ed` one refuses the plugin, whoever signed it: the
            // first key's verification reports it (the format and algorithm are checked first).
            let parsed = try? MinisignSignature(fileContents: file.bytes)
            if parsed == nil || parsed?.algorithm != Array("ED".utf8) {
                try verifySignature(
                    file.bytes, over: files.manifest, with: keys.keys[0], name: name,
                    fileName: signatureFileName(file.number))
            }
            for key in keys.keys where !signers.contains(key) {
                // When a key file holds this key, a signature by it must carry that key's id.
                let keyID = offered.first { $0.fingerprint == key }?.keyID
                do throws(CoreError) {
                    try verifySignature(
                        file.bytes, over: files.manifest, with: key, name: name, keyID: keyID,
                        fileName: signatureFileName(file.number))
                    signers.append(key)
                    break
                } catch {
                    if firstFailure == nil { firstFailure = error }
                }
            }
        }
        guard signers.count < keys.threshold else { return signers }
        if keys.isSingleKey, let firstFailure { throw firstFailure }
        let signed =
            signers.isEmpty ? "none of them" : "only " + signers.map { "\($0)" }.joined(separator: ", ")
        throw CoreError(
            code: .signatureThreshold, plugin: name,
            message: "\(keys.threshold) of its \(keys.keys.count) trusted keys must sign its manifest, but \(signed) "
                + "signed the exact bytes of plugin.json (\(files.signatures.count) signature file(s) checked) — ask the "
                + "publisher for the missing co-signatures (plugin.json.N.minisig); never lower the threshold to "
                + "make it load")
    }

    /// The key state reached from `trusted` by the signed rotations in `directory`, starting from
    /// the state `rollback` recorded for that base; a revocation is recorded (when `record`) and
    /// thrown as `.revoked`.
    static func followRotations(
        directory: String, name: String, from trusted: TrustedKeys, rollback: RollbackStore?, record: Bool
    ) throws(CoreError) -> (keys: TrustedKeys, version: Int) {
        let start = try rollback?.rotation(plugin: name, base: trusted) ?? RotationState(keys: trusted, version: 0)
        let reached = try RotationChain.walk(directory: directory, name: name, from: start)
        guard let now = reached.keys else {
            if let rollback, record { try rollback.recordRotation(plugin: name, base: trusted, state: reached) }
            throw CoreError(
                code: .revoked, plugin: name,
                message: "its publisher revoked it: key rotation \(KeyRotation.fileName(reached.version)) "
                    + "rotates its keys to none — remove it from plugins in vigil.toml; a revocation cannot be "
                    + "undone, a new release must be trusted again (`\(TrustCommand.display(name))`)")
        }
        return (now, reached.version)
    }

    static func notSigned(name: String, directory: String, acknowledgeable: Bool) -> CoreError {
        CoreError(
            code: .notSigned, plugin: name,
            message: "it is not signed (\(directory)/plugin.json.minisig is missing) — ask the publisher for a signed "
                + "release, or sign it yourself with `vigil plugin sign`"
                + (acknowledgeable
                    ? "; during development only, list it in acknowledge_unsafe_plugins in vigil.toml" : ""))
    }

    /// Parses `plugin.pub` if present.
    static func offeredKey(_ files: Files, name: String) throws(CoreError) -> MinisignPublicKey? {
        try offeredKeys(files, name: name).first
    }

    /// Parses every key file (`plugin.pub`, `plugin.N.pub`), distinct keys in file order.
    static func offeredKeys(_ files: Files, name: String) throws(CoreError) -> [MinisignPublicKey] {
        var keys: [MinisignPublicKey] = []
        for file in files.publicKeys {
            let fileName = publicKeyFileName(file.number)
            guard let text = String(validating: file.bytes, as: UTF8.self) else {
                throw CoreError(
                    code: .keyInvalid, plugin: name,
                    message: "its \(fileName) is not UTF-8 text — ask the publisher for a correct \(fileName)")
            }
            let key: MinisignPublicKey
            do {
                key = try MinisignPublicKey(fileContents: text)
            } catch {
                throw CoreError(
                    code: .keyInvalid, plugin: name,
                    message: "its \(fileName) is not a valid minisign public key (\(error)) — ask the publisher for a "
                        + "correct \(fileName)", cause: cryptoCause(error))
            }
            if !keys.contains(where: { $0.fingerprint == key.fingerprint }) { keys.append(key) }
        }
        return keys
    }

    /// Verifies a minisign signature file over `message` with `fingerprint`'s key, mapping crypto
    /// errors to the core's kinds.
    ///
    /// - Parameter keyID: The minisign key id the signature must carry (from a `plugin.pub` holding
    ///   the same key), or `nil` when only the raw key is known.
    public static func verifySignature(
        _ signatureBytes: [UInt8], over message: [UInt8], with fingerprint: Fingerprint, name: String,
        keyID: [UInt8]? = nil, fileName: String = "plugin.json.minisig"
    ) throws(CoreError) {
        let tamper =
            " — the manifest or its signature was changed after signing, or it was signed with another "
            + "key; reinstall the plugin from its publisher"
        let signature: MinisignSignature
        do {
            signature = try MinisignSignature(fileContents: signatureBytes)
        } catch {
            throw signatureRefusal(error, name, "its signature file \(fileName) is malformed", tamper, fileName)
        }
        if let keyID, signature.keyID != keyID {
            throw CoreError(
                code: .invalidSignature, plugin: name,
                message: "its signature \(fileName) names key id \(signature.keyIDHex) but the key file is key id "
                    + "\(MinisignPublicKey(keyID: keyID, key: fingerprint.publicKey).keyIDHex)" + tamper)
        }
        do {
            if let keyID {
                try signature.verify(message, with: MinisignPublicKey(keyID: keyID, key: fingerprint.publicKey))
            } else {
                try signature.verify(message, with: fingerprint.publicKey)
            }
        } catch {
            throw signatureRefusal(
                error, name, "its signature \(fileName) does not verify with the key \(fingerprint)", tamper, fileName)
        }
    }

    /// The refusal of plugin `name` for the crypto `error` of reading or checking its signature:
    /// ``CoreError/Code/unsupportedSignatureAlgorithm`` for an algorithm Vigil does not accept, else
    /// ``CoreError/Code/invalidSignature`` saying `what` happened, the error and the `remedy`.
    private static func signatureRefusal(
        _ error: any Error, _ name: String, _ what: String, _ remedy: String, _ fileName: String
    ) -> CoreError {
        if (error as? CryptoError)?.code == .unsupportedAlgorithm {
            // The crypto error already says what the algorithm is, why it is refused and how to re-sign.
            return CoreError(
                code: .unsupportedSignatureAlgorithm, plugin: name, message: "\(fileName): \(error)",
                cause: cryptoCause(error))
        }
        return CoreError(
            code: .invalidSignature, plugin: name, message: "\(what) (\(error))" + remedy, cause: cryptoCause(error))
    }

    /// The crypto error underneath a refusal, kept typed.
    private static func cryptoCause(_ error: any Error) -> ErrorCause? {
        (error as? CryptoError).map(ErrorCause.init)
    }
}
