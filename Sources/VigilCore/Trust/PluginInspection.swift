public import VigilCrypto
import VigilPlugin

/// What `vigil plugin list` reports for one plugin: where it is, whether its signature verifies
/// and with which key, whether it is trusted, and how its requirements compare with `[host]`.
///
/// Built by the same loader and rollback store a host uses, so a plugin the host would refuse is
/// never shown as fine.
public struct PluginInspection: Sendable {
    /// The signature column.
    public enum Signature: String, Sendable, Hashable {
        /// Verified with the trusted key.
        case valid
        /// No signature file.
        case missing
        /// The signature does not verify (or is malformed).
        case invalid
        /// minisign's legacy algorithm, which Vigil refuses.
        case unsupportedAlgorithm = "unsupported-algorithm"
        /// Not trusted; it verifies with the key the plugin offers (shown only for review).
        case validWithOfferedKey = "valid-with-offered-key"
        /// Not trusted, and it does not even verify with the key it offers.
        case invalidWithOfferedKey = "invalid-with-offered-key"
        /// Verification did not get as far as the signature.
        case unknown
    }

    /// The trust column.
    public enum Trust: String, Sendable, Hashable {
        case trusted
        case untrusted
        case acknowledgedUnsigned = "acknowledged-unsigned"
        case keyRotation = "key-rotation"
    }

    /// One requirement and its state: `declared`/`undeclared` for declarations, `probed-at-start`
    /// for environment requirements.
    public struct Requirement: Sendable, Hashable {
        public let kind: String
        public let value: String?
        public let state: String
    }

    public var name: String
    /// The plugin directory (`nil` when it was not found).
    public var directory: String?
    /// True when `plugins` in `vigil.toml` lists it.
    public var activated: Bool
    /// The manifest's version (when its signature verified with the trusted or offered key).
    public var version: String?
    public var signature: Signature
    public var trust: Trust
    /// The keys `[trusted_plugins]` trusts for it, and how many must sign.
    public var trustedKeys: TrustedKeys?
    /// The first trusted key.
    public var trustedFingerprint: Fingerprint? { trustedKeys?.keys.first }
    public var offeredFingerprint: Fingerprint?
    /// The signed key rotation that led from the trusted keys to the ones that signed it, if any.
    public var rotation: RotationState?
    /// When its signed manifest stops being fresh (seconds since the epoch), if it says.
    public var expires: Int64?
    public var requirements: [Requirement] = []
    /// The manifest shown (verified with the trusted key, or with the offered one for an
    /// untrusted plugin), whose capabilities the list shows; `nil` when none verified.
    public var manifest: PluginManifest?
    /// Why the host would refuse it, or `nil` when it loads.
    public var error: CoreError?

    /// Inspects every plugin in the configuration's plugin paths and every activated plugin.
    ///
    /// - Parameter store: the rollback store a host would use, or the error that a host would
    ///   refuse to start with (no state directory); that error is then every plugin's error.
    public static func inspectAll(
        configuration: HostConfiguration, store: Result<RollbackStore, CoreError>
    ) -> [PluginInspection] {
        var rows = PluginLoader.discover(in: configuration.pluginPaths).map {
            (name: $0.name, directory: Optional($0.directory))
        }
        for name in configuration.plugins where !rows.contains(where: { $0.name == name }) {
            rows.append((name, nil))
        }
        rows.sort { $0.name < $1.name }
        let loader = PluginLoader(configuration: configuration, rollbackStore: try? store.get())
        return rows.map { row in
            var report = inspect(row.name, directory: row.directory, loader: loader, configuration: configuration)
            if case .failure(let storeError) = store, report.error == nil, report.trust == .trusted {
                report.error = storeError
            }
            return report
        }
    }

    static func inspect(
        _ name: String, directory: String?, loader: PluginLoader, configuration: HostConfiguration
    ) -> PluginInspection {
        let trusted = configuration.trustedKeys[name]
        var report = PluginInspection(
            name: name, directory: directory, activated: configuration.plugins.contains(name), version: nil,
            signature: .unknown, trust: trusted == nil ? .untrusted : .trusted, trustedKeys: trusted)
        if let directory,
            let files = try? PluginLoader.readFiles(directory: directory, name: name),
            let pub = files.publicKey, let text = String(validating: pub, as: UTF8.self),
            let offered = try? MinisignPublicKey(fileContents: text)
        {
            report.offeredFingerprint = offered.fingerprint
        }
        var manifest: PluginManifest?
        do {
            let plugin = try loader.loadOrThrow(name, record: false)
            manifest = plugin.manifest
            report.rotation = plugin.rotation
            switch plugin.trust {
            case .trusted:
                report.signature = .valid
            case .acknowledgedUnsigned:
                report.signature = .missing
                report.trust = .acknowledgedUnsigned
            }
        } catch {
            report.error = error
            report.signature = signature(after: error.code)
            if error.code == .keyRotation { report.trust = .keyRotation }
            // Show what an untrusted plugin is, verified with the key it offers (never trusted by this).
            if [.untrustedKey, .keyRotation].contains(error.code) {
                if let directory,
                    let offered = try? PluginLoader.verify(
                        directory: directory, name: name, policy: .offered, rollback: nil, record: false)
                {
                    report.signature = .validWithOfferedKey
                    manifest = offered.manifest
                } else {
                    report.signature = .invalidWithOfferedKey
                }
            }
        }
        if let manifest {
            report.version = "\(manifest.version)"
            report.manifest = manifest
            report.expires = manifest.expires
            // Declarations only (nothing is probed here), so no environment is needed.
            let checker = RequirementChecker(
                declarations: configuration.host, environment: RequirementChecker.Environment(variables: [:]))
            report.requirements = manifest.hostRequirements.map { r in
                let state =
                    !r.isDeclaration ? "probed-at-start" : checker.check(r) == nil ? "declared" : "undeclared"
                return Requirement(kind: r.kindTag, value: r.value, state: state)
            }
        }
        return report
    }

    /// The signature column for a refusal: `valid` only for refusals that happen after the
    /// signature verified with the trusted key. Exhaustive over every code, so a new refusal
    /// code must be placed here before it compiles.
    public static func signature(after code: CoreError.Code) -> Signature {
        switch code.kind {
        case .notSigned: .missing
        case .invalidSignature, .signatureThreshold: .invalid
        case .unsupportedSignatureAlgorithm: .unsupportedAlgorithm
        // Refused before or instead of verifying the signature.
        case .noPublicKey, .untrustedKey, .keyRotation, .pluginNotFound, .fileTooLarge, .notRegularFile,
            .fileNotFound, .keyInvalid, .keyUnsafe, .fingerprintMismatch, .ioFailure, .configInvalid, .configNotFound,
            .configUnsafe, .trustDeclined, .rotationInvalid, .rotationNotSigned, .revoked, .revocationInvalid,
            .revocationRollback:
            .unknown
        // Refused after the signature verified with the trusted key.
        case .malformedManifest, .nameMismatch, .rollback, .resourceMismatch, .stateInvalid, .stateUnsafe, .expired,
            .clockRolledBack, .revocationExpired, .capabilitiesGrown:
            .valid
        }
    }
}
