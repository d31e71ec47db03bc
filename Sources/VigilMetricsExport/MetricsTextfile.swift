public import Logging
public import ServiceLifecycle
import VigilBase

/// Keeps a node_exporter textfile (`[metrics] textfile`) up to date: written atomically (a
/// temporary file in the same directory, renamed over it: ``AtomicFile``), only when the
/// exposition changed, at most once per ``minimumInterval``, without timestamps. Between changes
/// it waits on ``PrometheusExport/changes`` without a timer, so an idle host wakes for nothing.
public struct MetricsTextfile: Service {
    let path: String
    let export: PrometheusExport
    let minimumInterval: Duration
    let logger: Logger
    let onWrite: (@Sendable () -> Void)?

    /// The writer of `path` from `export`'s registry; `onWrite` is called after each write.
    public init(
        path: String, export: PrometheusExport, minimumInterval: Duration = .seconds(5), logger: Logger,
        onWrite: (@Sendable () -> Void)? = nil
    ) {
        self.path = path
        self.export = export
        self.minimumInterval = minimumInterval
        self.logger = logger
        self.onWrite = onWrite
    }

    public func run() async throws {
        var written: [UInt8]?
        write(&written)
        for await _ in export.changes.cancelOnGracefulShutdown() {
            write(&written)
            // At most one write per interval: changes meanwhile are coalesced into the next one.
            try? await Task.sleep(for: minimumInterval)
        }
        // The host's last states (it stops before this service: see `MetricsExporter.services`).
        write(&written)
    }

    /// Writes the exposition when it differs from `written`; a failure is logged and retried with
    /// the next change.
    private func write(_ written: inout [UInt8]?) {
        let bytes = export.render()
        guard bytes != written else { return }
        do {
            try AtomicFile.write(bytes, to: path, mode: 0o644, durable: false)
            written = bytes
            onWrite?()
        } catch {
            logger.warning(
                "could not write the metrics textfile", metadata: ["metrics.textfile": "\(path)", "error": "\(error)"])
        }
    }
}
