import ArgumentParser
import VigilCheckCommands
import VigilCore
import VigilPlugin
import VigilRepository

/// What the repository commands share: the configuration, the client and the installer, and
/// the rendering of their refusals (each kind its own exit status, ExitCodes).
enum RepositoryCommand {
    /// The installer for the configuration `options` names.
    static func installer(_ options: ConfigOption) throws(RepositoryError) -> PluginInstaller {
        let configuration: HostConfiguration
        do throws(CoreError) {
            guard let loaded = try CLI.loadConfiguration(options) else {
                throw CoreError(
                    code: .configNotFound,
                    message:
                        "no vigil.toml was found from \(CLI.environment.workingDirectory) upward — pass --config PATH")
            }
            configuration = loaded
        } catch {
            throw RepositoryError(code: .notConfigured, message: error.message, cause: ErrorCause(error))
        }
        let now = Freshness.systemNow()
        let client = try RepositoryClient(configuration: configuration, environment: CLI.environment, now: now)
        let store: RollbackStore
        do throws(CoreError) {
            store = try RollbackStore.standard(environment: CLI.environment)
        } catch {
            throw RepositoryError(code: .storage, message: error.message, cause: ErrorCause(error))
        }
        return PluginInstaller(configuration: configuration, client: client, store: store)
    }

    /// `vigil check`'s judge of `[repository] ca_file`'s bytes: the repository client's, so that the
    /// check accepts what a fetch will trust.
    static let caFileCheck: @Sendable ([UInt8]) -> String? = { RepositoryClient.caFileProblem($0) }

    /// The exit status of a refusal.
    static func exitCode(_ code: RepositoryErrorCode) -> Int32 {
        switch code {
        case .notConfigured: ExitCodes.repositoryNotConfigured
        case .unreachable: ExitCodes.repositoryUnreachable
        case .stale: ExitCodes.repositoryStale
        case .keyMismatch: ExitCodes.repositoryKeyMismatch
        case .rollback: ExitCodes.repositoryRollback
        case .unknownPlugin: ExitCodes.repositoryUnknownPlugin
        case .refused, .installState, .rootMismatch, .storage: ExitCodes.failure
        }
    }

    /// Prints a refusal on standard error (one line) and returns its exit status.
    static func fail(_ error: RepositoryError) -> ExitCode {
        CLI.printErrorLine("error: \(error.description) (\(error.code))")
        return ExitCode(exitCode(error.code))
    }

    /// `{"schema", "plugins": [rows], …, "error"}`: the one document `update --json`, `outdated --json`
    /// and `bundle … --json` print (`extra`: a command's own keys, between the rows and the error).
    static func document(
        _ schema: String, _ rows: [[(String, JSONValue)]], _ extra: [(String, JSONValue)] = [], error: RepositoryError?
    ) -> JSONValue {
        .object(
            [("schema", .string(schema)), ("plugins", .array(rows.map { .object($0) }))] + extra + [
                ("error", json(error))
            ])
    }

    /// A string, or null.
    static func string(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }

    /// A refusal as JSON: `{"code", "plugin", "message"}`, or null.
    static func json(_ error: RepositoryError?) -> JSONValue {
        guard let error else { return .null }
        return .object([
            ("code", .string(error.code.rawValue)), ("plugin", error.plugin.map(JSONValue.string) ?? .null),
            ("message", .string(error.message)), ("exit_status", .number(String(exitCode(error.code)))),
        ])
    }
}

