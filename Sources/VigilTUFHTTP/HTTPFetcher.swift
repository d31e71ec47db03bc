import NIOConcurrencyHelpers
public import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
public import VigilTUF

/// A ``TUFFetcher`` over HTTP/1.1 (swift-nio), plain or TLS (swift-nio-ssl): one connection per
/// file, a connect timeout, a stall timeout (no byte for `stallTimeout`), a minimum rate (fewer than
/// `minimumRate` bytes per second over any `rateWindow` once the server has started to answer)
/// and a whole-transfer deadline, and the body cut off at the cap while it streams (endless-data
/// attack). TUF verifies every byte it receives, so the transport carries no trust; TLS keeps a
/// network observer from learning which plugins a box installs and lets a private mirror check
/// who asks.
public struct HTTPFetcher: TUFFetcher {
    public var connectTimeout: TimeAmount
    public var stallTimeout: TimeAmount
    public var deadline: TimeAmount
    /// Bytes per second a transfer must average over each ``rateWindow`` (0: no minimum).
    public var minimumRate: Int
    public var rateWindow: TimeAmount
    let group: any EventLoopGroup
    let tls: TLSContextCache

    /// - Parameter caFile: PEM certificates that alone are trusted for `https://` mirrors (a
    ///   private CA); nil trusts the system's store.
    public init(
        connectTimeout: TimeAmount = .seconds(10), stallTimeout: TimeAmount = .seconds(30),
        deadline: TimeAmount = .seconds(300), minimumRate: Int = 1024, rateWindow: TimeAmount = .seconds(10),
        caFile: String? = nil, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.deadline = deadline
        self.minimumRate = minimumRate
        self.rateWindow = rateWindow
        self.group = group
        tls = TLSContextCache(caFile: caFile)
    }

    /// `http[s]://HOST[:PORT]/PATH` split into its parts.
    struct Target: Equatable {
        var host: String
        var port: Int
        var path: String
        var tls: Bool

        init(_ url: String) throws(TUFError) {
            func bad(_ why: String) -> TUFError {
                TUFError(
                    code: .invalidURL,
                    message: "\(JSONValue.string(url).canonicalText) \(why) — use http[s]://HOST[:PORT]/PATH")
            }
            let rest: Substring
            if url.hasPrefix("http://") {
                rest = url.dropFirst("http://".count)
                tls = false
            } else if url.hasPrefix("https://") {
                rest = url.dropFirst("https://".count)
                tls = true
            } else {
                throw bad("is not an http:// or https:// URL")
            }
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            let authority = rest[..<slash]
            path = slash == rest.endIndex ? "/" : String(rest[slash...])
            guard !path.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) else {
                throw bad("has spaces, control or non-ASCII characters in its path")
            }
            var hostPart = Substring(authority)
            var portPart: Substring?
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { throw bad("has an unterminated IPv6 address") }
                hostPart = authority[authority.index(after: authority.startIndex)..<close]
                let after = authority[authority.index(after: close)...]
                if after.hasPrefix(":") {
                    portPart = after.dropFirst()
                } else if !after.isEmpty {
                    throw bad("is malformed")
                }
            } else if let colon = authority.lastIndex(of: ":") {
                hostPart = authority[..<colon]
                portPart = authority[authority.index(after: colon)...]
            }
            guard !hostPart.isEmpty, !hostPart.contains("@") else { throw bad("has no host, or has user information") }
            host = String(hostPart)
            if let portPart {
                guard let p = Int(portPart), (1...65535).contains(p) else { throw bad("has an invalid port") }
                port = p
            } else {
                port = tls ? 443 : 80
            }
        }

        /// Whether the host is an IP literal (no SNI; the certificate is checked against the address).
        var isAddress: Bool { (try? SocketAddress(ipAddress: host, port: port)) != nil }
    }

    public func fetch(_ url: String, maxLength: Int) async throws(TUFError) -> [UInt8] {
        let target = try Target(url)
        let sslContext = target.tls ? try tls.context() : nil
        let promise = group.next().makePromise(of: [UInt8].self)
        let handler = ResponseCollector(url: url, maxLength: maxLength, promise: promise)
        let stall = stallTimeout
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let sslContext {
                        try sync.addHandler(
                            NIOSSLClientHandler(
                                context: sslContext, serverHostname: target.isAddress ? nil : target.host))
                    }
                    try sync.addHandler(IdleStateHandler(readTimeout: stall))
                    try sync.addHTTPClientHandlers()
                    try sync.addHandler(handler)
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: target.host, port: target.port).get()
        } catch {
            promise.fail(error)
            throw TUFError(
                code: .transport,
                message: "cannot connect to \(target.host):\(target.port) for \(url): \(error) — check the "
                    + "repository URL and that the server is up")
        }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target.path)
        let host = target.host.contains(":") ? "[\(target.host)]" : target.host  // an IPv6 literal
        let defaultPort = target.tls ? 443 : 80
        head.headers.add(name: "Host", value: target.port == defaultPort ? host : "\(host):\(target.port)")
        head.headers.add(name: "User-Agent", value: "vigil-tuf-client")
        head.headers.add(name: "Accept-Encoding", value: "identity")
        head.headers.add(name: "Connection", value: "close")
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        let loop = channel.eventLoop
        let timer = loop.scheduleTask(in: deadline) { handler.abort(.deadline) }
        let rate = minimumRate
        let window = rateWindow
        let rateCheck: RepeatedTask? =
            rate > 0
            ? loop.scheduleRepeatedTask(initialDelay: window, delay: window) { _ in
                handler.checkRate(minimumBytes: Int((Int64(rate) * window.nanoseconds) / 1_000_000_000))
            } : nil
        defer {
            timer.cancel()
            rateCheck?.cancel()
            channel.close(promise: nil)
        }
        do {
            return try await promise.futureResult.get()
        } catch let failure as FetchFailure {
            throw failure.error(url: url, maxLength: maxLength, limits: self)
        } catch {
            throw FetchFailure.classify(error).error(url: url, maxLength: maxLength, limits: self)
        }
    }
}

