import Foundation
public import Logging
import VigilAnnounce
import VigilCore
import VigilPlugin
import VigilSharedLibrary

/// What a `vigil.toml` amounts to: each activated plugin verified and mapped to its
/// implementation, or unavailable with the reason. Shared by ``VigilHost`` and ``HostCheck``, so
/// `keepAlive()`, `vigil check` and `vigil up` always agree.
struct HostPlan: Sendable {
    /// One activated plugin.
    struct Item: Sendable {
        var name: String
        var entry: VigilHost.Entry
        var trust: PluginTrust?
        /// The verified manifest's requirements (empty when it did not verify).
        var requirements: [HostRequirement] = []
        /// The directory the plugin was loaded from (`nil` when it was not found or did not verify).
        var directory: String?
    }

    var configuration: HostConfiguration
    var items: [Item]

    /// Plugins admitted unsigned under `acknowledge_unsafe_plugins`.
    var unsafePlugins: [String] { items.filter { $0.trust == .acknowledgedUnsigned }.map(\.name) }

    /// The banner to show while unsigned plugins are admitted, or `nil`.
    var unsafeBanner: String? { unsafePlugins.isEmpty ? nil : CoreBanner.unsafePlugins(unsafePlugins) }

    /// Verifies every activated plugin through the core loader (fail closed) and maps each
    /// verified manifest's `entry` through `registry`.
    ///
    /// - Parameter record: record accepted versions in the rollback store (a running host does;
    ///   `vigil check` only checks).
    /// - Throws: ``CoreError`` `.stateInvalid` when plugins are activated but `environment` gives
    ///   no state directory for rollback protection (a host refuses to start then, and `vigil
    ///   check` reports it as an error; neither calls a plugin ready without the rollback check).
    static func make(
        configuration: HostConfiguration, registry: PluginRegistry, environment: HostEnvironment, record: Bool
    ) throws(CoreError) -> HostPlan {
        let store: RollbackStore?
        do throws(CoreError) {
            store = try RollbackStore.standard(environment: environment)
        } catch {
            if !configuration.plugins.isEmpty { throw error }
            store = nil
        }
        let loader = PluginLoader(configuration: configuration, rollbackStore: store)
        let items = configuration.plugins.map { name -> Item in
            let loaded: LoadedPlugin
            do throws(CoreError) {
                loaded = try loader.loadOrThrow(name, record: record)
            } catch {
                // Never parsed further, never instantiated: it stays failed with the core's reason.
                let failure = PluginFailure(code: error.code.description, message: error.description)
                return Item(
                    name: name, entry: .unavailable(.init(name: name, version: nil, failure: failure)), trust: nil)
            }
            let manifest = loaded.manifest
            if manifest.sharedLibrary != nil {
                // A third-party library: every check that needs no mapping runs now (so `vigil check`
                // reports it); the verified bytes are mapped only when the plugin starts.
                do throws(SharedLibraryError) {
                    let implementation = try SharedLibraryPlugins.implementation(for: loaded)
                    return ready(name, loaded, implementation, configuration)
                } catch {
                    let failure = PluginFailure(code: error.code.description, message: error.description)
                    return Item(
                        name: name,
                        entry: .unavailable(.init(name: name, version: "\(manifest.version)", failure: failure)),
                        trust: loaded.trust, requirements: manifest.hostRequirements, directory: loaded.directory)
                }
            }
            guard let implementation = registry.implementation(for: manifest.entry) else {
                let error = PluginError.unknownEntry(plugin: name, entry: manifest.entry, known: registry.entries)
                let failure = PluginFailure(code: error.code.description, message: error.description)
                return Item(
                    name: name,
                    entry: .unavailable(.init(name: name, version: "\(manifest.version)", failure: failure)),
                    trust: loaded.trust, requirements: manifest.hostRequirements, directory: loaded.directory)
            }
            return ready(name, loaded, implementation, configuration)
        }
        return HostPlan(configuration: configuration, items: items)
    }

    private static func ready(
        _ name: String, _ loaded: LoadedPlugin, _ implementation: PluginImplementation,
        _ configuration: HostConfiguration
    ) -> Item {
        let manifest = loaded.manifest
        let settings = PluginSettings(
            pluginName: name, defaults: manifest.settings, overrides: configuration.pluginSettings[name] ?? [:])
        let prepared = VigilHost.PreparedPlugin(
            name: name, version: "\(manifest.version)", requirements: manifest.hostRequirements,
            settings: settings, implementation: implementation)
        return Item(
            name: name, entry: .ready(prepared), trust: loaded.trust, requirements: manifest.hostRequirements,
            directory: loaded.directory)
    }

    /// The `vigil.toml` to use: `configPath`, else the nearest one from the working directory upward.
    static func resolveConfigPath(_ configPath: String?) throws(VigilError) -> String {
        if let configPath { return configPath }
        let cwd = FileManager.default.currentDirectoryPath
        let found: String?
        do throws(CoreError) {
            found = try HostConfiguration.find(startingAt: cwd)
        } catch {
            throw VigilError(code: .configuration, message: error.description, cause: error)
        }
        guard let found else {
            throw VigilError(
                code: .configuration,
                message: "no \(HostConfiguration.fileName) in \(cwd) or any parent directory — create one at your "
                    + "project's root (see docs/host-runtime.md) or pass its path")
        }
        return found
    }
}

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
    ///   - configPath: the `vigil.toml`; `nil` finds the nearest one from the working directory upward.
    ///   - registry: the plugin implementations this host provides (default: Vigil's built-ins).
    /// - Throws: ``VigilError/Code/configuration`` when the file is missing or invalid (the message
    ///   has `path:line:column`), ``VigilError/Code/runtimeDirectory`` when status cannot be published.
    public init(
        configPath: String? = nil, registry: PluginRegistry = .builtin, options: Options = Options(), logger: Logger
    ) throws(VigilError) {
        let path = try HostPlan.resolveConfigPath(configPath)
        let configuration: HostConfiguration
        do throws(CoreError) {
            configuration = try HostConfiguration.load(path: path, environment: options.environment)
        } catch {
            throw VigilError(code: .configuration, message: error.description, cause: error)
        }
        let plan: HostPlan
        do throws(CoreError) {
            plan = try HostPlan.make(
                configuration: configuration, registry: registry, environment: options.environment, record: true)
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
        for item in plan.items {
            if case .unavailable(let plugin) = item.entry {
                logger.error("\(plugin.failure.message)", metadata: ["plugin.name": "\(item.name)"])
            }
        }
        try self.init(
            entries: plan.items.map(\.entry), declarations: configuration.host, hostName: nil,
            configPath: configuration.path, unsafePlugins: plan.unsafePlugins, unsafeBanner: plan.unsafeBanner,
            options: options, logger: logger)
    }
}
