import VigilCrypto

/// A key rotation statement, `rotations/N.json` in a plugin directory: the plugin's key set
/// changes from `from` to `to`, signed by a threshold of the old keys AND a threshold of the new
/// ones (TUF's root rotation, spec §5.3; TAP 8 for a single role).
///
/// ```json
/// {
///   "schema": "vigil.key-rotation/v1",
///   "plugin": "heartbeat",
///   "version": 1,
///   "from": {"keys": ["ed25519:…"], "threshold": 1},
///   "to": {"keys": ["ed25519:…", "ed25519:…"], "threshold": 2}
/// }
/// ```
///
/// Signatures are minisign files over the exact bytes: `N.json.minisig`, `N.json.2.minisig`, ….
/// A rotation to no keys (`"keys": [], "threshold": 0`) revokes the plugin (TAP 20).
public struct KeyRotation: Sendable, Hashable {
    /// The schema tag.
    public static let schema = "vigil.key-rotation/v1"
    /// The largest rotation statement accepted, in bytes.
    public static let maxFileSize = 16 * 1024
    /// The longest chain of rotations accepted (python-tuf's `max_root_rotations` is 256 too).
    public static let maxChainLength = 256
    /// The most signature files read for one statement (every old and every new key).
    public static let maxSignatureFiles = 2 * TrustedKeys.maxKeys

    /// The plugin's name.
    public let plugin: String
    /// The rotation's version, ≥ 1; each one is exactly one more than the one before.
    public let version: Int
    /// The keys trusted before.
    public let from: TrustedKeys
    /// The keys trusted after, or `nil` for a revocation (a rotation to no keys).
    public let to: TrustedKeys?

    /// A statement.
    public init(plugin: String, version: Int, from: TrustedKeys, to: TrustedKeys?) {
        self.plugin = plugin
        self.version = version
        self.from = from
        self.to = to
    }

    /// The statement file's path relative to the plugin directory.
    public static func fileName(_ version: Int) -> String { "rotations/\(version).json" }

    /// Signature file `number` of statement `version`, relative to the plugin directory.
    public static func signatureFileName(_ version: Int, _ number: Int) -> String {
        number == 1 ? "rotations/\(version).json.minisig" : "rotations/\(version).json.\(number).minisig"
    }

    /// The statement as written: one member per line, in schema order.
    public func serialized() -> [UInt8] {
        func keys(_ set: TrustedKeys?) -> JSONValue {
            .object([
                ("keys", .array((set?.keys ?? []).map { .string($0.description) })),
                ("threshold", .number(String(set?.threshold ?? 0))),
            ])
        }
        return JSONValue.object([
            ("schema", .string(Self.schema)), ("plugin", .string(plugin)), ("version", .number(String(version))),
            ("from", keys(from)), ("to", keys(to)),
        ]).serialized()
    }

