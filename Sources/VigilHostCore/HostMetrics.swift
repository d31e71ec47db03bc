import CoreMetrics
import VigilBase
import VigilCore
import VigilMetrics
import VigilPlugin

/// The host's own metrics (build info, one plugin-state series per state), recorded through the
/// factory in ``VigilHost/Options/metrics`` (a no-op unless the host app or `vigil up` gives one).
struct HostMetrics: Sendable {
    /// Every ``PluginState`` name, one series each.
    /// The states a running host's plugin can be in: the one vocabulary's (docs/states.md) but the
    /// check's own `verified`.
    static let stateNames = PluginStateName.allCases.filter { $0 != .verified }.map(\.rawValue)

    let factory: any MetricsFactory

    /// Records the build and every plugin's first state.
    init(factory: any MetricsFactory, plugins: [(name: String, state: PluginState)]) {
        self.factory = factory
        Gauge(
            label: MetricsCatalog.buildInfo.name, dimensions: [("version", VigilVersion.version)], factory: factory
        ).record(1)
        for plugin in plugins { record(plugin: plugin.name, state: plugin.state) }
        sleepLocks(0)
        for event in ["sleep", "resume"] {
            Counter(label: MetricsCatalog.sleepEvents.name, dimensions: [("event", event)], factory: factory)
                .increment(by: 0)
        }
    }

    /// Sleep handling reported `report` with `locks` held: the locks, and the sleep/resume count.
    func sleep(_ report: SleepReport, locks: Int) {
        sleepLocks(locks)
        let event: String
        switch report {
        case .coming: event = "sleep"
        case .ended: event = "resume"
        case .settled, .locksLost, .changed: return
        }
        Counter(label: MetricsCatalog.sleepEvents.name, dimensions: [("event", event)], factory: factory).increment()
    }

    /// The number of logind inhibitor locks held now.
    func sleepLocks(_ count: Int) {
        Gauge(label: MetricsCatalog.sleepLocks.name, dimensions: [], factory: factory).record(count)
    }

    /// Starts the denial counters of a confined plugin at 0, one per capability (so the first denial
    /// is an increase a query sees); again for the same plugin changes nothing.
    func confined(plugin: String) {
        for capability in MetricsCatalog.denialCapabilities {
            denials(plugin: plugin, capability: capability).increment(by: 0)
        }
    }

    /// The kernel refused the confined plugin an operation.
    func denied(plugin: String, _ denial: ConfinementDenial) {
        denials(plugin: plugin, capability: Self.label(denial.capability)).increment()
    }

    /// The ``MetricsCatalog/denialCapabilities`` word for `capability`.
    static func label(_ capability: ConfinementDenial.Capability) -> String {
        switch capability {
        case .fileRead: "file_read"
        case .fileWrite: "file_write"
        case .tcpConnect: "tcp_connect"
        case .network: "network"
        case .unixSocket: "unix_socket"
        case .spawn: "spawn"
        case .none: "none"
        }
    }

    private func denials(plugin: String, capability: String) -> Counter {
        Counter(
            label: MetricsCatalog.pluginDenials.name, dimensions: [("plugin", plugin), ("capability", capability)],
            factory: factory)
    }

    /// Sets the plugin's series: 1 for `state`, 0 for the others.
    func record(plugin: String, state: PluginState) {
        for name in Self.stateNames {
            Gauge(
                label: MetricsCatalog.pluginState.name, dimensions: [("plugin", plugin), ("state", name)],
                factory: factory
            ).record(name == state.name ? 1 : 0)
        }
    }
}
