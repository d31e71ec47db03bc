import FoundationEssentials
public import Logging
import VigilBase
import VigilCore
import VigilHostCheck
import VigilLibraryCheck
import VigilMetrics
import VigilPlugin
import VigilSharedLibrary

#if canImport(Glibc)
import Glibc
#endif

extension VigilHost {
    /// Creates a host from a `vigil.toml`: every activated plugin is verified through the core
    /// (fail closed) and its manifest's `entry` is looked up in `registry`.
    ///
    /// A plugin that does not verify, or whose `entry` is not in `registry`, never gets an
    /// instance: it shows `failed` with the reason and the remedy, and the others run normally.
    /// Versions accepted are recorded for rollback protection under the state directory of
    /// `options.environment`. The host core adds no optional part (no sleep handling, no
    /// announcer); `Vigil`'s `init(configPath:registry:options:logger:)` is this one with its
    /// built-in plugins and parts.
    ///
    /// - Parameters:
    ///   - configPath: the `vigil.toml` (relative to `options.environment`'s working directory);
    ///     `nil` finds the nearest one from that directory upward.
    ///   - registry: the plugin implementations this host runs (a supervisor-only host:
    ///     `PluginRegistry([SupervisorPlugin.implementation])`).
    /// - Throws: ``VigilError/Code/configuration`` when the file is missing or invalid (the message
    ///   has `path:line:column`), ``VigilError/Code/runtimeDirectory`` when status cannot be published,
    ///   ``VigilError/Code/configInUse`` when another host (in any process) runs the same `vigil.toml`:
    ///   the host holds that file's lock while it lives (when it publishes status).
    public init(
        configPath: String? = nil, running registry: PluginRegistry, options: Options = Options(), logger: Logger
    ) throws(VigilError) {
        try self.init(configPath: configPath, running: registry, options: options, label: logger)
    }

    /// The same, with `label` nil for a logger labelled with the host's name (`[host] name`, else
    /// the executable's): what a library host's log lines carry when it gives no logger.
    package init(configPath: String?, running registry: PluginRegistry, options: Options, label: Logger?)
        throws(VigilError)
    {
        let path = try Self.resolveConfigPath(configPath, environment: options.environment)
        let loaded = try Self.load(path: path, registry: registry, options: options, label: label)
        try self.init(
            entries: loaded.entries, declarations: loaded.configuration.host, hostName: nil,
            configPath: loaded.configuration.path, unsafePlugins: loaded.plan.unsafePlugins,
            unsafeBanner: loaded.plan.unsafeBanner, options: loaded.options, logger: loaded.logger,
            registry: registry, partTables: loaded.partTables)
    }

    /// A `vigil.toml` read, checked and verified: what the host starts from, and what a reload
    /// reads again.
    struct LoadedConfiguration {
        var configuration: HostConfiguration
        var plan: HostPlan
        var entries: [Entry]
        /// The options with what the host's optional parts read from the file (`[announce]`).
        var options: Options
        /// The tables the optional parts read, which only a restart applies (a reload refuses a change).
        var partTables: [String: [String: SettingValue]]
        /// Where the host logs: the one it was given, else one labelled with the host's name.
        var logger: Logger
    }