/// `vigil plugin install NAME [--yes] [--json]`.
struct PluginInstall: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Install a plugin from the repository of [repository].",
        discussion: """
            Refreshes the repository's TUF metadata from the first mirror that verifies, downloads NAME's files \
            through its delegation (the role NAME, whose key is the plugin's own), and verifies them as `vigil \
            plugin verify` does. A plugin the host already trusts must verify with that key (or a signed rotation \
            from it); a plugin it does not trust yet gets the review `vigil plugin trust` shows, and is trusted \
            after confirmation (--yes for scripts). Only then is NAME placed in the first plugin path. With \
            --json nothing is asked: the review and the outcome are one vigil.install/v1 document, and a plugin \
            not trusted yet is installed only with --yes.
            """)

    @OptionGroup var options: ConfigOption

    @Argument(help: "The plugin's name.")
    var name: String

    @Flag(
        name: .long, help: "Trust a plugin that is not trusted yet without asking (after reviewing it some other way).")
    var yes = false

    @Flag(
        name: .long,
        help: "Print the review and the outcome as one JSON document; nothing is asked, so add --yes to trust.")
    var json = false

    func validate() throws { try CLI.validateName(name) }

    /// How far an install got, for `--json`.
    struct Outcome {
        var staged: PluginInstaller.StagedInstall?
        /// `already-trusted`, `accepted` (reviewed, --yes) or `declined`; nil before the plugin verified.
        var trust: String?
        var trustOutcome: TrustEditor.Outcome?
        var installed = false
    }

    func run() async throws {
        var outcome = Outcome()
        do throws(RepositoryError) {
            try await install(&outcome)
            if json { CLI.printJSON(Self.json(name, outcome, error: nil)) }
        } catch {
            if json { CLI.printJSON(Self.json(name, outcome, error: error)) } else { _ = RepositoryCommand.fail(error) }
            throw ExitCode(RepositoryCommand.exitCode(error.code))
        }
    }

    private func install(_ outcome: inout Outcome) async throws(RepositoryError) {
        let installer = try RepositoryCommand.installer(options)
        let staged = try await installer.stageInstall(name)
        outcome.staged = staged
        outcome.trust = "already-trusted"
        if let review = staged.review {
            if !json {
                PluginTrust.printReview(review)
                CLI.sayLine(
                    "  installs to:   \(staged.destination) (from \(staged.offer.keys), delegated by the repository)")
            }
            do throws(CoreError) {
                try PluginTrust.confirm(
                    review, confirmed: yes, json: json,
                    remedy: json
                        ? "add --yes: `vigil plugin install \(name) --json --yes` (--json asks nothing)"
                        : "run `vigil plugin install \(name) --yes`")
            } catch {
                installer.discard(staged)
                outcome.trust = "declined"
                throw RepositoryError(
                    code: .refused, plugin: name, message: "\(error.message) (\(error.code))",
                    cause: ErrorCause(error))
            }
            outcome.trust = "accepted"
        }
        outcome.trustOutcome = try installer.commit(staged)
        outcome.installed = true
        if json { return }
        let trust = staged.review == nil ? "" : ", trusted \(staged.plugin.trust)"
        CLI.sayLine(
            "installed \(name)@\(staged.plugin.manifest.version) in \(staged.destination)\(trust) — a running host "
                + "starts it on `vigil reload` or its next start once vigil.toml activates it")
    }

    /// `{"schema": "vigil.install/v1", …}`: what the review shows (name, version, the delegated keys,
    /// capabilities; the whole `vigil.trust/v1` review when the plugin was not trusted yet) and the
    /// outcome; every key always present (null when the install stopped before it was known).
    static func json(_ name: String, _ outcome: Outcome, error: RepositoryError?) -> JSONValue {
        let staged = outcome.staged
        let manifest = staged?.plugin.manifest
        let keys = staged?.offer.keys
        return .object([
            ("schema", .string("vigil.install/v1")),
            ("name", .string(name)),
            ("version", RepositoryCommand.string(manifest.map { "\($0.version)" })),
            ("description", RepositoryCommand.string(manifest?.description)),
            ("keys", keys.map { .array($0.keys.map { .string("\($0)") }) } ?? .null),
            ("threshold", keys.map { .number(String($0.threshold)) } ?? .null),
            ("capabilities", manifest?.capabilitiesJSON ?? .null),
            ("destination", RepositoryCommand.string(staged?.destination)),
            ("trust", RepositoryCommand.string(outcome.trust)),
            (
                "review",
                staged?.review.map { PluginTrust.json(review: $0, outcome: outcome.trustOutcome, error: nil) } ?? .null
            ),
            ("installed", .bool(outcome.installed)),
            ("error", RepositoryCommand.json(error)),
        ])
    }
}

