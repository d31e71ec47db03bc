import Synchronization
import Vigil
import VigilPlugin
import VigilSupervisorEngine

/// `vigil run`'s command as a plugin of its host, so `vigil status` shows it as it shows a
/// configured worker (state and readiness, pid, restarts, last exit, `STATUS=` text): a plugin
/// named `run` whose details are the command's worker row. It only shows the command: the
/// supervisor it reads is `SupervisedCommand`'s, which starts, signals and stops it.
final class RunCommandPlugin: KeepAlivePlugin, Sendable {
    /// The plugin's name in `vigil status`.
    static let name = "run"

    /// Where the supervisor's worker events go: the live instance's reporter, set while it runs
    /// (the supervisor is made before the host makes the instance).
    final class Events: Sendable {
        private let reporter = Mutex<PluginReporter?>(nil)

        /// Tells the live instance (if any) that the command's row changed.
        func changed() { reporter.withLock { $0 }?.report(.detailsChanged) }

        fileprivate func attach(_ reporter: PluginReporter?) { self.reporter.withLock { $0 = reporter } }
    }

    private let supervisor: Supervisor
    private let context: PluginContext
    private let events: Events

    private init(supervisor: Supervisor, context: PluginContext, events: Events) {
        self.supervisor = supervisor
        self.context = context
        self.events = events
    }

    /// The host's plugin for `supervisor`'s command, told of its changes through `events`.
    static func prepared(supervisor: Supervisor, events: Events) -> VigilHost.PreparedPlugin {
        VigilHost.PreparedPlugin(
            name: name, version: VigilVersion.version,
            implementation: PluginImplementation(entry: name) { context in
                RunCommandPlugin(supervisor: supervisor, context: context, events: events)
            })
    }

    func run() async throws {
        events.attach(context.reporter)
        context.reporter.ready()
        await PluginLifetime.untilCancelled()
        events.attach(nil)
    }

    func details() async -> [String: String] {
        let workers = supervisor.workers
        var out = ["workers": workers.map(\.name).joined(separator: ", ")]
        for worker in workers { out.merge(worker.details) { _, new in new } }
        return out
    }
}
