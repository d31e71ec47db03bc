public import VigilConfine
public import VigilCore
public import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

/// One problem found by ``HostCheck``, printed like a compiler diagnostic:
/// `vigil.toml:7:13: warning: [silent-engine] requires background_modes to include "audio" — add it under [host] …`.
public struct Diagnostic: Sendable, Hashable, CustomStringConvertible {
    /// How bad it is: errors fail `vigil check` and the build; warnings do not.
    public enum Severity: String, Sendable, Hashable {
        case warning
        case error
    }

    /// How bad it is.
    public let severity: Severity
    /// Where in `vigil.toml` (path as the user gave it), when known.
    public let location: SourceLocation?
    /// The plugin concerned, if any.
    public let plugin: String?
    /// What is wrong and how to fix it (without the `[plugin]` prefix).
    public let message: String

    /// Creates a diagnostic.
    public init(severity: Severity, location: SourceLocation?, plugin: String?, message: String) {
        self.severity = severity
        self.location = location
        self.plugin = plugin
        self.message = message
    }

    /// `path:line:column: severity: [plugin] message`.
    public var description: String {
        var text = location.map { "\($0): " } ?? ""
        text += "\(severity.rawValue): "
        if let plugin { text += "[\(plugin)] " }
        return text + message
    }
}

/// The one checker behind `vigil check`, the build-tool plugin and `vigil up`: loads `vigil.toml`,
/// verifies every activated plugin exactly as `VigilHost` does (without recording rollback
/// state), and reports
/// - errors: a missing or invalid configuration, a plugin that does not verify or is not trusted,
///   a manifest `entry` this Vigil does not provide, declarations a plugin requires that `[host]`
///   lacks (the plugin would be `blocked`: it would not start);
/// - warnings: environment requirements not met on this machine (the plugin will be `waiting` for
///   them at start), unsigned plugins admitted under `acknowledge_unsafe_plugins` (with ``Report/banner``).
///
/// Each activated plugin gets its state in the one vocabulary (``PluginStateName``, docs/states.md):
/// `verified`, `waiting`, `blocked` or `failed`.
public struct HostCheck: Sendable {
    /// What a check found.
    public struct Report: Sendable {
        /// The configuration file, as given (or as found), when there is one.
        public let configPath: String?
        /// Every problem, in `vigil.toml` order.
        public let diagnostics: [Diagnostic]
        /// The unsigned plugins admitted under `acknowledge_unsafe_plugins`.
        public let unsafePlugins: [String]
        /// The loud banner to print while unsigned plugins are admitted.
        public var banner: String? { unsafePlugins.isEmpty ? nil : CoreBanner.unsafePlugins(unsafePlugins) }
        /// The activated plugins, in `vigil.toml` order, each with what it will do at start.
        public var plugins: [Plugin]
        /// How long each verified plugin's signature stays fresh, for those whose signed manifest
        /// carries `expires`, by name.
        public var signatures: [String: SignatureFreshness] = [:]
        /// The verified manifest of each activated plugin that verified, by name (its capabilities
        /// are shown under the summary and in `--json`).
        public var manifests: [String: PluginManifest] = [:]
        /// The time the freshness was judged at (seconds since the epoch).
        public var checkedAt: Int64 = Freshness.systemNow()
        /// True when any diagnostic is an error.
        public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
    }

    /// What one activated plugin will do when the host starts.
    public struct Plugin: Sendable, Hashable {
        /// The plugin's name.
        public let name: String
        /// `verified`, `waiting` (for its environment), `blocked` (by a missing declaration) or `failed`.
        public let state: PluginStateName
        /// The state as every output says it: `verified`, `waiting for an audio output`, `blocked by a
        /// missing declaration`, `failed`.
        public let phrase: String
        /// Why it is not `verified` (the unmet requirements or the refusal), or `nil`.
        public let reason: String?
        /// The directory it was loaded from (one of the plugin paths; `nil` when it was not found or
        /// did not verify).
        public let directory: String?

        /// Creates an entry.
        public init(name: String, state: PluginStateName, phrase: String, reason: String?, directory: String?) {
            self.name = name
            self.state = state
            self.phrase = phrase
            self.reason = reason
            self.directory = directory
        }

        /// A plugin that does not verify or cannot run: `failed`, with the reason.
        static func failed(_ name: String, reason: String?, directory: String? = nil) -> Plugin {
            Plugin(name: name, state: .failed, phrase: "failed", reason: reason, directory: directory)
        }
    }

