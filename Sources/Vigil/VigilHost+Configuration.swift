import FoundationEssentials
public import Logging
import VigilAnnounce
import VigilCore
import VigilHostCheck
import VigilLibraryCheck
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
        let loaded = try Self.load(path: path, registry: registry, environment: options.environment, logger: logger)
        var options = options
        if let announce = loaded.announce { options.announce = announce }
        try self.init(
            entries: loaded.entries, declarations: loaded.configuration.host, hostName: nil,
            configPath: loaded.configuration.path, unsafePlugins: loaded.plan.unsafePlugins,
            unsafeBanner: loaded.plan.unsafeBanner, options: options, logger: logger, registry: registry)
    }

    /// A `vigil.toml` read, checked and verified: what the host starts from, and what a reload
    /// reads again.
    struct LoadedConfiguration {
        var configuration: HostConfiguration
        var plan: HostPlan
        var entries: [Entry]
        /// `[announce]`, when the file has one.
        var announce: AnnounceSettings?
    }

    /// Reads `path` and verifies every activated plugin (the one loader path of start and reload:
    /// StrictModes, the TOML, trust, rotations, revocations, rollback, expiry, the plan).
    static func load(path: String, registry: PluginRegistry, environment: HostEnvironment, logger: Logger)
        throws(VigilError) -> LoadedConfiguration
    {
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
        var announce: AnnounceSettings?
        if let table = configuration.pluginSettings["announce"] {
            do throws(AnnounceError) {
                announce = try AnnounceSettings(table: table)
            } catch {
                throw VigilError(code: .configuration, message: "\(configuration.path): \(error.message)")
            }
        }
        let entries = plan.items.map { Self.entry(for: $0, registry: registry) }
        for case .unavailable(let plugin) in entries {
            logger.error("\(plugin.failure.message)", metadata: ["plugin.name": "\(plugin.name)"])
        }
        return LoadedConfiguration(configuration: configuration, plan: plan, entries: entries, announce: announce)
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
            var prepared = PreparedPlugin(
                name: item.name, version: ready.version, requirements: item.requirements,
                settings: ready.settings, implementation: implementation)
            prepared.manifestDigest = ready.loaded.manifestSHA256
            return .ready(prepared)
        }
    }
}