/// The TLS context of a fetcher, made once (loading a trust store is not free) on first use.
final class TLSContextCache: Sendable {
    let caFile: String?
    private let cached = NIOLockedValueBox<NIOSSLContext?>(nil)

    init(caFile: String?) {
        self.caFile = caFile
    }

    func context() throws(TUFError) -> NIOSSLContext {
        do {
            return try cached.withLockedValue { value in
                if let value { return value }
                var configuration = TLSConfiguration.makeClientConfiguration()
                if let caFile {
                    // The file's bytes, read by the one reader `vigil check` judges them with.
                    configuration.trustRoots = .certificates(try CACertificates.load(try CACertificates.read(caFile)))
                }
                let made = try NIOSSLContext(configuration: configuration)
                value = made
                return made
            }
        } catch {
            throw TUFError(
                code: .storage,
                message: "cannot load the CA file \(caFile.map { JSONValue.string($0).canonicalText } ?? "(system)"): "
                    + "\(error) — give a readable PEM file of the private CA's certificates")
        }
    }
}

enum FetchFailure: Error {
    case status(UInt)
    case tooLarge
    case dropped(String)
    case deadline
    case stalled
    case belowRate(received: Int, window: Int)
    case tls(String)
    case other(String)

    /// What a channel error means for the user.
    static func classify(_ error: any Error) -> FetchFailure {
        switch error {
        case let failure as FetchFailure: return failure
        case let ssl as NIOSSLError:
            if case .uncleanShutdown = ssl { return .dropped("the TLS connection was closed without a TLS close") }
            return .tls("\(ssl)")
        case let extra as NIOSSLExtraError: return .tls("\(extra)")
        case let io as IOError: return .dropped("\(io)")
        case let parser as HTTPParserError where parser == .invalidEOFState: return .dropped("\(parser)")
        default: return .other("\(error)")
        }
    }