    /// The manifest `entry` names the host provides implementations for.
    public var entries: Set<String>
    /// The environment probed for environment requirements, used for the state directory and
    /// for the working directory a `vigil.toml` is searched from and displayed relative to.
    public var environment: RequirementChecker.Environment
    /// False checks declarations only (what a build can know), skipping environment probes.
    public var probeEnvironment: Bool
    /// What this kernel can enforce of a shared-library plugin's confinement.
    public var confinementSupport: ConfinementSupport
    /// Judges the bytes of `[repository] ca_file`: what is wrong with them (and how to fix it), or
    /// nil when the TLS library the mirrors are fetched with reads a certificate from them. Given
    /// by `vigil check`, which links that library (the repository commands' module); without it
    /// (`vigil up`, the build check) only the file's protection is checked.
    public var caFileCheck: (@Sendable ([UInt8]) -> String?)? = nil

    /// Creates a checker for a host that provides `entries` (default: Vigil's built-in plugins),
    /// run in `environment` (the caller's, built once: the CLI's or the host app's).
    public init(
        entries: Set<String> = Set(BuiltinEntries.all), environment: RequirementChecker.Environment,
        probeEnvironment: Bool = true, confinementSupport: ConfinementSupport = .probe()
    ) {
        self.entries = entries
        self.environment = environment
        self.probeEnvironment = probeEnvironment
        self.confinementSupport = confinementSupport
    }

    /// Checks `configPath` (`nil`: the nearest `vigil.toml` from the environment's working directory
    /// upward). Locations use the path as given, or relative to that working directory when found.
    public func run(configPath: String?) -> Report {
        let path: String
        do {
            path = try HostPlan.resolveConfigPath(configPath, environment: environment)
        } catch {
            return Report(
                configPath: nil,
                diagnostics: [.init(severity: .error, location: nil, plugin: nil, message: error.description)],
                unsafePlugins: [], plugins: [])
        }
        let display = configPath ?? Self.displayPath(found: path, workingDirectory: environment.workingDirectory)
        let configuration: HostConfiguration
        do throws(CoreError) {
            configuration = try HostConfiguration.load(path: path, environment: environment)
        } catch {
            return Report(
                configPath: display, diagnostics: [Self.configDiagnostic(error, display: display)],
                unsafePlugins: [], plugins: [])
        }
        return check(configuration, display: display)
    }