/// `vigil plugin update [NAME…] [--json]`.
struct PluginUpdate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Update installed plugins from the repository, all or none.",
        discussion: """
            Updates the named plugins, or every activated plugin in the first plugin path that the repository \
            has. Every changed plugin of one refresh is downloaded and verified (signature with the trusted key, \
            resources, rollback, freshness) into the plugin directory's next state, then all are switched in one \
            atomic step; any refusal changes nothing. A running host picks the update up on `vigil reload` or \
            its next start; a repository whose metadata expired refuses the update and stops nothing. \
            On a timer: the Debian package and `make install` ship vigil-plugin-update.timer (with the user \
            unit vigil.service) and vigil-plugin-update@.timer (with vigil@USER), not enabled; `systemctl \
            --user enable --now vigil-plugin-update.timer` (or `systemctl enable --now \
            vigil-plugin-update@USER.timer`) runs this command hourly for the host's vigil.toml, then \
            reloads the host; a refusal leaves the host running what it runs (docs/signing.md).
            """)

    @OptionGroup var options: ConfigOption

    @Argument(help: "The plugins to update (default: every activated plugin).")
    var names: [String] = []

    @Flag(name: .long, help: "Print the outcome as one JSON document.")
    var json = false

    func validate() throws { for name in names { try CLI.validateName(name) } }

    func run() async throws {
        try await Self.perform(json: json) { () async throws(RepositoryError) in
            try await RepositoryCommand.installer(options).update(names.isEmpty ? nil : names)
        }
    }

    /// Runs an update (from the repository or a bundle) and reports it: lines, or one JSON
    /// document whatever happens; a refusal's exit status.
    static func perform(
        json: Bool, _ update: () async throws(RepositoryError) -> [PluginInstaller.UpdateItem]
    ) async throws {
        do throws(RepositoryError) {
            let items = try await update()
            if json {
                CLI.printJSON(Self.json(items, error: nil))
                return
            }
            Self.say(items)
        } catch {
            if json { CLI.printJSON(Self.json([], error: error)) } else { _ = RepositoryCommand.fail(error) }
            throw ExitCode(RepositoryCommand.exitCode(error.code))
        }
    }

    /// One line per plugin, and "nothing to update" when nothing changed.
    static func say(_ items: [PluginInstaller.UpdateItem]) {
        for item in items {
            switch item.outcome {
            case .updated: CLI.sayLine("updated \(item.name): \(item.from ?? "(unreadable)") -> \(item.to ?? "?")")
            case .upToDate: CLI.sayLine("\(item.name) \(item.to ?? "") is up to date")
            case .notManaged: CLI.sayLine("\(item.name): not installed from the repository (skipped)")
            case .notInRepository: CLI.sayLine("\(item.name): not in the repository (skipped)")
            }
        }
        if !items.contains(where: { $0.outcome == .updated }) { CLI.sayLine("nothing to update") }
    }

    static func json(_ items: [PluginInstaller.UpdateItem], error: RepositoryError?) -> JSONValue {
        RepositoryCommand.document(
            "vigil.update/v1",
            items.map {
                [
                    ("name", .string($0.name)), ("outcome", .string($0.outcome.rawValue)),
                    ("from", RepositoryCommand.string($0.from)), ("to", RepositoryCommand.string($0.to)),
                ]
            }, error: error)
    }
}

/// `vigil plugin outdated [--json]`.
struct PluginOutdated: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outdated",
        abstract: "List plugins the repository has newer versions of.",
        discussion: """
            Refreshes the repository's metadata and compares each activated or installed plugin with the version \
            the repository signs for it (`custom.version` of NAME/plugin.json); nothing is downloaded.
            """)

    @OptionGroup var options: ConfigOption

    @Flag(name: .long, help: "Print the table as one JSON document.")
    var json = false

    func run() async throws {
        do throws(RepositoryError) {
            let installer = try RepositoryCommand.installer(options)
            let items = try await installer.outdated()
            if json {
                CLI.printJSON(Self.json(items, error: nil))
                return
            }
            let rows =
                [["PLUGIN", "INSTALLED", "AVAILABLE", "STATE"]]
                + items.map { [$0.name, $0.installed ?? "-", $0.available ?? "-", $0.state] }
            let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
            for row in rows {
                var line = zip(row, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }
                    .joined(separator: "  ")
                while line.last == " " { line.removeLast() }
                CLI.sayLine(line)
            }
            for item in items where item.reason != nil { CLI.sayLine("\(item.name): \(item.reason ?? "")") }
        } catch {
            if json { CLI.printJSON(Self.json([], error: error)) } else { _ = RepositoryCommand.fail(error) }
            throw ExitCode(RepositoryCommand.exitCode(error.code))
        }
    }

    static func json(_ items: [PluginInstaller.OutdatedItem], error: RepositoryError?) -> JSONValue {
        RepositoryCommand.document(
            "vigil.outdated/v1",
            items.map {
                [
                    ("name", .string($0.name)), ("installed", RepositoryCommand.string($0.installed)),
                    ("available", RepositoryCommand.string($0.available)), ("state", .string($0.state)),
                    ("reason", RepositoryCommand.string($0.reason)),
                ]
            }, error: error)
    }
}

