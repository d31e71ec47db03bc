package import VigilCore
import VigilLibraryCheck
package import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

/// What a `vigil.toml` amounts to: each activated plugin verified, its `entry` known to this
/// Vigil (or its shared library checked from the verified bytes), or unavailable with the reason.
/// Shared by `VigilHost` and ``HostCheck``, so `keepAlive()`, `vigil check`, the build check and
/// `vigil up` always agree.
package struct HostPlan: Sendable {
    /// A plugin that verified and that this Vigil can run.
    package struct Ready: Sendable {
        /// Its version, for status.
        package var version: String
        /// Its manifest's defaults merged with the host's `[name]` table.
        package var settings: PluginSettings
        /// The core loader's result: the verified manifest and resource bytes.
        package var loaded: LoadedPlugin
    }

    /// What became of one activated plugin.
    package enum Outcome: Sendable {
        case ready(Ready)
        /// It did not verify, its `entry` is unknown, or its shared library was refused: the
        /// typed error says why.
        case unavailable(version: String?, refusal: Refusal)
    }

    /// Why a plugin is unavailable: the error behind it, kept typed (code, plugin, message,
    /// cause) so that every report renders it from its fields.
    package enum Refusal: Sendable {
        /// Verification, trust, rollback or the manifest.
        case core(CoreError)
        /// Its shared library.
        case sharedLibrary(SharedLibraryError)
        /// Its `entry` (``PluginError/Code/unknownEntry``).
        case plugin(PluginError)

        /// The cause and the remedy, without the plugin's name.
        package var message: String {
            switch self {
            case .core(let error): error.message
            case .sharedLibrary(let error): error.message
            case .plugin(let error): error.message
            }
        }
    }

    /// One activated plugin.
    package struct Item: Sendable {
        package var name: String
        package var outcome: Outcome
        package var trust: PluginTrust?
        /// The verified manifest's requirements (empty when it did not verify).
        package var requirements: [HostRequirement] = []
        /// The directory the plugin was loaded from (`nil` when it was not found or did not verify).
        package var directory: String?
        /// The signed key rotation its keys were reached by, if any.
        package var rotation: RotationState?
        /// When its signed manifest stops being fresh (seconds since the epoch), if it says.
        package var expires: Int64?
        /// When its signed revocation list stops being fresh, if it has one that says.
        package var revocationsExpire: Int64? = nil
        /// What its manifest's settings schema refuses in its `vigil.toml` table (the plugin is
        /// then unavailable with `invalid-setting`).
        package var settingProblems: [SettingsSchema.Problem] = []
        /// True when its manifest has no settings schema (v1) while `vigil.toml` has a table for it.
        package var unschemedTable = false
        /// Its verified manifest (`nil` when it did not verify).
        package var manifest: PluginManifest? = nil
    }

    package var configuration: HostConfiguration
    package var items: [Item]

    /// Plugins admitted unsigned under `acknowledge_unsafe_plugins`.
    package var unsafePlugins: [String] { items.filter { $0.trust == .acknowledgedUnsigned }.map(\.name) }

    /// The banner to show while unsigned plugins are admitted, or `nil`.
    package var unsafeBanner: String? { unsafePlugins.isEmpty ? nil : CoreBanner.unsafePlugins(unsafePlugins) }

    /// Verifies every activated plugin through the core loader (fail closed), checks a shared
    /// library's verified bytes (nothing is mapped), and looks every other manifest's `entry` up
    /// in `entries`, the implementations the host provides.
    ///
    /// - Parameter record: record accepted versions in the rollback store (a running host does;
    ///   `vigil check` only checks).
    /// - Throws: ``CoreError`` `.stateInvalid` when plugins are activated but `environment` gives
    ///   no state directory for rollback protection (a host refuses to start then, and `vigil
    ///   check` reports it as an error; neither calls a plugin ready without the rollback check).
    package static func make(
        configuration: HostConfiguration, entries: Set<String>, environment: HostEnvironment, record: Bool
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
                return Item(
                    name: name,
                    outcome: .unavailable(version: nil, refusal: .core(error)),
                    trust: nil)
            }
            let manifest = loaded.manifest
            func unavailable(_ refusal: Refusal) -> Item {
                Item(
                    name: name, outcome: .unavailable(version: "\(manifest.version)", refusal: refusal),
                    trust: loaded.trust, requirements: manifest.hostRequirements, directory: loaded.directory,
                    rotation: loaded.rotation, expires: manifest.expires, revocationsExpire: loaded.revocationsExpire,
                    manifest: manifest)
            }
            if manifest.sharedLibrary != nil {
                // A third-party library: every check that needs no mapping runs now (so `vigil check`
                // reports it); the verified bytes are mapped only when the plugin starts.
                do throws(SharedLibraryError) {
                    _ = try VerifiedLibrarySet(loaded)
                } catch {
                    return unavailable(.sharedLibrary(error))
                }
            } else if !entries.contains(manifest.entry) {
                let error = PluginError.unknownEntry(plugin: name, entry: manifest.entry, known: entries.sorted())
                return unavailable(.plugin(error))
            }
            let table = configuration.pluginSettings[name]
            if let schema = manifest.settingsSchema, let table {
                let problems = schema.validate(table)
                if !problems.isEmpty {
                    var item = unavailable(
                        .plugin(Self.settingsRefusal(plugin: name, problems, configuration: configuration)))
                    item.settingProblems = problems
                    return item
                }
            }
            let settings = PluginSettings(pluginName: name, defaults: manifest.settings, overrides: table ?? [:])
            return Item(
                name: name, outcome: .ready(Ready(version: "\(manifest.version)", settings: settings, loaded: loaded)),
                trust: loaded.trust, requirements: manifest.hostRequirements, directory: loaded.directory,
                rotation: loaded.rotation, expires: manifest.expires, revocationsExpire: loaded.revocationsExpire,
                unschemedTable: manifest.settingsSchema == nil && table != nil, manifest: manifest)
        }
        return HostPlan(configuration: configuration, items: items)
    }

    /// The `vigil.toml` to use: `configPath`, else the nearest one from the environment's working
    /// directory upward.
    ///
    /// - Throws: ``CoreError`` `.configNotFound` when there is none.
    package static func resolveConfigPath(_ configPath: String?, environment: HostEnvironment) throws(CoreError)
        -> String
    {
        if let configPath { return configPath }
        let cwd = environment.workingDirectory
        guard let found = try HostConfiguration.find(startingAt: cwd, environment: environment) else {
            throw CoreError(
                code: .configNotFound,
                message: "no \(HostConfiguration.fileName) in \(cwd) or any parent directory — create one at your "
                    + "project's root (see docs/host-runtime.md) or pass its path")
        }
        return found
    }
}
