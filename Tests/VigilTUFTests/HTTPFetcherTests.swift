import NIOCore
import NIOPosix
import Testing
import VigilTUF
import VigilTUFHTTP

/// A loopback HTTP server whose answers a test chooses by path: a file, 404, a Content-Length over
/// the cap, an endless body, a stall after the headers.
final class HostileServer: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: no stored state; each connection answers from the request line alone.
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static func start() async throws -> (any Channel, Int) {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(HostileServer())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return (channel, channel.localAddress?.port ?? 0)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let request = String(buffer: unwrapInboundIn(data))
        let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? ""
        func send(_ text: String, close: Bool = true) {
            let promise = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text)), promise: promise)
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            if close { promise.futureResult.whenComplete { _ in bound.value.close(promise: nil) } }
        }
        switch path {
        case "/file": send("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        case "/big": send("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        case "/endless":
            // No length: the body ends only when the server closes; it sends far more than the cap.
            send("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", close: false)
            for _ in 0..<64 { send(String(repeating: "x", count: 16_384), close: false) }
            send("")
        case "/stall": send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", close: false)
        default: send("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        }
    }
}

@Suite("TUF HTTP fetcher")
struct HTTPFetcherTests {
    @Test func capsStatusesAndStalls() async throws {
        let (server, port) = try await HostileServer.start()
        defer { server.close(promise: nil) }
        let base = "http://127.0.0.1:\(port)"
        let fetcher = HTTPFetcher(stallTimeout: .seconds(2), deadline: .seconds(20))
        #expect(try await fetcher.fetch(base + "/file", maxLength: 5) == Array("hello".utf8))
        #expect(await tufErrorCode { _ = try await fetcher.fetch(base + "/file", maxLength: 4) } == .tooLarge)
        #expect(await tufErrorCode { _ = try await fetcher.fetch(base + "/missing", maxLength: 100) } == .notFound)
        #expect(await tufErrorCode { _ = try await fetcher.fetch(base + "/big", maxLength: 1_000) } == .tooLarge)
        #expect(await tufErrorCode { _ = try await fetcher.fetch(base + "/endless", maxLength: 50_000) } == .tooLarge)
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await tufErrorCode { _ = try await fetcher.fetch(base + "/stall", maxLength: 100) } == .tooSlow)
        #expect(clock.now - start < .seconds(15))  // ended by the stall timeout, not the 20 s deadline
    }

    @Test func refusesURLsItCannotFetchSafely() async {
        let fetcher = HTTPFetcher()
        for url in [
            "file:///x", "ftp://x/y", "https://[::1/x", "http://user@host/x", "http://host:99999/x", "http://h/a b",
        ] {
            #expect(await tufErrorCode { _ = try await fetcher.fetch(url, maxLength: 1) } == .invalidURL, "\(url)")
        }
    }
}
