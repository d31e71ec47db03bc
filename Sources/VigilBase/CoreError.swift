/// An error from Vigil's core: configuration, manifests, signatures, trust and state.
///
/// Declared here, under the core, because the file layer (``SafeFile``, ``AtomicFile``,
/// ``StateFile``) throws it too, and modules that need only that layer (the audio plugins' state
/// files) must not link the core's TOMLKit and libsodium; VigilCore re-exports it.
///
/// Every refusal has its own ``Code`` and a ``message`` that names the plugin (when there is
/// one), states the cause and gives the remedy. The CLI prints ``description``.
public struct CoreError: StructuredError, Hashable {
    /// The kind of failure, stable for scripts and tests.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// Every code as an enumeration, for exhaustive `switch`es (a new code fails to compile
        /// wherever it is not handled, instead of falling into a `default`).
        public enum Kind: String, Hashable, Sendable, CaseIterable {
            case notSigned = "not-signed"
            case noPublicKey = "no-public-key"
            case invalidSignature = "invalid-signature"
            case unsupportedSignatureAlgorithm = "unsupported-signature-algorithm"
            case untrustedKey = "untrusted-key"
            case keyRotation = "key-rotation"
            case signatureThreshold = "signature-threshold"
            case rotationInvalid = "rotation-invalid"
            case rotationNotSigned = "rotation-not-signed"
            case revoked = "revoked"
            case expired = "expired"
            case revocationInvalid = "revocation-invalid"
            case revocationRollback = "revocation-rollback"
            case revocationExpired = "revocation-expired"
            case clockRolledBack = "clock-rolled-back"
            case rollback = "rollback"
            case capabilitiesGrown = "capabilities-grown"
            case resourceMismatch = "resource-mismatch"
            case malformedManifest = "malformed-manifest"
            case nameMismatch = "name-mismatch"
            case pluginNotFound = "plugin-not-found"
            case fileTooLarge = "file-too-large"
            case notRegularFile = "not-regular-file"
            case fileNotFound = "file-not-found"
            case configInvalid = "config-invalid"
            case configNotFound = "config-not-found"
            case configUnsafe = "config-unsafe"
            case stateInvalid = "state-invalid"
            case stateUnsafe = "state-unsafe"
            case keyInvalid = "key-invalid"
            case keyUnsafe = "key-unsafe"
            case fingerprintMismatch = "fingerprint-mismatch"
            case trustDeclined = "trust-declined"
            case ioFailure = "io-failure"
        }
        private typealias Storage = Kind
        private let storage: Storage

        /// The code as an enumeration case.
        public var kind: Kind { storage }

        /// The code of `kind`.
        public init(_ kind: Kind) { storage = kind }

