public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
public import ServiceLifecycle
import Synchronization
public import Vigil
public import VigilBase
public import VigilMetrics

/// Serves `/metrics` (the Prometheus text format), `/healthz` (the host answers and runs: asked
/// each time, within ``healthDeadline``) and `/readyz` (every activated plugin is running) over
/// HTTP/1.1 (swift-nio) on one event-loop thread of its own, which sleeps in `epoll_wait` without a
/// timeout between requests. Binds when `run()` starts; stops on graceful shutdown or cancellation.
public struct MetricsServer: Service {
    /// How long `/healthz` waits for the host's answer before it says `503`.
    public static let healthDeadline: TimeAmount = .seconds(1)

    let address: MetricsListenAddress
    let export: PrometheusExport
    let host: VigilHost
    let logger: Logger

    /// A server for `host`'s metrics in `export`, listening at `address`.
    public init(address: MetricsListenAddress, export: PrometheusExport, host: VigilHost, logger: Logger) {
        self.address = address
        self.export = export
        self.host = host
        self.logger = logger
    }

    public func run() async throws {
        let board = PluginBoard()
        let events = host.events  // subscribe before the first status, so no change is missed
        board.update(await host.status().plugins.map { ($0.name, $0.state) })
        let probe = HealthProbe()
        let server = try await ServerChannel.bind(
            address, export: export, board: board, probe: probe, logger: logger)
        await withTaskGroup(of: Void.self) { tasks in
            let host = self.host
            tasks.addTask {
                for await event in events.cancelOnGracefulShutdown() { board.update([(event.plugin, event.state)]) }
            }
            tasks.addTask { await probe.answer(from: host) }
            tasks.addTask { await server.serve() }
            await tasks.next()
            tasks.cancelAll()
        }
    }
}

/// One listening channel of the endpoints, on an event-loop thread of its own, answering with one
/// board and probe (``MetricsServer`` serves one; ``MetricsEndpoints`` moves from one to the next
/// on a reload).
struct ServerChannel: Sendable {
    let address: MetricsListenAddress
    let channel: any Channel
    let group: MultiThreadedEventLoopGroup

    /// Listens at `address`.
    /// - Throws: ``MetricsExportError`` `metrics-listen-failed` when it cannot be bound; nothing
    ///   is left running then.
    static func bind(
        _ address: MetricsListenAddress, export: PrometheusExport, board: PluginBoard, probe: HealthProbe,
        logger: Logger
    ) async throws(MetricsExportError) -> ServerChannel {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        MetricsHandler(export: export, board: board, probe: probe))
                }
            }
        do {
            let channel: any Channel
            switch address {
            case .inet(let host, let port): channel = try await bootstrap.bind(host: host, port: port).get()
            case .unix(let path):
                channel = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
            }
            logger.info("serving /metrics, /healthz and /readyz", metadata: ["metrics.listen": "\(address)"])
            return ServerChannel(address: address, channel: channel, group: group)
        } catch {
            try? await group.shutdownGracefully()
            throw MetricsExportError(
                code: .listenFailed,
                message: "cannot serve metrics at \(address): \(error) — free that address or choose another "
                    + "`listen` in [metrics] of vigil.toml")
        }
    }

    /// Serves until the channel is closed, graceful shutdown or cancellation; then closes it and
    /// ends its thread.
    func serve() async {
        let channel = self.channel
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                try? await channel.closeFuture.get()
            } onCancel: {
                channel.close(promise: nil)
            }
        } onGracefulShutdown: {
            channel.close(promise: nil)
        }
        try? await group.shutdownGracefully()
    }
}

/// `/healthz`'s questions to the host: each request waits for the answer of a host check that
/// starts after it (one at a time: requests during a check share the next one), or for
/// ``MetricsServer/healthDeadline``, whichever comes first.
final class HealthProbe: Sendable {
    enum Health: Sendable {
        case alive, stopped, noAnswer
    }

    private struct Waiting: ~Copyable {
        var next: UInt64 = 0
        var promises: [UInt64: EventLoopPromise<Health>] = [:]
    }

    private let waiting = Mutex(Waiting())
    private let asks: AsyncStream<Void>
    private let ask: AsyncStream<Void>.Continuation