    /// Parses a statement strictly (call it only on bytes whose signatures by the old keys
    /// verified): no unknown or missing fields, no duplicate keys, valid key sets.
    ///
    /// - Throws: ``CoreError`` `.rotationInvalid` naming the file and the rule.
    public static func decode(_ bytes: [UInt8], plugin: String, file: String) throws(CoreError) -> KeyRotation {
        func bad(_ why: String) -> CoreError {
            CoreError(
                code: .rotationInvalid, plugin: plugin,
                message: "its key rotation \(file) is invalid: \(why) — the publisher must fix and re-sign it; until "
                    + "then the plugin cannot change keys")
        }
        let json: JSONValue
        do {
            json = try StrictJSON.parse(bytes, maxDepth: 4, maxSize: maxFileSize)
        } catch {
            throw bad("\(error)")
        }
        guard case .object(let members) = json else { throw bad("it is not a JSON object") }
        let known = ["schema", "plugin", "version", "from", "to"]
        if let unknown = members.first(where: { !known.contains($0.key) }) {
            throw bad("unknown field \(JSONValue.quote(Sanitizer.display(unknown.key)))")
        }
        guard json["schema"] == .string(schema) else { throw bad("schema is not \"\(schema)\"") }
        guard case .string(let name)? = json["plugin"], name == plugin else {
            throw bad("it is not for the plugin \(plugin)")
        }
        guard case .number(let v)? = json["version"], let version = Int(v), version >= 1, String(version) == v else {
            throw bad("version is not a whole number ≥ 1")
        }
        func set(_ field: String) throws(CoreError) -> TrustedKeys? {
            guard case .object(let fields)? = json[field], fields.count == 2,
                case .array(let list)? = json[field]?["keys"], case .number(let t)? = json[field]?["threshold"],
                let threshold = Int(t), String(threshold) == t
            else { throw bad("\(field) is not {\"keys\": [\"ed25519:…\", …], \"threshold\": K}") }
            guard let keys = TrustedKeys.fingerprints(list) else {
                throw bad("\(field).keys holds something other than a canonical \"ed25519:…\" key")
            }
            if keys.isEmpty && threshold == 0 { return nil }
            do {
                return try TrustedKeys(keys: keys, threshold: threshold)
            } catch {
                throw bad("\(field): \(error)")
            }
        }
        guard let from = try set("from") else { throw bad("from has no keys") }
        return KeyRotation(plugin: plugin, version: version, from: from, to: try set("to"))
    }
}

/// Where a plugin's key set stands after its rotations: the keys that sign its manifests now and
/// the last rotation applied.
public struct RotationState: Sendable, Hashable {
    /// The key set trusted now, or `nil` when a rotation to no keys revoked the plugin.
    public let keys: TrustedKeys?
    /// The version of the last rotation applied (0: none).
    public let version: Int

    /// A state.
    public init(keys: TrustedKeys?, version: Int) {
        self.keys = keys
        self.version = version
    }
}

/// Walks a plugin directory's `rotations/` from a known key set.
public enum RotationChain {
    /// The state reached from `start` by the rotations in `directory`.
    ///
    /// Each statement's exact bytes are first checked to be signed by a threshold of the keys
    /// trusted at that point (nothing is parsed before), then parsed; the next statement must be
    /// version exactly one more than the last, name the current keys as `from`, and be signed by a
    /// threshold of its `to` keys too. Statements before the host's position are skipped when they
    /// are not signed by its keys (a rotation older than the key this host pinned), and a
    /// statement whose `to` is the host's keys places it at that version. The chain stops at the
    /// first missing version; at most ``KeyRotation/maxChainLength`` statements are read.
    ///
    /// - Throws: ``CoreError`` `.rotationInvalid` for a malformed statement, a version that is not
    ///   its file name's, a `from` that is not the current keys, a file over its cap or a chain
    ///   over its cap; `.rotationNotSigned` when the old or the new threshold is not met;
    ///   `.unsupportedSignatureAlgorithm` for a legacy `Ed` signature.
    public static func walk(directory: String, name: String, from start: RotationState) throws(CoreError)
        -> RotationState
    {
        var state = start
        var placed = start.version > 0
        var version = start.version + 1
        while let keys = state.keys {
            guard
                let bytes = try SafeFile.readIfPresent(
                    relativePath: KeyRotation.fileName(version), inside: directory, cap: KeyRotation.maxFileSize,
                    what: "key rotation", plugin: name)
            else { break }
            guard version <= KeyRotation.maxChainLength else {
                throw CoreError(
                    code: .rotationInvalid, plugin: name,
                    message:
                        "it has more than \(KeyRotation.maxChainLength) key rotations (\(KeyRotation.fileName(version)) "
                        + "exists) — Vigil stops there rather than walk an endless chain; the publisher must re-key "
                        + "the plugin under a new name, and hosts trust it again")
            }
            let file = KeyRotation.fileName(version)
            let signatures = try readSignatures(directory: directory, name: name, version: version)
            let oldSigners = try Signatures.signers(signatures, over: bytes, keys: keys.keys, name: name)
            guard oldSigners.count >= keys.threshold else {
                if !placed {
                    // Not this host's keys: a rotation older than the key it pinned. Skip it unparsed.
                    version += 1
                    continue
                }
                throw CoreError(
                    code: .rotationNotSigned, plugin: name,
                    message: "its key rotation \(file) is signed by \(oldSigners.count) of the current keys \(keys), "
                        + "but \(keys.threshold) must sign it — a rotation must be signed by the old keys; the "
                        + "publisher signs it with `vigil plugin rotate` (never lower the threshold)")
            }
            let rotation = try KeyRotation.decode(bytes, plugin: name, file: file)
            guard rotation.version == version else {
                throw CoreError(
                    code: .rotationInvalid, plugin: name,
                    message: "its key rotation \(file) says version \(rotation.version) — a rotation's version must be "
                        + "its file's number, each exactly one more than the last; the publisher must fix it")
            }
            if !placed && rotation.to == keys && rotation.from != keys {
                // This host pinned the keys this rotation led to: it stands at this version.
                state = RotationState(keys: keys, version: version)
                placed = true
                version += 1
                continue
            }
            guard rotation.from == keys else {
                if !placed {
                    version += 1
                    continue
                }
                throw CoreError(
                    code: .rotationInvalid, plugin: name,
                    message: "its key rotation \(file) rotates from \(rotation.from), not from the keys trusted now "
                        + "(\(keys)) — the publisher must fix it")
            }
            if let to = rotation.to {
                let newSigners = try Signatures.signers(signatures, over: bytes, keys: to.keys, name: name)
                guard newSigners.count >= to.threshold else {
                    throw CoreError(
                        code: .rotationNotSigned, plugin: name,
                        message: "its key rotation \(file) is signed by \(newSigners.count) of the new keys \(to), but "
                            + "\(to.threshold) must sign it — the new keys co-sign with `vigil plugin rotate "
                            + "PLUGIN_DIR --cosign NEW.key`")
                }
            }
            state = RotationState(keys: rotation.to, version: version)
            placed = true
            version += 1
        }
        return state
    }