    func error(url: String, maxLength: Int, limits: HTTPFetcher) -> TUFError {
        func seconds(_ t: TimeAmount) -> String {
            t.nanoseconds % 1_000_000_000 == 0
                ? "\(t.nanoseconds / 1_000_000_000) s" : "\(Double(t.nanoseconds) / 1e9) s"
        }
        switch self {
        case .status(let code) where code == 404 || code == 403:
            return TUFError(code: .notFound, message: "\(url) answered HTTP \(code): the repository has no such file")
        case .status(let code):
            return TUFError(
                code: .httpStatus,
                message: "\(url) answered HTTP \(code) — the server or mirror is failing; try again later")
        case .tooLarge:
            return TUFError(
                code: .tooLarge,
                message: "\(url) is longer than its cap of \(maxLength) bytes; the transfer was cut off there — an "
                    + "endless-data attack or a damaged mirror")
        case .dropped(let why):
            return TUFError(
                code: .connectionDropped,
                message: "\(url): the server dropped the connection before the whole file arrived (\(why)) — the "
                    + "mirror is failing or something on the path cuts connections; try again or use another mirror")
        case .deadline:
            return TUFError(
                code: .tooSlow,
                message: "\(url) did not finish within \(seconds(limits.deadline)) — a slow-retrieval attack or an "
                    + "overloaded mirror; try again or use another mirror")
        case .stalled:
            return TUFError(
                code: .tooSlow,
                message: "\(url) sent nothing for \(seconds(limits.stallTimeout)) — the transfer stalled (a "
                    + "slow-retrieval attack or an overloaded mirror); try again or use another mirror")
        case .belowRate(let received, let window):
            return TUFError(
                code: .tooSlow,
                message: "\(url) sent \(received) bytes in \(seconds(limits.rateWindow)), below the minimum of "
                    + "\(window) (\(limits.minimumRate) bytes/s) — a slow-retrieval attack or an overloaded "
                    + "mirror; try again or use another mirror")
        case .tls(let why):
            return TUFError(
                code: .tlsUntrusted,
                message: "\(url): the TLS handshake failed (\(why)) — the server's certificate is not signed by a "
                    + "trusted CA (the system's, or the repository's ca_file), names another host, or has expired")
        case .other(let why):
            return TUFError(
                code: .transport,
                message: "downloading \(url) failed: \(why) — the server does not answer HTTP as expected; try "
                    + "again, or another mirror")
        }
    }
}

/// Collects one response body up to the cap, counting it as it streams; fails on any status but
/// 200. Every member is touched only on the channel's event loop.
final class ResponseCollector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart

    let url: String
    let maxLength: Int
    let promise: EventLoopPromise<[UInt8]>
    var body: [UInt8] = []
    var status: UInt = 0
    var done = false
    var context: ChannelHandlerContext?
    /// Body bytes received since the last rate check; nil until the response starts.
    var receivedInWindow: Int?

    init(url: String, maxLength: Int, promise: EventLoopPromise<[UInt8]>) {
        self.url = url
        self.maxLength = maxLength
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func finish(_ result: Result<[UInt8], any Error>) {
        guard !done else { return }
        done = true
        promise.completeWith(result)
        context?.close(promise: nil)
    }

    /// Ends the transfer with `failure` (a timer's verdict); called on the event loop.
    func abort(_ failure: FetchFailure) {
        finish(.failure(failure))
    }

    /// Fails the transfer if fewer than `minimumBytes` arrived since the last check, once the
    /// response has started (the stall timeout covers a server that never answers).
    func checkRate(minimumBytes: Int) {
        guard let received = receivedInWindow else { return }
        if received < minimumBytes {
            return finish(.failure(FetchFailure.belowRate(received: received, window: minimumBytes)))
        }
        receivedInWindow = 0
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            receivedInWindow = receivedInWindow ?? 0
            status = head.status.code
            if status != 200 { return finish(.failure(FetchFailure.status(status))) }
            if let length = head.headers.first(name: "Content-Length").flatMap(Int.init), length > maxLength {
                return finish(.failure(FetchFailure.tooLarge))
            }
        case .body(var buffer):
            guard !done else { return }
            receivedInWindow = (receivedInWindow ?? 0) + buffer.readableBytes
            if body.count + buffer.readableBytes > maxLength { return finish(.failure(FetchFailure.tooLarge)) }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            finish(.success(body))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { finish(.failure(FetchFailure.stalled)) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(FetchFailure.dropped("the connection closed early")))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(FetchFailure.classify(error)))
    }
}
