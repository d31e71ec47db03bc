import CoreMetrics
import Synchronization
import VigilMetrics
import VigilSupervisorEngine

/// The supervisor plugin's metrics (docs/metrics.md), recorded from the engine's worker events
/// through the plugin context's factory.
final class WorkerMetrics: Sendable {
    /// Every ``WorkerState``, one series each.
    static let stateNames: [String] = [
        WorkerState.starting, .ready, .running, .stopping, .backingOff, .failed, .stopped,
    ].map(\.rawValue)

    private let factory: any MetricsFactory
    private let plugin: String
    /// Workers killed for a missed watchdog deadline whose exit is still to come.
    private let watchdogKills = Mutex<Set<String>>([])

    /// Creates every worker's series: `stopped`, not ready, no start or restart yet.
    init(factory: any MetricsFactory, plugin: String, workers: [String]) {
        self.factory = factory
        self.plugin = plugin
        add(workers: workers)
        Counter(label: MetricsCatalog.watchdogPings.name, dimensions: [("plugin", plugin)], factory: factory)
            .increment(by: 0)
    }

    /// Creates the series of workers a reload added (as ``init(factory:plugin:workers:)`` does).
    func add(workers: [String]) {
        for worker in workers {
            setState(worker, .stopped)
            gauge(MetricsCatalog.workerReady, worker).record(0)
            gauge(MetricsCatalog.workerBackoff, worker).record(0)
            counter(MetricsCatalog.workerStarts, worker).increment(by: 0)
            for reason in MetricsCatalog.restartReasons {
                counter(MetricsCatalog.workerRestarts, worker, [("reason", reason)]).increment(by: 0)
            }
        }
    }

    /// Records one engine event (on the supervisor's thread: never blocks).
    func record(_ event: SupervisorEvent) {
        let worker = event.worker.name
        switch event.kind {
        case .started:
            counter(MetricsCatalog.workerStarts, worker).increment()
            gauge(MetricsCatalog.workerBackoff, worker).record(0)
        case .crashed(let exit, let delay):
            let killed = watchdogKills.withLock { $0.remove(worker) != nil }
            let reason = exit.restartReason(watchdogFired: killed)
            counter(MetricsCatalog.workerRestarts, worker, [("reason", reason)]).increment()
            let (seconds, attoseconds) = delay.components
            gauge(MetricsCatalog.workerBackoff, worker).record(Double(seconds) + Double(attoseconds) / 1e18)
        case .watchdogTimeout:
            watchdogKills.withLock { _ = $0.insert(worker) }
        case .failed, .stopped:
            watchdogKills.withLock { _ = $0.remove(worker) }
        case .ready, .statusChanged, .floodingChanged:
            break
        }
        if let exit = event.worker.lastExit {
            gauge(MetricsCatalog.workerLastExitCode, worker).record(Int64(exit.shellStatus))
        }
        setState(worker, event.worker.state)
        let ready = event.worker.state == .ready || event.worker.state == .running
        gauge(MetricsCatalog.workerReady, worker).record(ready ? 1 : 0)
    }

    /// Counts a WATCHDOG=1 ping sent to systemd.
    func watchdogPing() {
        Counter(label: MetricsCatalog.watchdogPings.name, dimensions: [("plugin", plugin)], factory: factory)
            .increment()
    }

    private func setState(_ worker: String, _ state: WorkerState) {
        for name in Self.stateNames {
            gauge(MetricsCatalog.workerState, worker, [("state", name)]).record(name == state.rawValue ? 1 : 0)
        }
    }

    private func gauge(_ metric: MetricDescription, _ worker: String, _ extra: [(String, String)] = []) -> Gauge {
        Gauge(label: metric.name, dimensions: [("plugin", plugin), ("worker", worker)] + extra, factory: factory)
    }

    private func counter(_ metric: MetricDescription, _ worker: String, _ extra: [(String, String)] = []) -> Counter {
        Counter(label: metric.name, dimensions: [("plugin", plugin), ("worker", worker)] + extra, factory: factory)
    }
}
