public import NIOCore
import NIOHTTP1
import NIOPosix
public import VigilTUF

/// A ``TUFFetcher`` over plain HTTP/1.1 (swift-nio): one connection per file, a connect timeout,
/// a stall timeout (no byte for `stallTimeout`) and a whole-transfer deadline, and the body cut off
/// at the cap (endless-data attack). TUF verifies every byte it receives, so the transport carries
/// no trust; `https://` is not supported (it is refused with ``TUFErrorCode/invalidURL``).
public struct HTTPFetcher: TUFFetcher {
    public var connectTimeout: TimeAmount
    public var stallTimeout: TimeAmount
    public var deadline: TimeAmount
    let group: any EventLoopGroup

    public init(
        connectTimeout: TimeAmount = .seconds(10), stallTimeout: TimeAmount = .seconds(30),
        deadline: TimeAmount = .seconds(300), group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.deadline = deadline
        self.group = group
    }

    /// `http://HOST[:PORT]/PATH` split into its parts.
    struct Target: Equatable {
        var host: String
        var port: Int
        var path: String

        init(_ url: String) throws(TUFError) {
            func bad(_ why: String) -> TUFError {
                TUFError(
                    code: .invalidURL,
                    message: "\(JSONValue.string(url).canonicalText) \(why) — use http://HOST[:PORT]/PATH")
            }
            guard url.hasPrefix("http://") else { throw bad("is not an http:// URL") }
            let rest = url.dropFirst("http://".count)
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
                port = 80
            }
        }
    }

    public func fetch(_ url: String, maxLength: Int) async throws(TUFError) -> [UInt8] {
        let target = try Target(url)
        let promise = group.next().makePromise(of: [UInt8].self)
        let handler = ResponseCollector(url: url, maxLength: maxLength, promise: promise)
        let stall = stallTimeout
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: stall))
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(handler)
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
        head.headers.add(name: "Host", value: target.port == 80 ? host : "\(host):\(target.port)")
        head.headers.add(name: "User-Agent", value: "vigil-tuf-client")
        head.headers.add(name: "Accept-Encoding", value: "identity")
        head.headers.add(name: "Connection", value: "close")
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        let timer = channel.eventLoop.scheduleTask(in: deadline) {
            promise.fail(FetchFailure.deadline)
            channel.close(promise: nil)
        }
        defer {
            timer.cancel()
            channel.close(promise: nil)
        }
        do {
            return try await promise.futureResult.get()
        } catch let failure as FetchFailure {
            throw failure.error(url: url, maxLength: maxLength, deadline: deadline, stall: stall)
        } catch {
            throw TUFError(
                code: .transport,
                message: "downloading \(url) failed: \(error) — the connection broke; try again, or another mirror")
        }
    }
}

enum FetchFailure: Error {
    case status(UInt)
    case tooLarge
    case truncated
    case deadline
    case stalled

    func error(url: String, maxLength: Int, deadline: TimeAmount, stall: TimeAmount) -> TUFError {
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
                message: "\(url) is longer than its cap of \(maxLength) bytes; the transfer was cut off — an "
                    + "endless-data attack or a damaged mirror")
        case .truncated:
            return TUFError(code: .transport, message: "\(url) ended before its Content-Length: the transfer broke")
        case .deadline:
            return TUFError(
                code: .transport,
                message: "\(url) did not finish within \(deadline.nanoseconds / 1_000_000_000) s — a slow-retrieval "
                    + "attack or an overloaded mirror; try again or use another mirror")
        case .stalled:
            return TUFError(
                code: .transport,
                message: "\(url) sent nothing for \(stall.nanoseconds / 1_000_000_000) s — the transfer stalled")
        }
    }
}

/// Collects one response body up to the cap; fails on any status but 200.
final class ResponseCollector: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: every member is touched only on the channel's event loop.
    typealias InboundIn = HTTPClientResponsePart

    let url: String
    let maxLength: Int
    let promise: EventLoopPromise<[UInt8]>
    var body: [UInt8] = []
    var status: UInt = 0
    var done = false

    init(url: String, maxLength: Int, promise: EventLoopPromise<[UInt8]>) {
        self.url = url
        self.maxLength = maxLength
        self.promise = promise
    }

    func finish(_ result: Result<[UInt8], any Error>, _ context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        promise.completeWith(result)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = head.status.code
            if status != 200 { return finish(.failure(FetchFailure.status(status)), context) }
            if let length = head.headers.first(name: "Content-Length").flatMap(Int.init), length > maxLength {
                return finish(.failure(FetchFailure.tooLarge), context)
            }
        case .body(var buffer):
            guard !done else { return }
            if body.count + buffer.readableBytes > maxLength { return finish(.failure(FetchFailure.tooLarge), context) }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            finish(.success(body), context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { finish(.failure(FetchFailure.stalled), context) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(FetchFailure.truncated), context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error), context)
    }
}
