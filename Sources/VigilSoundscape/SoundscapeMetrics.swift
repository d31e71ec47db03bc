import CoreMetrics
import VigilMetrics

/// The soundscape's metrics (docs/metrics.md): whether it is audible and its volume, recorded from
/// the controller's changes (no poll) through the plugin context's factory.
struct SoundscapeMetrics: Sendable {
    let factory: any MetricsFactory
    let plugin: String

    /// Records `state`: playing (not paused, asleep, stopped or corked by the server) and the volume.
    func record(_ state: SoundscapeState) {
        let audible = state.playback == .playing && !state.interrupted
        gauge(MetricsCatalog.soundscapePlaying).record(audible ? 1 : 0)
        gauge(MetricsCatalog.soundscapeVolume).record(state.volume)
    }

    /// The plugin stopped: nothing plays.
    func stopped() {
        gauge(MetricsCatalog.soundscapePlaying).record(0)
    }

    private func gauge(_ metric: MetricDescription) -> Gauge {
        Gauge(label: metric.name, dimensions: [("plugin", plugin)], factory: factory)
    }
}
