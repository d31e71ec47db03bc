import CoreMetrics
import Synchronization
import VigilAudio
import VigilMetrics

/// silent-engine's metrics (docs/metrics.md): whether the keep-alive stream plays, the state of
/// its sink as the stream sees it, the sink's suspensions by other programs, underruns, and the
/// stream's interruptions by their cause, recorded from the stream's events and observations
/// (no poll: an idle stream records nothing) through the plugin context's factory.
final class StreamMetrics: Sendable {
    let factory: any MetricsFactory
    let plugin: String
    /// The sink was just suspended: the interruption that follows is that suspension, not a lost stream.
    private let suspending = Mutex(false)

    /// Creates the plugin's series: down, sink state unknown, nothing counted yet.
    init(factory: any MetricsFactory, plugin: String) {
        self.factory = factory
        self.plugin = plugin
        up(false)
        counter(MetricsCatalog.sinkSuspends).increment(by: 0)
        counter(MetricsCatalog.underruns).increment(by: 0)
    }

    /// The stream plays (`true`: its sink runs) or not (the sink's state is unknown then).
    func up(_ playing: Bool) {
        Gauge(label: MetricsCatalog.streamUp.name, dimensions: [("plugin", plugin)], factory: factory)
            .record(playing ? 1 : 0)
        sink(playing ? "running" : "unknown")
    }

    /// The stream was interrupted by `error` (it reconnects; ``up(_:)`` says when it plays again).
    /// The interruption that a sink suspension causes is counted as a suspension only.
    func interrupted(_ error: AudioError) {
        let suspension = suspending.withLock { suspending in
            defer { suspending = false }
            return suspending
        }
        if suspension { return }
        up(false)
        Counter(
            label: MetricsCatalog.streamInterruptions.name,
            dimensions: [("plugin", plugin), ("reason", error.code.rawValue)], factory: factory
        ).increment()
    }

    /// The stream plays again (after an interruption or a suspension).
    func resumed() {
        up(true)
    }

    /// An underrun, or the sink suspended by another program.
    func observed(_ observation: PlaybackStream.Observation) {
        switch observation {
        case .underrun:
            counter(MetricsCatalog.underruns).increment()
        case .sinkSuspended:
            suspending.withLock { $0 = true }
            counter(MetricsCatalog.sinkSuspends).increment()
            Gauge(label: MetricsCatalog.streamUp.name, dimensions: [("plugin", plugin)], factory: factory).record(0)
            sink("suspended")
        }
    }

    /// 1 for `state`'s series, 0 for the others.
    private func sink(_ state: String) {
        for name in MetricsCatalog.sinkStates {
            Gauge(
                label: MetricsCatalog.sinkState.name, dimensions: [("plugin", plugin), ("state", name)],
                factory: factory
            )
            .record(name == state ? 1 : 0)
        }
    }

    private func counter(_ metric: MetricDescription) -> Counter {
        Counter(label: metric.name, dimensions: [("plugin", plugin)], factory: factory)
    }
}
