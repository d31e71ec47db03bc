import FoundationEssentials
import Logging
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// A request on a host's control channel (one JSON line), what `vigil reload` sends.
public struct HostControlRequest: Sendable, Hashable, Codable {
    /// `reload` (the only command).
    public var command: String

    public init(command: String) { self.command = command }

    /// Every command the channel understands.
    public static let commands = ["reload"]
}

/// The answer to a ``HostControlRequest`` (one JSON line).
public struct HostControlResponse: Sendable, Hashable, Codable {
    /// Why a request was not carried out.
    public struct Failure: Sendable, Hashable, Codable {
        /// A ``VigilError/Code`` value (`reload-refused`…), or `control-channel`, `busy`.
        public var code: String
        public var message: String

        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    public var ok: Bool
    /// For `reload`: what changed.
    public var reload: ReloadReport?
    public var error: Failure?

    public init(ok: Bool, reload: ReloadReport? = nil, error: Failure? = nil) {
        self.ok = ok
        self.reload = reload
        self.error = error
    }

    /// The answer line (newline included).
    var line: [UInt8] {
        let data = (try? JSONEncoder().encode(self)) ?? Data(#"{"ok":false}"#.utf8)
        return Array(data) + [UInt8(ascii: "\n")]
    }
}

/// The host's control channel: `control-PID.sock` in the runtime directory, beside the host's
/// status file (the directory 0700, the socket 0600, and every connection's peer checked to be
/// this user). One request line in, one answer line out, the answer sent when the host has
/// carried the request out (a reload's answer comes once the host settled on the new plugins).
/// It serves while the host is up (between `keepAlive()` and `stop()`), on a ``PollLoop`` of its own.
final class HostControlChannel: Sendable {
    let path: String
    private let loop: PollLoop

    /// The most connections served at once; one more is told that the host is busy.
    static let maxConnections = 4
    /// How long a client may take to send its request line after connecting.
    static let requestDeadlineSeconds = 2.0
    /// The longest request line read, in bytes.
    static let maxRequestSize = 4096

    private init(path: String, loop: PollLoop) {
        self.path = path
        self.loop = loop
    }

    /// Listens on `path` and serves it; `handle` gets each request and a function that sends
    /// its answer (callable from any thread, once).
    static func start(
        path: String, logger: Logger,
        handle:
            @escaping @Sendable (HostControlRequest, _ answer: @escaping @Sendable (HostControlResponse) -> Void)
            -> Void
    ) throws(VigilError) -> HostControlChannel {
        let listener: OwnedDescriptor
        let loop: PollLoop
        do throws(LocalSocket.ListenFailure) {
            listener = try LocalSocket.listen(path)
        } catch {
            throw VigilError(
                code: .runtimeDirectory, message: "cannot listen on the control socket \(path): \(error.error.reason)")
        }
        do throws(SystemCallError) {
            loop = try PollLoop(name: "vigil-host-ctl")
        } catch {
            unlink(path)
            throw VigilError(
                code: .runtimeDirectory, message: "cannot start the control channel \(path): \(error.reason)")
        }
        let server = Server(logger: logger, handle: handle)
        loop.add(listener, events: PollLoop.readable) { loop, ready in server.accept(loop, ready.descriptor) }
        loop.start()
        return HostControlChannel(path: path, loop: loop)
    }

    /// Removes the socket (no one connects from then on) and stops serving; the loop closes every
    /// connection, so a client still waiting for an answer sees the host go.
    func stop() {
        unlink(path)
        loop.close()
    }

    /// One client connection: its request as it arrives, then its answer as the socket takes it.
    private struct Connection {
        var request: [UInt8] = []
        var answer: [UInt8]?
        var sent = 0
        var deadline: PollLoop.Token?
        var handed = false
    }

    /// The channel's state, touched only on its loop's thread (answers come back as loop jobs).
    private final class Server: @unchecked Sendable {
        let logger: Logger
        let handle: @Sendable (HostControlRequest, @escaping @Sendable (HostControlResponse) -> Void) -> Void
        var connections: [PollLoop.Token: Connection] = [:]

