public import CoreMetrics
public import Prometheus
import VigilMetrics

/// A swift-metrics factory over a swift-prometheus registry, for a host that exports its metrics
/// (`vigil up` with `[metrics]` on): every Vigil metric gets its `# HELP` from ``MetricsCatalog``,
/// and every update is signalled on ``changes`` (coalesced), so that the textfile is rewritten only
/// after something changed and an idle host wakes for nothing.
public final class PrometheusExport: MetricsFactory, Sendable {
    /// The registry rendered on `/metrics` and into the textfile.
    public let registry: PrometheusCollectorRegistry
    /// Yields after updates; the latest one wins. Iterate it once (the textfile writer does).
    public let changes: AsyncStream<Void>
    private let changed: AsyncStream<Void>.Continuation
    /// The buckets of duration histograms (seconds).
    static let durationBuckets: [Duration] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60].map {
        .milliseconds($0 * 1000)
    }
    /// The buckets of value histograms.
    static let valueBuckets: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// Creates an export with an empty registry of its own (never the process-wide default).
    public init() {
        registry = PrometheusCollectorRegistry()
        (changes, changed) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    deinit { changed.finish() }

    /// The text exposition format (version 0.0.4) of every registered metric; no timestamps.
    public func render() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }

    /// The name with its `# HELP` text from ``MetricsCatalog`` (the full name is `label`).
    private static func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(
            metricName: label, unitName: "",
            helpText: MetricsCatalog.description(named: label)?.help ?? "Recorded through the host's metrics factory.")
    }

    /// Wakes the textfile writer as an update would (its path changed).
    func signalChange() { changed.yield() }

    private var signal: @Sendable () -> Void {
        let changed = self.changed
        return { changed.yield() }
    }

    // MARK: MetricsFactory

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        SignallingCounter(registry.makeCounter(descriptor: Self.descriptor(label), labels: dimensions), signal)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)])
        -> any FloatingPointCounterHandler
    {
        SignallingCounter(registry.makeCounter(descriptor: Self.descriptor(label), labels: dimensions), signal)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        SignallingGauge(registry.makeGauge(descriptor: Self.descriptor(label), labels: dimensions), signal)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else {
            return SignallingGauge(registry.makeGauge(descriptor: Self.descriptor(label), labels: dimensions), signal)
        }
        return SignallingValueHistogram(
            registry.makeValueHistogram(
                descriptor: Self.descriptor(label), labels: dimensions, buckets: Self.valueBuckets), signal)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        SignallingTimer(
            registry.makeDurationHistogram(
                descriptor: Self.descriptor(label), labels: dimensions, buckets: Self.durationBuckets), signal)
    }

    public func destroyCounter(_ handler: any CounterHandler) {
        if let handler = handler as? SignallingCounter { registry.unregisterCounter(handler.counter) }
    }

    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let handler = handler as? SignallingCounter { registry.unregisterCounter(handler.counter) }
    }

    public func destroyMeter(_ handler: any MeterHandler) {
        if let handler = handler as? SignallingGauge { registry.unregisterGauge(handler.gauge) }
    }

    public func destroyRecorder(_ handler: any RecorderHandler) {
        if let handler = handler as? SignallingGauge { registry.unregisterGauge(handler.gauge) }
        if let handler = handler as? SignallingValueHistogram { registry.unregisterValueHistogram(handler.histogram) }
    }

    public func destroyTimer(_ handler: any TimerHandler) {
        if let handler = handler as? SignallingTimer { registry.unregisterDurationHistogram(handler.histogram) }
    }
}

// MARK: - Handlers that signal each update

private final class SignallingCounter: CounterHandler, FloatingPointCounterHandler {
    let counter: Prometheus.Counter
    let changed: @Sendable () -> Void
    init(_ counter: Prometheus.Counter, _ changed: @escaping @Sendable () -> Void) {
        self.counter = counter
        self.changed = changed
    }
    func increment(by amount: Int64) {
        counter.increment(by: amount)
        changed()
    }
    func increment(by amount: Double) {
        counter.increment(by: amount)
        changed()
    }
    func reset() {
        counter.reset()
        changed()
    }
}

private final class SignallingGauge: RecorderHandler, MeterHandler {
    let gauge: Prometheus.Gauge
    let changed: @Sendable () -> Void
    init(_ gauge: Prometheus.Gauge, _ changed: @escaping @Sendable () -> Void) {
        self.gauge = gauge
        self.changed = changed
    }
    func record(_ value: Int64) { set(Double(value)) }
    func record(_ value: Double) { set(value) }
    func set(_ value: Int64) { set(Double(value)) }
    func set(_ value: Double) {
        gauge.set(to: value)
        changed()
    }
    func increment(by amount: Double) {
        gauge.increment(by: amount)
        changed()
    }
    func decrement(by amount: Double) {
        gauge.decrement(by: amount)
        changed()
    }
}

private final class SignallingValueHistogram: RecorderHandler {
    let histogram: ValueHistogram
    let changed: @Sendable () -> Void
    init(_ histogram: ValueHistogram, _ changed: @escaping @Sendable () -> Void) {
        self.histogram = histogram
        self.changed = changed
    }
    func record(_ value: Int64) { record(Double(value)) }
    func record(_ value: Double) {
        histogram.record(value)
        changed()
    }
}

private final class SignallingTimer: TimerHandler {
    let histogram: DurationHistogram
    let changed: @Sendable () -> Void
    init(_ histogram: DurationHistogram, _ changed: @escaping @Sendable () -> Void) {
        self.histogram = histogram
        self.changed = changed
    }
    func recordNanoseconds(_ duration: Int64) {
        histogram.recordNanoseconds(duration)
        changed()
    }
}
