import Glibc
public import VigilCrypto

/// A plugin's signed revocation list, `revocations.json` in its directory, signed like a manifest
/// by a threshold of the plugin's current keys (`revocations.json.minisig`, `.N.minisig`):
///
/// ```json
/// {
///   "schema": "vigil.revocations/v1",
///   "plugin": "my-plugin",
///   "version": 3,
///   "expires": "2027-06-30T00:00:00Z",
///   "keys": ["ed25519:…"],
///   "manifests": ["<sha256 of a revoked plugin.json>"],
///   "version_floor": "1.4.0"
/// }
/// ```
///
/// Revoked keys no longer count toward the threshold; a listed manifest digest and a version below
/// the floor are refused (`revoked`). Each host keeps the newest list it accepted (its `version`
/// never goes back), so deleting the file revokes nothing back.
public struct RevocationList: Sendable, Hashable {
    /// The schema tag.
    public static let schema = "vigil.revocations/v1"
    /// The file name in the plugin directory.
    public static let fileName = "revocations.json"
    /// The largest list accepted, in bytes.
    public static let maxFileSize = 64 * 1024

    /// The list's version, ≥ 1; a host never accepts a lower one than it has.
    public let version: Int
    /// When the list stops being fresh (seconds since the epoch), if it says.
    public let expires: Int64?
    /// Revoked keys.
    public let keys: [Fingerprint]
    /// Lower-case hex SHA-256 digests of revoked manifests.
    public let manifests: [String]
    /// Versions below this one are revoked.
    public let versionFloor: SemanticVersion?

    /// A list.
    public init(
        version: Int, expires: Int64? = nil, keys: [Fingerprint] = [], manifests: [String] = [],
        versionFloor: SemanticVersion? = nil
    ) {
        self.version = version
        self.expires = expires
        self.keys = keys
        self.manifests = manifests
        self.versionFloor = versionFloor
    }

    /// The signature file `number` (1: `revocations.json.minisig`).
    public static func signatureFileName(_ number: Int) -> String {
        number == 1 ? "revocations.json.minisig" : "revocations.json.\(number).minisig"
    }

    /// The list as written.
    public func serialized(plugin: String) -> [UInt8] {
        var members: [(key: String, value: JSONValue)] = [
            ("schema", .string(Self.schema)), ("plugin", .string(plugin)), ("version", .number(String(version))),
        ]
        if let expires { members.append(("expires", .string(Freshness.formatRFC3339(expires)))) }
        members.append(("keys", .array(keys.map { .string($0.description) })))
        members.append(("manifests", .array(manifests.map(JSONValue.string))))
        members.append(("version_floor", versionFloor.map { .string($0.description) } ?? .null))
        return JSONValue.object(members).serialized()
    }

    /// Parses a list strictly (only after its signatures verified).
    ///
    /// - Throws: ``CoreError`` `.revocationInvalid`.
    public static func decode(_ bytes: [UInt8], plugin: String) throws(CoreError) -> RevocationList {
        func bad(_ why: String) -> CoreError {
            CoreError(
                code: .revocationInvalid, plugin: plugin,
                message: "its revocation list \(fileName) is invalid: \(why) — the publisher must fix and re-sign it")
        }
        let json: JSONValue
        do {
            json = try StrictJSON.parse(bytes, maxDepth: 3, maxSize: maxFileSize)
        } catch {
            throw bad("\(error)")
        }
        guard case .object(let members) = json else { throw bad("it is not a JSON object") }
        let known = ["schema", "plugin", "version", "expires", "keys", "manifests", "version_floor"]
        if let unknown = members.first(where: { !known.contains($0.key) }) {
            throw bad("unknown field \(JSONValue.quote(Sanitizer.display(unknown.key)))")
        }
        guard json["schema"] == .string(schema) else { throw bad("schema is not \"\(schema)\"") }
        guard json["plugin"] == .string(plugin) else { throw bad("it is not for the plugin \(plugin)") }
        guard case .number(let v)? = json["version"], let version = Int(v), version >= 1, String(version) == v else {
            throw bad("version is not a whole number ≥ 1")
        }
        var expires: Int64?
        if let e = json["expires"] {
            guard case .string(let text) = e, let seconds = Freshness.parseRFC3339(text) else {
                throw bad("expires is not an RFC 3339 date-time")
            }
            expires = seconds
        }
        var keys: [Fingerprint] = []
        if let list = json["keys"] {
            guard case .array(let elements) = list, let parsed = TrustedKeys.fingerprints(elements) else {
                throw bad("keys is not an array of canonical \"ed25519:…\" keys")
            }
            keys = parsed
        }
        var manifests: [String] = []
        if let list = json["manifests"] {
            guard case .array(let elements) = list else { throw bad("manifests is not an array") }
            for element in elements {
                guard case .string(let text) = element, text.utf8.count == 64,
                    text.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
                else { throw bad("manifests holds something other than a lower-case hex SHA-256") }
                manifests.append(text)
            }
        }
        var floor: SemanticVersion?
        if let f = json["version_floor"], f != .null {
            guard case .string(let text) = f, let version = SemanticVersion(text) else {
                throw bad("version_floor is not a semantic version")
            }
            floor = version
        }
        return RevocationList(
            version: version, expires: expires, keys: keys, manifests: manifests, versionFloor: floor)
    }