        init(
            logger: Logger,
            handle: @escaping @Sendable (HostControlRequest, @escaping @Sendable (HostControlResponse) -> Void) -> Void
        ) {
            self.logger = logger
            self.handle = handle
        }

        func accept(_ loop: PollLoop, _ listener: Int32) {
            while true {
                let client: OwnedDescriptor
                switch LocalSocket.acceptNext(from: listener) {
                case .none: return
                case .otherUser:
                    logger.warning("The host's control channel refused a connection from another user")
                    continue
                case .client(let accepted): client = accepted
                }
                let clientFD = client.rawValue
                guard connections.count < HostControlChannel.maxConnections else {
                    let busy = HostControlResponse(
                        ok: false,
                        error: .init(
                            code: "busy",
                            message: "the host is serving \(HostControlChannel.maxConnections) other control "
                                + "connections — try again"))
                    _ = busy.line.withUnsafeBytes {
                        send(clientFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    continue
                }
                let token = loop.add(client, events: PollLoop.readable) { [self] loop, ready in serve(loop, ready) }
                let deadline = MonotonicClock.seconds() + HostControlChannel.requestDeadlineSeconds
                connections[token] = Connection(
                    deadline: loop.schedule(at: deadline) { [self] loop in close(token, loop) })
            }
        }

        /// Reads the request, or writes the answer; closes the connection when it is done, broken
        /// or closed by the client (a reload it asked for still happens).
        private func serve(_ loop: PollLoop, _ ready: PollLoop.Ready) {
            guard var connection = connections[ready.token] else { return }
            let fd = ready.descriptor
            if let answer = connection.answer {
                let n = answer[connection.sent...].withUnsafeBytes {
                    send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if n < 0, errno == EINTR || errno == EAGAIN { return }
                connection.sent += max(n, 0)
                if n <= 0 || connection.sent >= answer.count { return close(ready.token, loop) }
                connections[ready.token] = connection
                return
            }
            var buffer = [UInt8](repeating: 0, count: 512)
            let n = read(fd, &buffer, buffer.count)
            if n < 0, errno == EINTR || errno == EAGAIN { return }
            if n <= 0 || connection.handed { return close(ready.token, loop) }
            guard let newline = buffer[0..<n].firstIndex(of: UInt8(ascii: "\n")) else {
                connection.request += buffer[0..<n]
                if connection.request.count > HostControlChannel.maxRequestSize { return close(ready.token, loop) }
                connections[ready.token] = connection
                return
            }
            let line = connection.request + buffer[0..<newline]
            if let deadline = connection.deadline { loop.remove(deadline) }
            connection.deadline = nil
            connection.handed = true
            connections[ready.token] = connection
            let token = ready.token
            let reply: @Sendable (HostControlResponse) -> Void = { [self] response in
                _ = loop.enqueue { loop in self.answer(token, response.line, loop) }
            }
            guard line.count <= HostControlChannel.maxRequestSize,
                let request = try? JSONDecoder().decode(HostControlRequest.self, from: Data(line)),
                HostControlRequest.commands.contains(request.command)
            else {
                return reply(
                    HostControlResponse(
                        ok: false,
                        error: .init(
                            code: "control-channel",
                            message: "not a control request; send one JSON line such as {\"command\": \"reload\"}")))
            }
            handle(request, reply)
        }

        private func answer(_ token: PollLoop.Token, _ line: [UInt8], _ loop: PollLoop) {
            guard var connection = connections[token] else { return }
            connection.answer = line
            connections[token] = connection
            loop.setEvents(token, PollLoop.writable)
        }

        private func close(_ token: PollLoop.Token, _ loop: PollLoop) {
            if let deadline = connections.removeValue(forKey: token)?.deadline { loop.remove(deadline) }
            loop.remove(token)
        }
    }
}
