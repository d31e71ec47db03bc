public import Logging
import NIOCore
public import ServiceLifecycle
public import Vigil
public import VigilMetrics

#if canImport(Glibc)
import Glibc
#endif

/// Both ways out of `[metrics]` for a host that reloads: the textfile writer and the HTTP
/// endpoints (``MetricsTextfile`` and ``MetricsServer`` as one service), moved to a reload's new
/// settings through ``Reconfiguration``. The registry stays the same, so counters keep their
/// values. A new `listen` address is bound before the old one is closed: when it cannot be bound,
/// the change is refused (`metrics-listen-failed`) and the old address keeps serving. A new
/// `textfile` is written at the writer's next write (within its interval) and the old file is
/// removed. Put it BEFORE the host in a `ServiceGroup`, as ``MetricsExporter/services(settings:export:host:logger:)``'s.
public struct MetricsEndpoints: Service {
    /// The way a host's reload reaches the running endpoints: made before the host (its
    /// ``VigilHost/Options/applyMetricsSettings`` calls ``apply(_:)``), handed to the endpoints.
    public struct Reconfiguration: Sendable {
        /// How long ``apply(_:)`` waits for the endpoints' answer.
        public static let deadline: Duration = .seconds(10)

        struct Request: Sendable {
            let settings: MetricsSettings
            let answer: AsyncStream<Result<Void, MetricsExportError>>.Continuation
        }

        let requests: AsyncStream<Request>
        private let continuation: AsyncStream<Request>.Continuation

        /// A channel no endpoints read yet.
        public init() {
            (requests, continuation) = AsyncStream.makeStream(of: Request.self)
        }

        /// Moves the running endpoints to `settings`; returns once they serve them.
        /// - Throws: ``MetricsExportError``: `metrics-listen-failed` when the new `listen` cannot
        ///   be bound (the old one keeps serving, nothing changed), `metrics-not-running` when no
        ///   endpoints run or they did not answer within ``deadline``.
        public func apply(_ settings: MetricsSettings) async throws(MetricsExportError) {
            let (answers, answer) = AsyncStream.makeStream(
                of: Result<Void, MetricsExportError>.self, bufferingPolicy: .bufferingNewest(1))
            let notRunning = MetricsExportError(
                code: .notRunning,
                message: "the metrics endpoints do not run, or did not answer within \(Self.deadline), so the new "
                    + "[metrics] was not applied — restart the host to apply it")
            if case .terminated = continuation.yield(Request(settings: settings, answer: answer)) { throw notRunning }
            let result = await withTaskGroup(of: Result<Void, MetricsExportError>?.self) { group in
                group.addTask {
                    for await result in answers { return result }
                    return nil
                }
                group.addTask {
                    try? await Task.sleep(for: Self.deadline)
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            guard let result else { throw notRunning }
            try result.get()
        }

        /// No endpoints will read this channel any more: requests fail at once.
        func finish() { continuation.finish() }
    }

    let settings: MetricsSettings
    let export: PrometheusExport
    let host: VigilHost
    let reconfiguration: Reconfiguration
    let logger: Logger

    /// The endpoints of `settings` (either way out may be off) for `host`'s metrics in `export`,
    /// moved by the requests of `reconfiguration`.
    public init(
        settings: MetricsSettings, export: PrometheusExport, host: VigilHost, reconfiguration: Reconfiguration,
        logger: Logger
    ) {
        self.settings = settings
        self.export = export
        self.host = host
        self.reconfiguration = reconfiguration
        self.logger = logger
    }

    /// - Throws: ``MetricsExportError`` `metrics-listen-failed` when the first `listen` cannot be
    ///   bound (`vigil up` exits 69 then).
    public func run() async throws {
        defer { reconfiguration.finish() }
        let board = PluginBoard()
        let events = host.events  // subscribe before the first status, so no change is missed
        board.update(await host.status().plugins.map { ($0.name, $0.state) })
        let probe = HealthProbe()
        var server: ServerChannel?
        if let address = settings.listen {
            server = try await ServerChannel.bind(address, export: export, board: board, probe: probe, logger: logger)
        }
        let target = TextfileTarget(settings.textfile)
        await withTaskGroup(of: Void.self) { tasks in
            let (host, export, logger) = (self.host, self.export, self.logger)
            tasks.addTask {
                for await event in events.cancelOnGracefulShutdown() { board.update([(event.plugin, event.state)]) }
            }
            tasks.addTask { await probe.answer(from: host) }
            tasks.addTask { try? await MetricsTextfile(target: target, export: export, logger: logger).run() }
            if let server { tasks.addTask { await server.serve() } }
            var current = settings
            for await request in reconfiguration.requests.cancelOnGracefulShutdown() {
                let result = await move(
                    from: current, to: request.settings, server: &server, board: board, probe: probe
                ) { next in
                    tasks.addTask { await next.serve() }
                }
                if case .success = result {
                    if request.settings.textfile != current.textfile {
                        target.set(request.settings.textfile)
                        export.signalChange()
                    }
                    current = request.settings
                }
                request.answer.yield(result)
            }
            server?.channel.close(promise: nil)
            await tasks.waitForAll()
        }
    }

    /// Moves the HTTP endpoints from `old`'s `listen` to `new`'s: the new address bound (and
    /// `serve` called with it) before the old one is closed; nothing changed when it cannot be.
    private func move(
        from old: MetricsSettings, to new: MetricsSettings, server: inout ServerChannel?, board: PluginBoard,
        probe: HealthProbe, serve: (ServerChannel) -> Void
    ) async -> Result<Void, MetricsExportError> {
        guard new.listen != old.listen else { return .success(()) }
        let previous = server
        if let address = new.listen {
            do throws(MetricsExportError) {
                let next = try await ServerChannel.bind(
                    address, export: export, board: board, probe: probe, logger: logger)
                serve(next)
                server = next
            } catch {
                logger.error("\(error.message)", metadata: ["metrics.listen": "\(address)"])
                return .failure(error)
            }
        } else {
            server = nil
        }
        if let previous {
            previous.channel.close(promise: nil)
            if case .unix(let path) = previous.address { unlink(path) }
            logger.info("no longer serving metrics", metadata: ["metrics.listen": "\(previous.address)"])
        }
        return .success(())
    }
}
