import FoundationEssentials
public import Logging
import VigilAnnounce
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
    /// `options.environment`.
    ///
    /// - Parameters:
    ///   - configPath: the `vigil.toml` (relative to `options.environment`'s working directory);
    ///     `nil` finds the nearest one from that directory upward.
    ///   - registry: the plugin implementations this host provides (default: Vigil's built-ins).
    /// - Throws: ``VigilError/Code/configuration`` when the file is missing or invalid (the message
    ///   has `path:line:column`), ``VigilError/Code/runtimeDirectory`` when status cannot be published.
    public init(
        configPath: String? = nil, registry: PluginRegistry = .builtin, options: Options = Options(), logger: Logger
    ) throws(VigilError) {
        let path = try Self.resolveConfigPath(configPath, environment: options.environment)
        let configuration: HostConfiguration
        do throws(CoreError) {
            configuration = try HostConfiguration.load(path: path, environment: options.environment)
        } catch {
            throw VigilError(code: .configuration, message: error.description, cause: error)
        }
        let plan: HostPlan
        do throws(CoreError) {
            plan = try HostPlan.make(
                configuration: configuration, entries: Set(registry.entries), environment: options.environment,
                record: true)
        } catch {
            throw VigilError(code: .configuration, message: error.description, cause: error)
        }
        var options = options
        if let table = configuration.pluginSettings["announce"] {
            do throws(AnnounceError) {
                options.announce = try AnnounceSettings(table: table)
            } catch {
                throw VigilError(code: .configuration, message: "\(configuration.path): \(error.message)")
            }
        }
        do throws(MetricsSettingsError) {
            options.metricsSettings = try MetricsSettings(table: configuration.pluginSettings["metrics"])
        } catch {
            throw VigilError(code: .configuration, message: "\(configuration.path): \(error.message)")
        }
        let entries = plan.items.map { Self.entry(for: $0, registry: registry) }
        for case .unavailable(let plugin) in entries {
            logger.error("\(plugin.failure.message)", metadata: ["plugin.name": "\(plugin.name)"])
        }
        try self.init(
            entries: entries, declarations: configuration.host, hostName: nil, configPath: configuration.path,
            unsafePlugins: plan.unsafePlugins, unsafeBanner: plan.unsafeBanner, options: options, logger: logger)
    }

    /// The `vigil.toml` to use: `configPath`, else the nearest one from the environment's working
    /// directory upward.
    static func resolveConfigPath(_ configPath: String?, environment: HostEnvironment) throws(VigilError) -> String {
        do throws(CoreError) {
            return try HostPlan.resolveConfigPath(configPath, environment: environment)
        } catch {
            throw VigilError(code: .configuration, message: error.description, cause: error)
        }
    }

    /// A planned plugin with the implementation that runs it: the registry's for its `entry`, or
    /// for a shared library one over its verified bytes (checked again; mapped when it starts).
    private static func entry(for item: HostPlan.Item, registry: PluginRegistry) -> Entry {
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
                    implementation = try SharedLibraryPlugins.implementation(for: ready.loaded)
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
            return .ready(
                PreparedPlugin(
                    name: item.name, version: ready.version, requirements: item.requirements,
                    settings: ready.settings, implementation: implementation))
        }
    }
}
