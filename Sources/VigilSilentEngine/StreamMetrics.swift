import CoreMetrics
import VigilAudio
import VigilMetrics

/// silent-engine's metrics (docs/metrics.md): whether the keep-alive stream plays, and its
/// interruptions by their cause, recorded from the stream's events through the plugin context's
/// factory.
struct StreamMetrics: Sendable {
    let factory: any MetricsFactory
    let plugin: String

    /// The stream plays (`true`) or not.
    func up(_ playing: Bool) {
        Gauge(label: MetricsCatalog.streamUp.name, dimensions: [("plugin", plugin)], factory: factory)
            .record(playing ? 1 : 0)
    }

    /// The stream was interrupted by `error` (it reconnects; ``up(_:)`` says when it plays again).
    func interrupted(_ error: AudioError) {
        up(false)
        Counter(
            label: MetricsCatalog.streamInterruptions.name,
            dimensions: [("plugin", plugin), ("reason", error.code.rawValue)], factory: factory
        ).increment()
    }
}
