import ArgumentParser
import VigilCheckCommands
import VigilCore
import VigilCrypto

/// `vigil plugin revoke PLUGIN_DIR --key KEY… [--revoke-key FP…] [--manifest SHA256…] [--floor VERSION] [--expires T]`.
struct PluginRevoke: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Publish a signed revocation list for a plugin: revoked keys, manifests or a version floor.",
        discussion: """
            Writes PLUGIN_DIR/revocations.json — the current list's entries plus the new ones, its version one \
            more — and signs it with every --key (a threshold of the plugin's current keys must sign). Hosts \
            keep the newest list they applied (a list going back is refused), stop counting revoked keys toward \
            the threshold, and refuse a revoked manifest or a version below the floor at the next start.
            """)

    @Argument(help: "The plugin directory (its name is the plugin's name).", completion: .directory)
    var pluginDirectory: String

    @Option(name: .long, help: "A current secret key that signs the list; repeat for a threshold.")
    var key: [String] = []

    @Option(name: .customLong("revoke-key"), help: "A key to revoke, \"ed25519:…\"; repeatable.")
    var revokeKey: [String] = []

    @Option(name: .long, help: "The lower-case hex SHA-256 of a plugin.json to revoke; repeatable.")
    var manifest: [String] = []

    @Option(name: .long, help: "Revoke every version below this one.")
    var floor: String?

    @Option(name: .long, help: "When the list stops being fresh (RFC 3339).")
    var expires: String?

    func validate() throws {
        if pluginDirectory.isEmpty { throw ValidationError("PLUGIN_DIR must not be empty") }
        if key.isEmpty { throw ValidationError("give at least one --key to sign the list with") }
        for fingerprint in revokeKey { _ = try CLI.parseFingerprint(fingerprint) }
        if let floor, SemanticVersion(floor) == nil { throw ValidationError("--floor must be a semantic version") }
        if let expires, Freshness.parseRFC3339(expires) == nil {
            throw ValidationError("--expires must be an RFC 3339 date-time, e.g. 2027-06-30T00:00:00Z")
        }
    }

    func run() throws {
        try CLI.run {
            let signers = try key.map { try PluginSign.readSecretKey($0) }
            let list = try PluginRevoker.revoke(
                directory: CLI.absolute(pluginDirectory), keys: try revokeKey.map { try CLI.parseFingerprint($0) },
                manifests: manifest, versionFloor: floor.flatMap(SemanticVersion.init),
                expires: expires.flatMap(Freshness.parseRFC3339), signers: signers)
            CLI.sayLine(
                "revocations.json version \(list.version): \(list.keys.count) key(s), \(list.manifests.count) "
                    + "manifest(s), floor \(list.versionFloor.map { "\($0)" } ?? "none"), signed by \(signers.count) key(s)"
            )
        }
    }
}
