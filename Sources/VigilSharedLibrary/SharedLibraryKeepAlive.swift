import Synchronization
import VigilBase
import VigilLibraryCheck
import VigilPlugin

/// A ``KeepAlivePlugin`` backed by a shared library: the one place the C ABI's
/// init/start/stop meets the `Service` contract. `run()` maps and initialises the library and
/// starts one instance (a failure there is the start failure), reports ready, waits for
/// cancellation, then stops and destroys the instance, calls `deinit` and unmaps. Every C call
/// runs on a thread of its own.
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

    func run() async throws {
        try await PluginLifetime.run(reporting: context.reporter, start: start, stop: { await self.stop() })
    }

    private func start() async throws {
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

    private func stop() async {
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