    /// Checks an already loaded configuration; locations use `display` as the file's path.
    public func check(_ configuration: HostConfiguration, display: String? = nil) -> Report {
        let display = display ?? configuration.path
        func located(_ keyPath: [String]) -> SourceLocation? {
            (configuration.location(of: keyPath) ?? configuration.location(of: Array(keyPath.prefix(1)))).map {
                SourceLocation(path: display, line: $0.line, column: $0.column)
            }
        }
        let plan: HostPlan
        do throws(CoreError) {
            plan = try HostPlan.make(
                configuration: configuration, entries: entries, environment: environment, record: false)
        } catch {
            // The same refusal `vigil up` reports: no plugin is ready without rollback protection.
            return Report(
                configPath: display,
                diagnostics: [.init(severity: .error, location: nil, plugin: nil, message: error.message)],
                unsafePlugins: [], plugins: configuration.plugins.map { .failed($0, reason: error.message) })
        }
        let checker = RequirementChecker(declarations: configuration.host, environment: environment)
        var diagnostics = metricsDiagnostics(configuration, located: located)
        diagnostics += repositoryDiagnostics(configuration, located: located)
        var plugins: [Plugin] = []
        for item in plan.items {
            let location = located(["plugins", item.name])
            if !item.settingProblems.isEmpty {
                diagnostics += settingDiagnostics(item, configuration: configuration, display: display)
            } else if case .unavailable(_, let refusal) = item.outcome {
                diagnostics.append(
                    .init(
                        severity: .error,
                        location: located(
                            Self.failureKeyPath(plugin: item.name, refusal: refusal, configuration: configuration)),
                        plugin: item.name, message: refusal.message))
            }
            if let expires = item.expires {
                let now = Freshness.systemNow()
                let until = Freshness.formatRFC3339(expires)
                let stage = SignatureFreshness(expires: expires, grace: configuration.freshnessGrace).stage(now: now)
                if stage == .expired {
                    diagnostics.append(
                        .init(
                            severity: .warning, location: location, plugin: item.name,
                            message: "its signed manifest expired at \(until): the accepted version keeps running, but "
                                + "updating, re-trusting and key rotations are refused (`expired`) — ask the publisher "
                                + "for a release signed with a later \"expires\""))
                } else if stage == .expiring {
                    diagnostics.append(
                        .init(
                            severity: .warning, location: location, plugin: item.name,
                            message: "its signature stays fresh for \(Freshness.formatDuration(expires - now)) (until "
                                + "\(until)); after that, updates and re-trusting are refused — ask the publisher for a "
                                + "re-signed release ([freshness] grace decides when this warning starts)"))
                }
            }
            if let expires = item.revocationsExpire {
                let now = Freshness.systemNow()
                let until = Freshness.formatRFC3339(expires)
                switch SignatureFreshness(expires: expires, grace: configuration.freshnessGrace).stage(now: now) {
                case .fresh: break
                case .expiring:
                    diagnostics.append(
                        .init(
                            severity: .warning, location: location, plugin: item.name,
                            message: "its signed revocation list stays fresh for "
                                + "\(Freshness.formatDuration(expires - now)) (until \(until)); after that, updates and "
                                + "re-trusting are refused (`revocation-expired`) — ask the publisher to re-sign it with a "
                                + "later \"expires\" (`vigil plugin revoke --expires`)"))
                case .expired:
                    diagnostics.append(
                        .init(
                            severity: .warning, location: location, plugin: item.name,
                            message: "its signed revocation list expired at \(until): the accepted version keeps "
                                + "running, but updating, re-trusting and key rotations are refused "
                                + "(`revocation-expired`) — ask the publisher to re-sign it with a later \"expires\""))
                }
            }
            if let rotation = item.rotation, let keys = rotation.keys {
                diagnostics.append(
                    .init(
                        severity: .warning, location: located(["trusted_plugins", item.name]), plugin: item.name,
                        message: "its publisher rotated its keys to \(keys) by signed key rotation \(rotation.version) "
                            + "(signed by the old and the new keys; followed without a review) — record the new keys in "
                            + "vigil.toml with `\(TrustCommand.display(item.name))` when convenient"))
            }
            // Requirements of every verified manifest, even one whose entry is unknown. A missing
            // declaration is an error: the plugin would be blocked, it would not start.
            let unmet = checker.unmet(item.requirements, probeEnvironment: probeEnvironment)
            for requirement in unmet {
                let blocking = requirement.requirement.isDeclaration
                diagnostics.append(
                    .init(
                        severity: blocking ? .error : .warning, location: location, plugin: item.name,
                        message: PluginStateName.phrase(for: requirement)
                            + (blocking ? " (it would not start): " : " at start: ") + requirement.description))
            }
            switch item.outcome {
            case .unavailable(_, let refusal):
                plugins.append(.failed(item.name, reason: refusal.message, directory: item.directory))
            case .ready where unmet.isEmpty:
                plugins.append(
                    Plugin(
                        name: item.name, state: .verified, phrase: "verified", reason: nil, directory: item.directory))
            case .ready:
                plugins.append(
                    Plugin(
                        name: item.name, state: PluginStateName(unmet: unmet),
                        phrase: PluginStateName.phrase(unmet: unmet),
                        reason: unmet.map(\.description).joined(separator: "; "), directory: item.directory))
            }
            if item.unschemedTable {
                diagnostics.append(
                    .init(
                        severity: .warning, location: located([item.name]), plugin: item.name,
                        message: "its manifest (\(PluginManifest.schemaV1)) has no settings schema, so [\(item.name)] "
                            + "is checked only when the plugin starts — ask its publisher for a "
                            + "\(PluginManifest.schema) manifest"))
            }
            diagnostics += workerCommandDiagnostics(item, located: located)
            if item.trust == .acknowledgedUnsigned {
                diagnostics.append(
                    .init(
                        severity: .warning, location: located(["acknowledge_unsafe_plugins", item.name]),
                        plugin: item.name,
                        message:
                            "loads UNSIGNED under acknowledge_unsafe_plugins — sign it (vigil plugin sign), trust it "
                            + "(\(TrustCommand.display(item.name))) and remove it from acknowledge_unsafe_plugins before production"
                    ))
            }
        }
        diagnostics += confinementDiagnostics(plan, configuration: configuration, located: located)
        for stray in plan.strayTables {
            diagnostics.append(
                .init(severity: .error, location: located([stray.name]), plugin: nil, message: stray.message))
        }
        var report = Report(
            configPath: display, diagnostics: diagnostics, unsafePlugins: plan.unsafePlugins, plugins: plugins)
        for item in plan.items {
            report.manifests[item.name] = item.manifest
            if let expires = item.expires {
                report.signatures[item.name] = SignatureFreshness(
                    expires: expires, grace: configuration.freshnessGrace)
            }
        }
        return report
    }

    /// A found file's path as a compiler would print it: relative when below `workingDirectory`.
    static func displayPath(found path: String, workingDirectory cwd: String) -> String {
        let prefix = cwd.hasSuffix("/") ? cwd : cwd + "/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
    }

    /// A configuration error as a diagnostic, located from the error's own location field
    /// (shown with the path as the user gave it).
    static func configDiagnostic(_ error: CoreError, display: String) -> Diagnostic {
        Diagnostic(
            severity: .error,
            location: error.location.map { SourceLocation(path: display, line: $0.line, column: $0.column) },
            plugin: error.plugin, message: error.message)
    }
}