    /// Reads, verifies (a threshold of `keys` over the exact bytes) and parses the plugin's list;
    /// `nil` when it has none.
    ///
    /// - Throws: ``CoreError`` `.revocationInvalid` (not signed by the threshold, malformed).
    static func read(directory: String, name: String, keys: TrustedKeys) throws(CoreError) -> RevocationList? {
        guard
            let bytes = try SafeFile.readIfPresent(
                relativePath: fileName, inside: directory, cap: maxFileSize, what: "revocation list", plugin: name)
        else { return nil }
        var files: [(name: String, bytes: [UInt8])] = []
        for number in 1...TrustedKeys.maxKeys {
            let file = signatureFileName(number)
            if let sig = try SafeFile.readIfPresent(
                relativePath: file, inside: directory, cap: PluginLoader.maxSignatureSize, what: "signature",
                plugin: name)
            {
                files.append((file, sig))
            }
        }
        let signers = try Signatures.signers(files, over: bytes, keys: keys.keys, name: name)
        guard signers.count >= keys.threshold else {
            throw CoreError(
                code: .revocationInvalid, plugin: name,
                message: "its revocation list \(fileName) is signed by \(signers.count) of its keys \(keys), but "
                    + "\(keys.threshold) must sign it — the publisher signs it with `vigil plugin revoke`")
        }
        return try decode(bytes, plugin: name)
    }

    /// Refuses a manifest (with digest `sha`, signed by `signers`) when this list revokes it: its
    /// digest is listed, its version is below the floor, or fewer than `threshold` of its signers
    /// are left once the revoked keys are taken out.
    func check(
        plugin: String, version: SemanticVersion, sha: String, signers: [Fingerprint], threshold: Int
    ) throws(CoreError) {
        let remedy =
            " — the publisher revoked it (revocation list version \(self.version)); install a release that "
            + "is not revoked"
        if manifests.contains(sha) {
            throw CoreError(
                code: .revoked, plugin: plugin,
                message: "its manifest (SHA-256 \(sha.prefix(16))…) is on its revocation list" + remedy)
        }
        if let versionFloor, version < versionFloor {
            throw CoreError(
                code: .revoked, plugin: plugin,
                message: "its version \(version) is below the revocation list's floor \(versionFloor)" + remedy)
        }
        let revokedSigners = signers.filter(keys.contains)
        if !revokedSigners.isEmpty, signers.count - revokedSigners.count < threshold {
            throw CoreError(
                code: .revoked, plugin: plugin,
                message: "the key(s) that signed it (\(revokedSigners.map(\.description).joined(separator: ", "))) "
                    + "are revoked, leaving fewer than \(threshold) valid signature(s)" + remedy
                    + " (the publisher signs it with keys that are not revoked)")
        }
    }
}

/// The publisher's side: `vigil plugin revoke` writes the next revocation list (the current one's
/// entries plus the new ones, version + 1) and signs it.
public enum PluginRevoker {
    /// Writes and signs `revocations.json` in `directory` with every key of `signers`.
    ///
    /// - Returns: the list written.
    @discardableResult
    public static func revoke(
        directory: String, keys: [Fingerprint], manifests: [String], versionFloor: SemanticVersion?,
        expires: Int64?, signers: [MinisignSecretKey]
    ) throws(CoreError) -> RevocationList {
        let directory = Path.normalized(directory)
        let name = Path.lastComponent(of: directory)
        var current = RevocationList(version: 0)
        if let bytes = try SafeFile.readIfPresent(
            relativePath: RevocationList.fileName, inside: directory, cap: RevocationList.maxFileSize,
            what: "revocation list", plugin: name)
        {
            current = try RevocationList.decode(bytes, plugin: name)
        }
        let floor = [current.versionFloor, versionFloor].compactMap { $0 }.max()
        let list = RevocationList(
            version: current.version + 1, expires: expires,
            keys: current.keys + keys.filter { !current.keys.contains($0) },
            manifests: current.manifests + manifests.filter { !current.manifests.contains($0) }, versionFloor: floor)
        // Validate what is written exactly as hosts will read it.
        let bytes = list.serialized(plugin: name)
        _ = try RevocationList.decode(bytes, plugin: name)
        try AtomicFile.write(bytes, to: Path.join(directory, RevocationList.fileName), mode: 0o644)
        for number in 1...TrustedKeys.maxKeys {
            let path = Path.join(directory, RevocationList.signatureFileName(number))
            if number <= signers.count {
                let signature = try MinisignSignature.sign(
                    bytes, with: signers[number - 1], plugin: name,
                    trustedComment: "\(name) revocations \(list.version)",
                    untrustedComment: "revocation list signature from vigil plugin revoke (\(name))")
                try AtomicFile.write(Array(signature.fileContents().utf8), to: path, mode: 0o644)
            } else if unlink(path) != 0 && errno != ENOENT {
                throw CoreError.io("remove", path: path, errno: errno, call: "unlink")
            }
        }
        return list
    }
}