    init() {
        (asks, ask) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The host's health, within the deadline.
    func health(on eventLoop: any EventLoop) -> EventLoopFuture<Health> {
        let promise = eventLoop.makePromise(of: Health.self)
        let id = waiting.withLock { waiting in
            defer { waiting.next += 1 }
            waiting.promises[waiting.next] = promise
            return waiting.next
        }
        ask.yield()
        // The deadline; an event loop shutting down cancels it, and the request is answered then.
        eventLoop.scheduleTask(in: MetricsServer.healthDeadline) { [self] in finish([id], .noAnswer) }
            .futureResult.whenFailure { [self] _ in finish([id], .noAnswer) }
        return promise.futureResult
    }

    /// Checks the host for the waiting requests, one check at a time, until graceful shutdown.
    func answer(from host: VigilHost) async {
        for await _ in asks.cancelOnGracefulShutdown() {
            let ids = waiting.withLock { Array($0.promises.keys) }
            finish(ids, await host.isAlive() ? .alive : .stopped)
        }
        finish(waiting.withLock { Array($0.promises.keys) }, .noAnswer)
    }

    /// Answers the requests of `ids` still waiting (the first answer wins).
    private func finish(_ ids: [UInt64], _ health: Health) {
        let promises = waiting.withLock { waiting in ids.compactMap { waiting.promises.removeValue(forKey: $0) } }
        for promise in promises { promise.succeed(health) }
    }
}

/// The plugins' latest states, kept from the host's events for `/readyz`.
final class PluginBoard: Sendable {
    private let states = Mutex<[(name: String, state: PluginState)]>([])

    func update(_ changes: [(String, PluginState)]) {
        states.withLock { states in
            for (name, state) in changes {
                if let index = states.firstIndex(where: { $0.name == name }) {
                    states[index].state = state
                } else {
                    states.append((name, state))
                }
            }
        }
    }

    /// The plugins that are not running, as `NAME: STATE` lines (empty: ready).
    var notRunning: [String] {
        states.withLock { $0.filter { $0.state != .running }.map { "\($0.name): \($0.state.name)" } }
    }
}

/// Answers one request at a time on a connection (keep-alive as the client asks).
private final class MetricsHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let export: PrometheusExport
    let board: PluginBoard
    let probe: HealthProbe
    private var request: HTTPRequestHead?

    init(export: PrometheusExport, board: PluginBoard, probe: HealthProbe) {
        self.export = export
        self.board = board
        self.probe = probe
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request = head
        case .body: break
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        let (status, contentType, body): (HTTPResponseStatus, String, [UInt8])
        if head.method != .GET && head.method != .HEAD {
            (status, contentType, body) = (
                .methodNotAllowed, "text/plain; charset=utf-8", Array("GET or HEAD only\n".utf8)
            )
        } else {
            switch path {
            case "/metrics":
                (status, contentType, body) = (.ok, "text/plain; version=0.0.4; charset=utf-8", export.render())
            case "/healthz":
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                probe.health(on: context.eventLoop).whenSuccess { health in
                    let (handler, context) = bound.value
                    let (status, text): (HTTPResponseStatus, String) =
                        switch health {
                        case .alive: (.ok, "ok\n")
                        case .stopped: (.serviceUnavailable, "not alive: the host is stopped\n")
                        case .noAnswer: (.serviceUnavailable, "not alive: the host did not answer within 1 s\n")
                        }
                    handler.send(status, "text/plain; charset=utf-8", Array(text.utf8), to: head, context: context)
                }
                return
            case "/readyz":
                let waiting = board.notRunning
                (status, contentType, body) =
                    waiting.isEmpty
                    ? (.ok, "text/plain; charset=utf-8", Array("ready\n".utf8))
                    : (
                        .serviceUnavailable, "text/plain; charset=utf-8",
                        Array(("not ready\n" + waiting.joined(separator: "\n") + "\n").utf8)
                    )
            default:
                (status, contentType, body) = (
                    .notFound, "text/plain; charset=utf-8", Array("not found: try /metrics, /healthz or /readyz\n".utf8)
                )
            }
        }
        send(status, contentType, body, to: head, context: context)
    }

    /// Writes the response to `head`.
    private func send(
        _ status: HTTPResponseStatus, _ contentType: String, _ body: [UInt8], to head: HTTPRequestHead,
        context: ChannelHandlerContext
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: String(body.count))
        let keepAlive = head.isKeepAlive
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
            promise: nil)
        if head.method != .HEAD {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        if keepAlive {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

/// The kind of a ``MetricsExportError``.
public enum MetricsExportErrorCode: String, ErrorCode {
    /// The `listen` address of `[metrics]` could not be bound (in use, no such address, no permission).
    case listenFailed = "metrics-listen-failed"
    /// A reload's new `[metrics]` reached no running ``MetricsEndpoints`` (none runs, or they did
    /// not answer within ``MetricsEndpoints/Reconfiguration/deadline``).
    case notRunning = "metrics-not-running"
}

/// A failure of the metrics endpoints.
public typealias MetricsExportError = CodedError<MetricsExportErrorCode>
