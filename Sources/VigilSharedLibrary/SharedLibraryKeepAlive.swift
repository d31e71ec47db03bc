import Synchronization
import VigilBase
import VigilLibraryCheck
import VigilPlugin

/// A ``KeepAlivePlugin`` backed by a shared library that runs in a helper process of its own:
/// the one place the C ABI's init/start/stop meets the `Service` contract. `run()` starts the
/// helper, which maps the verified library and starts one instance (a failure there is the start
/// failure), reports ready, waits for cancellation, then stops and destroys the instance and lets
/// the helper exit. Every exchange with the helper runs on the plugin's own ``PollLoop`` thread,
/// which between requests sleeps in `poll` on the helper's socket (events, log lines, its end).
final class SharedLibraryKeepAlive: KeepAlivePlugin {
    private let set: VerifiedLibrarySet
    private let context: PluginContext
    private let confinement: HelperSession.Confinement
    private let deadlines: HelperSession.Deadlines
    private let loop: PollLoop
    private let session = Mutex<HelperSession?>(nil)

    init(
        set: VerifiedLibrarySet, context: PluginContext, confinement: HelperSession.Confinement,
        deadlines: HelperSession.Deadlines
    ) throws(SharedLibraryError) {
        self.set = set
        self.context = context
        self.confinement = confinement
        self.deadlines = deadlines
        do {
            loop = try PollLoop(name: "vigil-native")
        } catch {
            throw SharedLibraryError(
                code: .helperFailed, plugin: set.plugin,
                message: "cannot create the thread that talks to its helper process: \(error.reason) — check the "
                    + "process's descriptor limit", cause: ErrorCause(error))
        }
        loop.start()
    }

    deinit {
        loop.close()
    }

    func run() async throws {
        try await PluginLifetime.run(reporting: context.reporter, start: start, stop: { await self.stop() })
    }

    private func start() async throws {
        let outcome = await loop.run { [self] loop -> SharedLibraryError? in
            session.withLock { current -> SharedLibraryError? in
                if current != nil { return nil }
                let fresh = HelperSession(set: set, context: context, confinement: confinement, deadlines: deadlines)
                do throws(SharedLibraryError) {
                    try fresh.open(on: loop)
                } catch {
                    return error
                }
                current = fresh
                do throws(SharedLibraryError) {
                    try fresh.start(on: loop)
                } catch {
                    return error
                }
                return nil
            }
        }
        guard let outcome else {
            throw SharedLibraryError(
                code: .helperFailed, plugin: set.plugin,
                message: "the plugin's thread has shut down, so it cannot start — restart the host")
        }
        if let outcome { throw outcome }
    }

    private func stop() async {
        _ = await loop.run { [self] loop in
            session.withLock { current in
                current?.stop(on: loop)
                current?.close(on: loop)
                current = nil
            }
        }
    }

    /// The plugin's own details, then the host's about its helper (which a plugin cannot override).
    func details() async -> [String: String] {
        await loop.run { [self] loop in
            session.withLock { current -> [String: String] in
                guard let current else { return [:] }
                var values = current.details(on: loop)
                values.merge(current.hostDetails) { _, host in host }
                return values
            }
        } ?? [:]
    }
}
