import ArgumentParser
import VigilCore
import VigilCrypto
import VigilPlugin

/// `vigil plugin trust NAME [--fingerprint FP] [--yes]`.
package struct PluginTrust: ParsableCommand {
    /// Creates the command with its defaults (the parser fills in the arguments).
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Review a plugin and record its signing key in vigil.toml.",
        discussion: """
            Finds the plugin in the plugin paths, verifies its signature with the key it offers (plugin.pub) — \
            or with --fingerprint, which must match it — and its resources, shows what it is and what it \
            needs, and asks for confirmation on a terminal (--yes for scripts; without a terminal and without \
            --yes nothing is trusted). A plugin that offers several keys (plugin.pub, plugin.2.pub, …) is \
            trusted as a key set, all of whose keys must sign unless --threshold says how many. It records \
            `NAME = "ed25519:…"` (or `NAME = { keys = […], threshold = K }`) under [trusted_plugins] (creating \
            vigil.toml in the working directory if none is found) and resets the plugin's rollback record to \
            this version: re-running trust is how a reviewed downgrade is accepted.
            """)

    @OptionGroup var options: ConfigOption

    @Argument(help: "The plugin's name.")
    var name: String

    @Option(
        name: .long,
        help: "The key you expect, \"ed25519:…\", obtained from the publisher out of band; repeat it for a key set.")
    var fingerprint: [String] = []

    @Option(name: .long, help: "How many of the plugin's keys must sign (default: all of them).")
    var threshold: Int?

    @Flag(name: .long, help: "Trust without asking (after reviewing the plugin some other way).")
    var yes = false

    package func validate() throws {
        try CLI.validateName(name)
        for fingerprint in fingerprint { _ = try CLI.parseFingerprint(fingerprint) }
        if let threshold, threshold < 1 || threshold > TrustedKeys.maxKeys {
            throw ValidationError(
                "--threshold must be between 1 and \(TrustedKeys.maxKeys) (and at most the number of keys)")
        }
    }

    @Flag(
        name: .long,
        help: "Print the review and the outcome as one JSON document; nothing is asked, so add --yes to trust.")
    var json = false

    package func run() throws {
        let prepared: (review: TrustReview, store: RollbackStore)
        do {
            prepared = try prepare()
        } catch let error as CoreError {
            throw fail(error, review: nil)
        }
        let r = prepared.review
        do {
            if !json { Self.printReview(r) }
            try confirm(r)
            let outcome = try TrustTransaction.commit(r, store: prepared.store)
            if json {
                CLI.printJSON(Self.json(review: r, outcome: outcome, error: nil))
            } else {
                let already = outcome == .unchanged ? "already recorded in" : "recorded in"
                CLI.sayLine("trusted \(name) (\(r.keys)) — \(already) \(r.configPath)")
            }
        } catch {
            throw fail(error, review: r)
        }
    }

    /// Reads the configuration once and reviews the plugin.
    private func prepare() throws -> (review: TrustReview, store: RollbackStore) {
        // --config, else the nearest vigil.toml, else a new ./vigil.toml.
        let configPath = try CLI.configPath(options) ?? HostConfiguration.fileName
        let configuration = try Self.loadOrNew(configPath)
        let store = try RollbackStore.standard(environment: CLI.environment)
        let pinned = try fingerprint.map { try CLI.parseFingerprint($0) }
        let review = try TrustTransaction.review(
            name: name, configuration: configuration, pinned: pinned, threshold: threshold, store: store)
        return (review, store)
    }

    /// The configuration at `path`, or an empty one to be created there.
    private static func loadOrNew(_ path: String) throws(CoreError) -> HostConfiguration {
        do {
            return try HostConfiguration.load(path: path, environment: CLI.environment)
        } catch {
            guard error.code == .configNotFound else { throw error }
            return HostConfiguration(path: path, environment: CLI.environment)
        }
    }

    /// Asks on the terminal unless --yes, or unless a matching --fingerprint (a key obtained out of
    /// band, with which the signature verified) is the confirmation; throws `.trustDeclined` otherwise.
    private func confirm(_ r: TrustReview) throws(CoreError) {
        try Self.confirm(
            r, confirmed: yes || !fingerprint.isEmpty, json: json,
            remedy: "run `\(TrustCommand.display(name, "--yes"))`, or pin the key you got from the publisher with "
                + "`\(TrustCommand.display(name, "--fingerprint ed25519:…"))`")
    }

    /// The confirmation of a review (`vigil plugin trust`, `vigil plugin install`): nothing to ask
    /// when `confirmed` (--yes); else a question on the terminal, and without one a refusal whose
    /// `remedy` says how to confirm. Throws `.trustDeclined` unless the answer is yes.
    package static func confirm(_ r: TrustReview, confirmed: Bool, json: Bool, remedy: String) throws(CoreError) {
        if confirmed { return }
        let name = r.name
        if json {
            throw CoreError(
                code: .trustDeclined, plugin: name,
                message: "--json asks nothing, so nothing was trusted — review the plugin (the document's review), "
                    + "then \(remedy)")
        }
        guard TerminalPrompt.isAvailable else {
            throw CoreError(
                code: .trustDeclined, plugin: name,
                message: "there is no terminal to confirm on, so nothing was trusted — review the plugin above, "
                    + "then \(remedy)")
        }
        let question =
            r.isRotation
            ? "This replaces the key vigil.toml trusts for it. Trust the key it offers?"
            : r.downgrade != nil ? "This accepts an older version (DOWNGRADE). Trust it?" : "Trust this plugin?"
        switch TerminalPrompt.confirm(question) {
        case true?: return
        case false?:
            throw CoreError(code: .trustDeclined, plugin: name, message: "not trusted — \(r.configPath) unchanged")
        case nil:
            throw CoreError(
                code: .trustDeclined, plugin: name,
                message: "no answer could be read from the terminal, so nothing was trusted — "
                    + "\(r.configPath) unchanged; re-run it, or pass --yes after reviewing")
        }
    }

    /// Reports a refusal (as the JSON document with --json) and returns the exit code to throw.
    private func fail(_ error: CoreError, review: TrustReview?) -> ExitCode {
        guard json else { return CLI.fail(error) }
        CLI.printJSON(Self.json(review: review, outcome: nil, error: error))
        return ExitCode.failure
    }

    /// The review, one line per field; each line is escaped whole (``CLI/sayLine(_:)``), so the
    /// publisher's description, requirement reasons and paths can neither forge nor hide a line.
    package static func printReview(_ r: TrustReview) {
        let m = r.plugin.manifest
        var lines = ["Review \(m.name):"]
        lines.append("  version:       \(m.version)")
        if let d = r.downgrade {
            lines.append(
                "  DOWNGRADE from \(d.from) to \(d.to) — this host already accepted \(d.from); trusting "
                    + "accepts the older release")
        }
        if r.changedAtSameVersion {
            lines.append("  CHANGED at version \(m.version) — this host accepted other contents under the same version")
        }
        if !m.description.isEmpty { lines.append("  description:   \(m.description)") }
        lines.append("  directory:     \(r.plugin.directory)")
        if r.keys.isSingleKey {
            lines.append("  fingerprint:   \(r.fingerprint)")
        } else {
            lines.append("  signatures:    \(r.keys.threshold) of these \(r.keys.keys.count) keys must sign:")
            for (key, id) in zip(r.keys.keys, r.keyIDs) { lines.append("    - \(key) (minisign key \(id))") }
        }
        if let expected = r.expectedFirstPartyKey {
            lines.append(
                "  this is not the first-party key for \(m.name) (expected \(expected)) — it is named like "
                    + "Vigil's own plugin but signed by someone else")
        }
        if r.keys.isSingleKey { lines.append("  minisign key:  \(r.keyID)") }
        if let library = m.sharedLibrary {
            lines.append(
                "  entry:         shared library \(library.path) (plugin ABI \(library.abi)) — native code that runs "
                    + "with this program's rights")
        } else {
            lines.append("  entry:         \(m.entry)")
        }
        if m.hostRequirements.isEmpty {
            lines.append("  requirements:  none")
        } else {
            lines.append("  requirements:")
            for req in m.hostRequirements {
                lines.append(
                    "    - \(req.kindTag)\(req.value.map { " \($0)" } ?? "")\(req.why.map { " — \($0)" } ?? "")")
            }
        }
        if let schema = m.settingsSchema {
            lines.append(schema.settings.isEmpty ? "  settings:      none" : "  settings (its [\(m.name)] table):")
            for entry in schema.entries {
                lines.append(
                    "    - \(entry.key): \(entry.accepts)\(entry.defaultValue.map { ", default \($0)" } ?? "")"
                        + (entry.description.isEmpty ? "" : " — \(entry.description)"))
            }
        } else {
            lines.append(
                "  settings:      no schema (\(PluginManifest.schemaV1) manifest): vigil check cannot check [\(m.name)]"
            )
        }
        lines += capabilityLines(r)
        if m.resources.isEmpty {
            lines.append("  resources:     none")
        } else {
            lines.append("  resources:")
            for res in m.resources { lines.append("    - \(res.path) (\(res.size) bytes, sha256 \(res.sha256))") }
        }
        if let current = r.currentlyTrusted, let version = r.signedRotation {
            lines.append("  trust state:   vigil.toml trusts \(current); the publisher rotated to these keys with")
            lines.append(
                "                 signed key rotation \(version) (signed by the old and the new keys) — hosts follow it "
                    + "without this review")
        } else if let current = r.currentlyTrusted, r.isRotation {
            // A typo in vigil.toml looks the same as a publisher's new key: say both.
            lines.append("  trust state:   vigil.toml trusts another key: \(current)")
            lines.append("                 (a typo there, or the publisher rotated keys — check with them)")
        } else if r.currentlyTrusted != nil {
            lines.append("  trust state:   already trusted with this key")
        } else {
            lines.append("  trust state:   not trusted yet")
        }
        for line in lines { CLI.sayLine(line) }
    }

    /// What the plugin may do, in plain words, and what that adds to the capabilities the operator
    /// accepted at their last review of it (the difference a host refuses with `capabilities-grown`
    /// until this review is accepted) and what it no longer asks for.
    static func capabilityLines(_ r: TrustReview) -> [String] {
        let m = r.plugin.manifest
        var lines = ["  may:"]
        lines += m.capabilityLines.map { "    - \($0)" }
        guard let accepted = r.acceptedCapabilities else { return lines }
        let added = r.addedCapabilities
        if !added.isEmpty {
            lines.append("  MORE than you accepted when you last trusted it — new in this version:")
            lines += added.map { "    + \($0)" }
        }
        let dropped = accepted.added(since: m.capabilities)
        if !dropped.isEmpty {
            lines.append("  no longer asks to:")
            lines += dropped.map { "    - \($0)" }
        }
        return lines
    }

    /// The settings a plugin accepts, `[{"key", "type", "accepts", "default", "description"}]`;
    /// null without a schema (a v1 manifest, or no manifest).
    static func json(settings schema: SettingsSchema?) -> JSONValue {
        guard let schema else { return .null }
        return .array(
            schema.entries.map { entry in
                .object([
                    ("key", .string(entry.key)), ("type", .string(entry.type.rawValue)),
                    ("accepts", .string(entry.accepts)),
                    ("default", entry.defaultValue.map { .string($0.description) } ?? .null),
                    ("description", .string(entry.description)),
                ])
            })
    }

    /// The review's `capabilities`: the manifest's (``PluginManifest/capabilitiesJSON``) with
    /// `accepted` (what the last review accepted, or null) and `added` (the lines beyond it).
    static func capabilities(_ r: TrustReview?) -> JSONValue {
        guard let r, case .object(var members) = r.plugin.manifest.capabilitiesJSON else { return .null }
        members.append(("accepted", r.acceptedCapabilities?.jsonValue ?? .null))
        members.append(("added", .array(r.addedCapabilities.map(JSONValue.string))))
        return .object(members)
    }

    /// `{"schema": "vigil.trust/v1", …}`: every key always present (null when unknown).
    package static func json(review r: TrustReview?, outcome: TrustEditor.Outcome?, error: CoreError?) -> JSONValue {
        let m = r?.plugin.manifest
        func string(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        let outcomeText: String? =
            switch outcome {
            case nil: nil
            case .unchanged?: "unchanged"
            case .added?: "added"
            case .replaced?: "replaced"
            case .removed?: "removed"
            }
        let keys: JSONValue = r.map { .array($0.keys.keys.map { .string($0.description) }) } ?? .null
        let keyIDs: JSONValue = r.map { .array($0.keyIDs.map(JSONValue.string)) } ?? .null
        let threshold: JSONValue = r.map { .number(String($0.keys.threshold)) } ?? .null
        let signedRotation: JSONValue = (r?.signedRotation).map { .number(String($0)) } ?? .null
        return .object([
            ("schema", .string("vigil.trust/v1")),
            ("name", string(r?.name)),
            ("version", string(m.map { "\($0.version)" })),
            ("description", string(m?.description)),
            ("directory", string(r?.plugin.directory)),
            ("fingerprint", string(r?.fingerprint.description)),
            ("key_id", string(r?.keyID)),
            ("keys", keys),
            ("key_ids", keyIDs),
            ("threshold", threshold),
            ("config", string(r?.configPath)),
            ("currently_trusted", string(r?.currentlyTrusted?.description)),
            ("key_rotation", r.map { .bool($0.isRotation) } ?? .null),
            ("signed_rotation", signedRotation),
            (
                "downgrade",
                r.map { r in
                    r.downgrade.map { .object([("from", .string("\($0.from)")), ("to", .string("\($0.to)"))]) } ?? .null
                } ?? .null
            ),
            ("changed_at_same_version", r.map { .bool($0.changedAtSameVersion) } ?? .null),
            ("expected_first_party_key", string(r?.expectedFirstPartyKey?.description)),
            ("settings", Self.json(settings: m?.settingsSchema)),
            ("capabilities", capabilities(r)),
            ("trusted", .bool(outcome != nil)),
            ("outcome", string(outcomeText)),
            ("error", CLI.json(error)),
        ])
    }
}