    /// The signature files of statement `version` that exist.
    static func readSignatures(
        directory: String, name: String, version: Int
    ) throws(CoreError) -> [(name: String, bytes: [UInt8])] {
        var out: [(name: String, bytes: [UInt8])] = []
        for number in 1...KeyRotation.maxSignatureFiles {
            let file = KeyRotation.signatureFileName(version, number)
            if let bytes = try SafeFile.readIfPresent(
                relativePath: file, inside: directory, cap: PluginLoader.maxSignatureSize, what: "signature",
                plugin: name)
            {
                out.append((file, bytes))
            }
        }
        return out
    }
}

/// Counting signers among several minisign signature files.
enum Signatures {
    /// The distinct keys of `keys` that made a valid signature over `message` in one of `files`.
    /// A malformed file or a legacy `Ed` one refuses everything (fail closed).
    static func signers(
        _ files: [(name: String, bytes: [UInt8])], over message: [UInt8], keys: [Fingerprint], name: String
    ) throws(CoreError) -> [Fingerprint] {
        var signers: [Fingerprint] = []
        for file in files {
            let signature: MinisignSignature
            do {
                signature = try MinisignSignature(fileContents: file.bytes)
            } catch {
                throw CoreError(
                    code: .invalidSignature, plugin: name,
                    message: "its signature file \(file.name) is malformed (\(error)) — reinstall the plugin from its "
                        + "publisher", cause: ErrorCause(error))
            }
            for key in keys where !signers.contains(key) {
                do {
                    try signature.verify(message, with: key.publicKey)
                    signers.append(key)
                    break
                } catch  where error.code == .unsupportedAlgorithm {
                    throw CoreError(
                        code: .unsupportedSignatureAlgorithm, plugin: name, message: "\(file.name): \(error)",
                        cause: ErrorCause(error))
                } catch {
                    continue
                }
            }
        }
        return signers
    }
}
