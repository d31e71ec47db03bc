public import VigilCore
public import VigilPlugin
import VigilSupervisor
import Synchronization

/// Third-party keep-alive plugins shipped as shared libraries.
///
/// ``check(_:)`` runs every check that needs no mapping on a plugin the core loader verified
/// (ELF shape, SONAME, dependencies, descriptor ABI); ``implementation(for:)`` returns the
/// implementation a host runs, which maps the verified bytes from sealed memfds when the plugin
/// starts and unmaps them when it stops. See docs/native-plugins.md.
public enum SharedLibraryPlugins {
    /// The plugin ABI this host implements, as `major.minor`.
    public static var abiVersion: String { "\(VerifiedLibrarySet.abiMajor).\(VerifiedLibrarySet.abiMinor)" }

    /// Checks `plugin`'s library and listed dependencies from their verified bytes. Maps nothing
    /// and runs none of the plugin's code.
    ///
    /// - Throws: ``SharedLibraryError`` for the first problem found.
    public static func check(_ plugin: LoadedPlugin) throws(SharedLibraryError) {
        _ = try VerifiedLibrarySet(plugin)
    }

    /// The implementation that runs `plugin` (checked as by ``check(_:)`` first).
    public static func implementation(for plugin: LoadedPlugin) throws(SharedLibraryError) -> PluginImplementation {
        let set = try VerifiedLibrarySet(plugin)
        return PluginImplementation(entry: plugin.manifest.entry) { context in
            SharedLibraryKeepAlive(set: set, context: context)
        }
    }
}

/// A ``KeepAlivePlugin`` backed by a shared library: `start()` maps and initialises the library
/// and starts one instance; `stop()` stops and destroys it, calls `deinit` and unmaps. Every C
/// call runs on a thread of its own.
final class SharedLibraryKeepAlive: KeepAlivePlugin {
    private let set: VerifiedLibrarySet
    private let context: PluginContext
    private let thread: DedicatedThread
    private let session = Mutex<NativeSession?>(nil)

    init(set: VerifiedLibrarySet, context: PluginContext) {
        self.set = set
        self.context = context
        self.thread = DedicatedThread(name: "vigil-native")
    }

    deinit {
        thread.close()
    }

    func start() async throws {
        let outcome = await thread.run { [self] () -> SharedLibraryError? in
            session.withLock { current -> SharedLibraryError? in
                if current != nil { return nil }
                let fresh = NativeSession(set: set, context: context)
                do throws(SharedLibraryError) {
                    try fresh.open()
                } catch {
                    return error
                }
                current = fresh
                do throws(SharedLibraryError) {
                    try fresh.start()
                } catch {
                    return error
                }
                return nil
            }
        }
        guard let outcome else {
            throw SharedLibraryError(
                code: .loadFailed, plugin: set.plugin,
                message: "the plugin's thread has shut down, so it cannot start — restart the host")
        }
        if let outcome { throw outcome }
    }

    func stop() async {
        _ = await thread.run { [self] in
            session.withLock { current in
                current?.stop()
                current?.close()
                current = nil
            }
        }
    }

    func details() async -> [String: String] {
        await thread.run { [self] in session.withLock { $0?.details() ?? [:] } } ?? [:]
    }
}
