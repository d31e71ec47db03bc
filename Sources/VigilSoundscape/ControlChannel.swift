import FoundationEssentials
import Logging
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The soundscape's local control channel: a Unix socket in the plugin's runtime directory
/// (`$XDG_RUNTIME_DIR/vigil/plugins/NAME`, else its state directory; directory 0700, socket 0600), and a peer-credential check on every connection, so only the
/// host's user can reach it. One JSON ``ControlRequest`` line in, one ``ControlResponse`` line out.
/// Up to ``maxConnections`` clients are served at once, each within ``connectionDeadlineSeconds``.
package final class ControlChannel: Sendable {
    let path: String
    private let loop: PollLoop
    private let stopped = Mutex(false)

    /// `control.sock` in the plugin's directory under the runtime directory,
    /// `RUNTIME_HOME/vigil/plugins/PLUGIN` (sockets belong there: it is the user's, 0700, and
    /// emptied at logout), or, without `XDG_RUNTIME_DIR` (`runtimeHome` nil), in `stateDirectory`.
    static func socketPath(runtimeHome: String?, plugin: String, stateDirectory: String) -> String {
        (runtimeHome.map { "\($0)/vigil/plugins/\(plugin)" } ?? stateDirectory) + "/control.sock"
    }

    private init(path: String, loop: PollLoop) {
        self.path = path
        self.loop = loop
    }

    /// Binds the socket (replacing a stale one nobody answers on) and serves it on a ``PollLoop`` of its own.
    static func start(path: String, controller: SoundscapeController, logger: Logger) throws(SoundscapeError)
        -> ControlChannel
    {
        let directory = Path.directory(of: path)
        if let failure = Directory.create(directory, mode: 0o700) {
            throw Self.failure(failure.error, "cannot create \(failure.path)")
        }
        var info = stat()
        guard lstat(directory, &info) == 0, info.st_uid == getuid(), info.st_mode & 0o077 == 0 else {
            throw SoundscapeError(
                code: .controlChannel,
                message: "\(directory) must be a directory of yours that only you can open (chmod 700 \(directory))")
        }
        guard SocketAddress.make(path) != nil else {
            throw SoundscapeError(
                code: .controlChannel,
                message:
                    "the socket path \(path) is longer than 107 bytes; set a shorter XDG_RUNTIME_DIR (or XDG_STATE_HOME)"
            )
        }
        if LocalSocket.canConnect(path) {
            throw SoundscapeError(code: .controlChannel, message: "another host already serves \(path)")
        }
        let listener: OwnedDescriptor
        let loop: PollLoop
        do throws(LocalSocket.ListenFailure) {
            listener = try LocalSocket.listen(path)
        } catch {
            throw Self.failure(
                error.error, error.step == "socket" ? "cannot create the control socket" : "cannot listen on \(path)")
        }
        do throws(SystemCallError) {
            loop = try PollLoop(name: "vigil-soundscape-ctl")
        } catch {
            unlink(path)
            throw Self.failure(error, "cannot create the control channel's wake-up descriptor")
        }
        let server = Server(controller: controller, logger: logger)
        loop.add(listener, events: PollLoop.readable) { loop, ready in server.accept(loop, ready.descriptor) }
        loop.start()
        return ControlChannel(path: path, loop: loop)
    }

    /// `what` failed in `failure`: a control-channel error with the system call as its cause.
    private static func failure(_ failure: SystemCallError, _ what: String) -> SoundscapeError {
        SoundscapeError(code: .controlChannel, message: "\(what): \(failure.reason)", cause: ErrorCause(failure))
    }

    /// Removes the socket (before this returns: no one connects from then on) and stops serving;
    /// the loop then closes the listening socket and every connection. Safe to call twice.
    func stop() {
        if stopped.withLock({ stopped in
            defer { stopped = true }
            return !stopped
        }) {
            unlink(path)
        }
        loop.close()
    }

    /// How long a connection may take, from its accept to the last byte of its answer: a client
    /// that sends its request slowly (or never) is answered with an error and closed then, and
    /// holds up no one else meanwhile.
    package static let connectionDeadlineSeconds = 2

    /// The most connections served at once; one more is told that the host is busy, and closed.
    package static let maxConnections = 16

    /// One client connection, served without blocking: its request as it arrives, then its answer
    /// as the socket takes it.
    private struct Connection {
        var request: [UInt8] = []
        var answer: [UInt8]?
        var sent = 0
        var deadline: PollLoop.Token?
    }

    /// The channel's state on its loop's thread: the listening socket's and every connection's
    /// handlers, each connection with its own deadline, so that no client can hold up another.
    private final class Server {
        let controller: SoundscapeController
        let logger: Logger
        var connections: [PollLoop.Token: Connection] = [:]

        init(controller: SoundscapeController, logger: Logger) {
            self.controller = controller
            self.logger = logger
        }

        /// Accepts every waiting connection on `listener`: a caller of another user is refused,
        /// and one beyond ``maxConnections`` is told the host is busy.
        func accept(_ loop: PollLoop, _ listener: Int32) {
            while true {
                let client: OwnedDescriptor
                switch LocalSocket.acceptNext(from: listener) {
                case .none: return
                case .otherUser(let uid):
                    logger.warning(
                        "Soundscape control channel refused a connection from another user",
                        metadata: ["uid": "\(uid.map(String.init) ?? "unknown")"])
                    continue
                case .client(let accepted): client = accepted
                }
                let clientFD = client.rawValue
                guard connections.count < ControlChannel.maxConnections else {
                    // Best effort on a fresh socket: a short line fits its buffer, and nothing waits for it.
                    if let busy = ControlChannel.encode(ControlChannel.busyResponse) {
                        _ = busy.withUnsafeBytes {
                            send(clientFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                        }
                    }
                    logger.warning(
                        "Soundscape control channel is serving \(ControlChannel.maxConnections) connections; told one more to retry"
                    )
                    continue
                }
                let token = loop.add(client, events: PollLoop.readable) { [self] loop, ready in
                    serve(loop, ready)
                }
                let deadline = MonotonicClock.seconds() + Double(ControlChannel.connectionDeadlineSeconds)
                connections[token] = Connection(
                    deadline: loop.schedule(at: deadline) { [self] loop in expire(token, loop) })
            }
        }

        /// Reads what a connection sent or writes what it is owed; closes it once it is done
        /// (answered, closed by the client, or a broken request).
        private func serve(_ loop: PollLoop, _ ready: PollLoop.Ready) {
            guard var connection = connections[ready.token] else { return }
            if ControlChannel.step(&connection, ready.descriptor, controller: controller) {
                connections[ready.token] = connection
                loop.setEvents(ready.token, connection.answer == nil ? PollLoop.readable : PollLoop.writable)
            } else {
                close(ready.token, loop)
            }
        }

        /// A connection that ran out of time: told why (best effort), and closed.
        private func expire(_ token: PollLoop.Token, _ loop: PollLoop) {
            guard let connection = connections[token], let fd = loop.descriptor(token) else { return }
            if connection.answer == nil,
                let late = ControlChannel.encode(
                    ControlResponse(
                        ok: false, state: nil,
                        error: .init(
                            code: .controlChannel,
                            message:
                                "the request did not arrive within \(ControlChannel.connectionDeadlineSeconds) s "
                                + "of connecting")))
            {
                _ = late.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            logger.debug("Soundscape control channel closed a connection that ran out of time")
            close(token, loop)
        }

        private func close(_ token: PollLoop.Token, _ loop: PollLoop) {
            if let deadline = connections.removeValue(forKey: token)?.deadline { loop.remove(deadline) }
            loop.remove(token)
        }
    }

    /// What a client beyond ``maxConnections`` is told.
    static let busyResponse = ControlResponse(
        ok: false, state: nil,
        error: .init(
            code: .busy,
            message: "the host is busy: it is serving \(maxConnections) other control connections — try again"))

    /// Reads what `connection` sent on `fd`, or writes what it is owed; false once it is done
    /// (answered, closed by the client, or a broken request).
    private static func step(_ connection: inout Connection, _ fd: Int32, controller: SoundscapeController) -> Bool {
        if let answer = connection.answer {
            let n = answer[connection.sent...].withUnsafeBytes {
                send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if n < 0 { return errno == EINTR || errno == EAGAIN }
            connection.sent += n
            return connection.sent < answer.count
        }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = read(fd, &buffer, buffer.count)
        if n < 0 { return errno == EINTR || errno == EAGAIN }
        let line: [UInt8]
        if n == 0 {
            // The client ended its side: a request without a newline is still one.
            guard !connection.request.isEmpty else { return false }
            line = connection.request
        } else if let newline = buffer[0..<n].firstIndex(of: UInt8(ascii: "\n")) {
            line = connection.request + buffer[0..<newline]
        } else {
            connection.request += buffer[0..<n]
            return connection.request.count <= maxRequestSize
        }
        guard line.count <= maxRequestSize, let answer = answer(line, controller: controller) else { return false }
        connection.answer = answer
        return step(&connection, fd, controller: controller)
    }

    private static func encode(_ response: ControlResponse) -> [UInt8]? {
        guard let data = try? JSONEncoder().encode(response) else { return nil }
        return Array(data) + [UInt8(ascii: "\n")]
    }

    /// The longest request line read, in bytes.
    package static let maxRequestSize = 4096

    /// The answer line (newline included) to one request line from a client: what the controller
    /// says, or a refusal when the line is not a control request; `nil` when it cannot be encoded.
    package static func answer(_ line: [UInt8], controller: SoundscapeController) -> [UInt8]? {
        let response: ControlResponse
        if let request = try? JSONDecoder().decode(ControlRequest.self, from: Data(line)) {
            response = controller.handle(request)
        } else {
            response = ControlResponse(
                ok: false, state: controller.current,
                error: .init(code: .controlChannel, message: "the request is not a JSON control request"))
        }
        return encode(response)
    }
}