        /// The plugin directory has no `plugin.json.minisig`.
        public static let notSigned = Code(.notSigned)
        /// The plugin is signed but ships no usable `plugin.pub`, and no key is trusted for it.
        public static let noPublicKey = Code(.noPublicKey)
        /// The signature does not verify over the manifest's bytes (tampering or corruption).
        public static let invalidSignature = Code(.invalidSignature)
        /// The signature uses an algorithm Vigil refuses (minisign's legacy `Ed`).
        public static let unsupportedSignatureAlgorithm = Code(.unsupportedSignatureAlgorithm)
        /// No key is trusted for this plugin in `[trusted_plugins]`.
        public static let untrustedKey = Code(.untrustedKey)
        /// The plugin offers a key other than the trusted one.
        public static let keyRotation = Code(.keyRotation)
        /// Fewer distinct trusted keys signed the manifest than the trusted threshold requires.
        public static let signatureThreshold = Code(.signatureThreshold)
        /// A key rotation statement is malformed, out of sequence, too large or past the chain's cap.
        public static let rotationInvalid = Code(.rotationInvalid)
        /// A key rotation statement lacks the old keys' or the new keys' threshold of signatures.
        public static let rotationNotSigned = Code(.rotationNotSigned)
        /// The plugin's publisher revoked it (a rotation to no keys).
        public static let revoked = Code(.revoked)
        /// The revocation list is malformed or not signed by a threshold of the plugin's keys.
        public static let revocationInvalid = Code(.revocationInvalid)
        /// The revocation list is older than the one this host already applied.
        public static let revocationRollback = Code(.revocationRollback)
        /// The revocation list's signed `expires` has passed, so a change to the plugin is refused.
        public static let revocationExpired = Code(.revocationExpired)
        /// The signed manifest's `expires` has passed, so a change to it is refused.
        public static let expired = Code(.expired)
        /// The system clock is behind the latest trustworthy time seen, so changes are refused.
        public static let clockRolledBack = Code(.clockRolledBack)
        /// The manifest's version is lower than one already accepted, or the same version changed.
        public static let rollback = Code(.rollback)
        /// The manifest asks for capabilities the operator did not accept when they trusted the plugin
        /// (or none were recorded for a plugin that declares some).
        public static let capabilitiesGrown = Code(.capabilitiesGrown)
        /// A resource's size or SHA-256 differs from the signed manifest.
        public static let resourceMismatch = Code(.resourceMismatch)
        /// The manifest is not a valid `vigil.plugin-manifest/v1` document.
        public static let malformedManifest = Code(.malformedManifest)
        /// The manifest's `name` differs from its directory or trust entry.
        public static let nameMismatch = Code(.nameMismatch)
        /// No directory in the plugin paths holds `NAME/plugin.json`.
        public static let pluginNotFound = Code(.pluginNotFound)
        /// A file is larger than the cap for its kind.
        public static let fileTooLarge = Code(.fileTooLarge)
        /// A file is a symbolic link, directory, FIFO, device or socket.
        public static let notRegularFile = Code(.notRegularFile)
        /// A required file does not exist.
        public static let fileNotFound = Code(.fileNotFound)
        /// `vigil.toml` does not parse or holds an invalid value.
        public static let configInvalid = Code(.configInvalid)
        /// No `vigil.toml` was found.
        public static let configNotFound = Code(.configNotFound)
        /// `vigil.toml` or its directory is owned by another user or writable by group or others.
        public static let configUnsafe = Code(.configUnsafe)
        /// The rollback state file or directory is corrupt or unsafe.
        public static let stateInvalid = Code(.stateInvalid)
        /// A state file Vigil acts on (duck journal, preferences, rollback records),
        /// or a directory above it, is a symbolic link, another user's, or writable by others.
        public static let stateUnsafe = Code(.stateUnsafe)
        /// A key file is not a valid minisign key.
        public static let keyInvalid = Code(.keyInvalid)
        /// A secret key, or the directory that holds or will hold one, is owned by another user
        /// or writable by group or others.
        public static let keyUnsafe = Code(.keyUnsafe)
        /// The plugin's key differs from a fingerprint pinned on the command line.
        public static let fingerprintMismatch = Code(.fingerprintMismatch)
        /// The operator declined, or could not be asked, to trust a key.
        public static let trustDeclined = Code(.trustDeclined)
        /// A file system operation failed.
        public static let ioFailure = Code(.ioFailure)

        public var description: String { storage.rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// The plugin concerned, if any.
    public let plugin: String?
    /// Where in a text file the problem is (a `vigil.toml` key or syntax error), if anywhere.
    public let location: TextLocation?
    /// The cause and the remedy (without the location or the plugin, which are fields).
    public let message: String
    /// The typed error underneath (a failed system call, a crypto refusal), if any.
    public let cause: ErrorCause?

    /// Creates an error; `message` states the cause and the remedy.
    public init(
        code: Code, plugin: String? = nil, location: TextLocation? = nil, message: String, cause: ErrorCause? = nil
    ) {
        self.code = code
        self.plugin = plugin
        self.location = location
        self.message = message
        self.cause = cause
    }
}

extension CoreError {
    /// `call` failed with `errno` while trying to `what` the file at `path`.
    package static func io(_ what: String, path: String, errno code: Int32, call: String) -> CoreError {
        let failure = SystemCallError(call, errno: code)
        return CoreError(
            code: .ioFailure, message: "cannot \(what) \(path): \(failure.reason)", cause: ErrorCause(failure))
    }
}
