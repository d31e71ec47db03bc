public import Logging
public import ServiceLifecycle
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Keeps a node_exporter textfile (`[metrics] textfile`) up to date: written atomically (a
/// temporary file in the same directory, renamed over it: ``AtomicFile``), only when the
/// exposition changed, at most once per ``minimumInterval``, without timestamps. Between changes
/// it waits on ``PrometheusExport/changes`` without a timer, so an idle host wakes for nothing.
public struct MetricsTextfile: Service {
    let target: TextfileTarget
    let export: PrometheusExport
    let minimumInterval: Duration
    let logger: Logger
    let onWrite: (@Sendable () -> Void)?

    /// The writer of `path` from `export`'s registry; `onWrite` is called after each write.
    public init(
        path: String, export: PrometheusExport, minimumInterval: Duration = .seconds(5), logger: Logger,
        onWrite: (@Sendable () -> Void)? = nil
    ) {
        self.init(
            target: TextfileTarget(path), export: export, minimumInterval: minimumInterval, logger: logger,
            onWrite: onWrite)
    }

    /// The writer of whatever path `target` names when it writes (``MetricsEndpoints`` moves it).
    init(
        target: TextfileTarget, export: PrometheusExport, minimumInterval: Duration = .seconds(5), logger: Logger,
        onWrite: (@Sendable () -> Void)? = nil
    ) {
        self.target = target
        self.export = export
        self.minimumInterval = minimumInterval
        self.logger = logger
        self.onWrite = onWrite
    }

    public func run() async throws {
        var written: Written?
        write(&written)
        // Each iterated by this task alone, and ended only by the shutdown.
        var changes = export.changes.cancelOnGracefulShutdown().makeAsyncIterator()
        var moves = target.moves.cancelOnGracefulShutdown().makeAsyncIterator()
        while true {
            if target.path == nil {
                // No file to keep (`[metrics]` without `textfile`): wait for one, not for every
                // change of a value, so a host that writes no textfile wakes for nothing here.
                guard await moves.next() != nil else { break }
            } else {
                guard await changes.next() != nil else { break }
            }
            write(&written)
            // At most one write per interval: changes meanwhile are coalesced into the next one.
            // A graceful shutdown ends the wait (the last write follows at once).
            guard target.path != nil else { continue }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: minimumInterval) }
        }
        // The host's last states (it stops before this service: see `MetricsExporter.services`).
        write(&written)
    }

    /// What was written last, and where.
    struct Written {
        var path: String
        var bytes: [UInt8]
    }

    /// Writes the exposition to the target's path when it or the path differs from `written`; a
    /// failure is logged and retried with the next change. When the target moved (or was turned
    /// off), the file written before is removed: node_exporter would otherwise go on collecting
    /// its stale values, and refuses the same series from two files.
    private func write(_ written: inout Written?) {
        let path = target.path
        if let old = written?.path, old != path {
            if unlink(old) != 0, errno != ENOENT {
                logger.warning(
                    "could not remove the previous metrics textfile",
                    metadata: ["metrics.textfile": "\(old)", "error": "\(String(cString: strerror(errno)))"])
            }
            written = nil
        }
        guard let path else { return }
        let bytes = export.render()
        guard bytes != written?.bytes else { return }
        do {
            try AtomicFile.write(bytes, to: path, mode: 0o644, durable: false)
            written = Written(path: path, bytes: bytes)
            onWrite?()
        } catch {
            logger.warning(
                "could not write the metrics textfile", metadata: ["metrics.textfile": "\(path)", "error": "\(error)"])
        }
    }
}

/// The textfile path a ``MetricsTextfile`` writes (`nil`: none), changed by a reload; each change
/// yields on ``moves``.
final class TextfileTarget: Sendable {
    private let value: Mutex<String?>
    let moves: AsyncStream<Void>
    private let moved: AsyncStream<Void>.Continuation

    init(_ path: String?) {
        value = Mutex(path)
        (moves, moved) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    deinit { moved.finish() }

    var path: String? { value.withLock { $0 } }

    func set(_ path: String?) {
        value.withLock { $0 = path }
        moved.yield()
    }
}