    /// Reads `path` and verifies every activated plugin (the one loader path of start and reload:
    /// StrictModes, the TOML, trust, rotations, revocations, rollback, expiry, the plan).
    static func load(path: String, registry: PluginRegistry, options: Options, label: Logger?)
        throws(VigilError) -> LoadedConfiguration
    {
        let environment = options.environment
        let configuration: HostConfiguration
        do throws(CoreError) {
            configuration = try HostConfiguration.load(path: path, environment: environment)
        } catch {
            throw VigilError(code: .configuration, message: error.description, cause: error)
        }
        let plan: HostPlan
        do throws(CoreError) {
            plan = try HostPlan.make(
                configuration: configuration, entries: Set(registry.entries), environment: environment, record: true)
        } catch {
            throw VigilError(code: .configuration, message: error.description, cause: error)
        }
        let logger = label ?? Logger(label: configuration.host.name ?? Self.executableName())
        // `vigil check` and the build call these errors; a running host says so and goes on.
        for stray in plan.strayTables {
            let location = configuration.location(of: [stray.name]).map { "\($0): " } ?? "\(configuration.path): "
            logger.warning("\(location)\(stray.message)")
            options.configurationWarning?("\(location)\(stray.message)")
        }
        var options = options
        for read in options.parts.readConfiguration { try read(configuration, &options) }
        do throws(MetricsSettingsError) {
            options.metricsSettings = try MetricsSettings(table: configuration.pluginSettings["metrics"])
        } catch {
            throw VigilError(code: .configuration, message: "\(configuration.path): \(error.message)")
        }
        let entries =
            plan.items.map {
                Self.entry(
                    for: $0, registry: registry, grace: configuration.freshnessGrace,
                    acknowledgedUnenforced: Set(configuration.acknowledgedUnenforced))
            }
            + options.additionalPlugins.map { .ready($0) }
        for case .unavailable(let plugin) in entries {
            logger.error(
                "\(plugin.failure.message)",
                metadata: [
                    "plugin.name": "\(plugin.name)", OperatorEvent.metadataKey: "\(plugin.failure.operatorEvent)",
                ])
        }
        var partTables: [String: [String: SettingValue]] = [:]
        // `[metrics]` is read by the exporter `vigil up` starts with the host: a restart applies it.
        for name in options.parts.restartOnlyTables + ["metrics"] {
            partTables[name] = configuration.pluginSettings[name]
        }
        return LoadedConfiguration(
            configuration: configuration, plan: plan, entries: entries, options: options, partTables: partTables,
            logger: logger)
    }

    /// The `vigil.toml` to use: `configPath`, else the nearest one from the environment's working
    /// directory upward.
    package static func resolveConfigPath(_ configPath: String?, environment: HostEnvironment) throws(VigilError)
        -> String
    {
        do throws(CoreError) {
            return try HostPlan.resolveConfigPath(configPath, environment: environment)
        } catch {
            throw VigilError(code: .configuration, message: error.description, cause: error)
        }
    }

    /// A planned plugin with the implementation that runs it: the registry's for its `entry`, or
    /// for a shared library one over its verified bytes (checked again; mapped when it starts).
    /// `acknowledgedUnenforced`: `[confinement] acknowledge_unenforced`.
    private static func entry(
        for item: HostPlan.Item, registry: PluginRegistry, grace: Int64, acknowledgedUnenforced: Set<String>
    ) -> Entry {
        switch item.outcome {
        case .unavailable(let version, let refusal):
            let failure: PluginFailure =
                switch refusal {
                case .core(let error): PluginFailure(error, plugin: item.name)
                case .sharedLibrary(let error): PluginFailure(error, plugin: item.name)
                case .plugin(let error): PluginFailure(error, plugin: item.name)
                }
            return .unavailable(.init(name: item.name, version: version, failure: failure))
        case .ready(let ready):
            let implementation: PluginImplementation
            if ready.loaded.manifest.sharedLibrary != nil {
                do throws(SharedLibraryError) {
                    implementation = try SharedLibraryPlugins.implementation(
                        for: ready.loaded, acknowledgedUnenforced: acknowledgedUnenforced.contains(item.name))
                } catch {
                    let failure = PluginFailure(error, plugin: item.name)
                    return .unavailable(.init(name: item.name, version: ready.version, failure: failure))
                }
            } else if let registered = registry.implementation(for: ready.loaded.manifest.entry) {
                implementation = registered
            } else {
                // HostPlan looked the entry up in this registry: not reached.
                let error = PluginError.unknownEntry(
                    plugin: item.name, entry: ready.loaded.manifest.entry, known: registry.entries)
                let failure = PluginFailure(error, plugin: item.name)
                return .unavailable(.init(name: item.name, version: ready.version, failure: failure))
            }
            var prepared = PreparedPlugin(
                name: item.name, version: ready.version, requirements: item.requirements,
                settings: ready.settings, implementation: implementation)
            prepared.loaded = ready.loaded
            prepared.signature = item.expires.map { SignatureFreshness(expires: $0, grace: grace) }
            prepared.manifestDigest = ready.loaded.manifestSHA256
            return .ready(prepared)
        }
    }
}