extension CLI {
    /// `path` made absolute against the working directory.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : CLI.environment.workingDirectory + "/" + path
    }
}

/// `vigil plugin bundle create|apply DIR`.
struct PluginBundle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle",
        abstract: "Carry the repository to boxes that are never online.",
        subcommands: [PluginBundleCreate.self, PluginBundleApply.self])
}

/// `vigil plugin bundle create DIR [--json]`.
struct PluginBundleCreate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Write the repository's metadata and the activated plugins into a new directory.",
        discussion: """
            Refreshes the repository, then writes its metadata (every root, the timestamp, the snapshot, the \
            targets and each activated plugin's role, as verified here) and the activated plugins' files into \
            DIR, laid out as a file:// mirror. `vigil plugin bundle apply DIR` on another box verifies it with the \
            same workflow; it cannot be applied after the timestamp expires (printed).
            """)

    @OptionGroup var options: ConfigOption

    @Argument(help: "The bundle directory to create (must not exist).")
    var directory: String

    @Flag(name: .long, help: "Print what was bundled as one JSON document.")
    var json = false

    func run() async throws {
        do throws(RepositoryError) {
            let installer = try RepositoryCommand.installer(options)
            let summary = try await installer.createBundle(at: CLI.absolute(directory))
            if json {
                CLI.printJSON(document(summary, error: nil))
                return
            }
            for plugin in summary.plugins { CLI.sayLine("bundled \(plugin.name) \(plugin.version ?? "")") }
            CLI.sayLine("wrote \(directory); apply it before \(summary.expires)")
        } catch {
            if json { CLI.printJSON(document(nil, error: error)) } else { _ = RepositoryCommand.fail(error) }
            throw ExitCode(RepositoryCommand.exitCode(error.code))
        }
    }

    /// `{"schema": "vigil.bundle/v1", "plugins": [{"name", "version"}], "directory", "expires", "error"}`;
    /// `directory` and `expires` are null unless the bundle was written.
    func document(_ summary: PluginInstaller.BundleSummary?, error: RepositoryError?) -> JSONValue {
        RepositoryCommand.document(
            "vigil.bundle/v1",
            (summary?.plugins ?? []).map {
                [("name", .string($0.name)), ("version", RepositoryCommand.string($0.version))]
            },
            [
                ("directory", RepositoryCommand.string(summary.map { _ in CLI.absolute(directory) })),
                ("expires", RepositoryCommand.string(summary?.expires)),
            ], error: error)
    }
}

/// `vigil plugin bundle apply DIR [NAME…] [--json]`.
struct PluginBundleApply: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Update installed plugins from a bundle, all or none.",
        discussion: """
            `vigil plugin update` with DIR as the only mirror: the same checks (a tampered or expired bundle is \
            refused) and the same atomic switch; nothing is fetched from the network.
            """)

    @OptionGroup var options: ConfigOption

    @Argument(help: "The bundle directory.")
    var directory: String

    @Argument(help: "The plugins to update (default: every activated plugin).")
    var names: [String] = []

    @Flag(name: .long, help: "Print the outcome as one JSON document.")
    var json = false

    func validate() throws { for name in names { try CLI.validateName(name) } }

    func run() async throws {
        try await PluginUpdate.perform(json: json) { () async throws(RepositoryError) in
            try await RepositoryCommand.installer(options).applyBundle(
                at: CLI.absolute(directory), names.isEmpty ? nil : names)
        }
    }
}
