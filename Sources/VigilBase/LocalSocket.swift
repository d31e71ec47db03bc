#if canImport(Glibc)
import Glibc
#endif

/// The Unix stream sockets a running host is reached through (the soundscape's control channel,
/// the host's control channel): listen with the socket 0600, read the peer's user, connect without
/// blocking past a deadline, and exchange one request line for one answer line.
package enum LocalSocket {
    /// A failed step of ``listen(_:backlog:)``: the step (`socket`, `bind`, `listen`) and its error.
    package struct ListenFailure: Error {
        package let step: String
        package let error: SystemCallError
    }

    /// Listens on `path` (non-blocking, close-on-exec), replacing a file there, the socket made
    /// 0600 (bound under umask 0177, so it is never reachable by others meanwhile).
    package static func listen(_ path: String, backlog: Int32 = 8) throws(ListenFailure) -> OwnedDescriptor {
        guard var address = SocketAddress.make(path) else {
            throw ListenFailure(step: "bind", error: SystemCallError("bind", errno: ENAMETOOLONG))
        }
        unlink(path)
        let listener: OwnedDescriptor
        do throws(SystemCallError) {
            listener = try OwnedDescriptor("socket") {
                socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
            }
        } catch {
            throw ListenFailure(step: "socket", error: error)
        }
        let listenFD = listener.rawValue
        var step = "bind"
        do throws(SystemCallError) {
            let previous = umask(0o177)
            defer { umask(previous) }
            try SystemCallError.check("bind", retryingInterrupts: false) {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(listenFD, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
            }
            step = "listen"
            try SystemCallError.check("listen") { Glibc.listen(listenFD, backlog) }
        } catch {
            throw ListenFailure(step: step, error: error)
        }
        chmod(path, 0o600)
        return listener
    }

    /// The outcome of ``acceptNext(from:)``.
    package enum Accepted: ~Copyable {
        /// A connection from a process of this user.
        case client(OwnedDescriptor)
        /// A connection from another user (`uid`, when it could be read), already closed.
        case otherUser(UInt32?)
        /// No connection waits (or none can be taken now: retried at the next wake-up).
        case none
    }

    /// Takes the next connection waiting on the non-blocking `listener` (an aborted one is
    /// skipped), and checks that its peer is this user.
    package static func acceptNext(from listener: Int32) -> Accepted {
        while true {
            let client: OwnedDescriptor
            do throws(SystemCallError) {
                client = try OwnedDescriptor.accept(from: listener)
            } catch  where error.number == ECONNABORTED {
                continue
            } catch {
                return .none  // EAGAIN: no more waiting; EMFILE and the like: retried at the next wake-up
            }
            let uid = peerUID(client.rawValue)
            guard uid == getuid() else { return .otherUser(uid) }
            return .client(client)
        }
    }

    /// The user id of the process at the other end of the connected socket `fd` (`SO_PEERCRED`).
    package static func peerUID(_ fd: Int32) -> UInt32? {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return nil }
        return credentials.uid
    }

    /// True when something serves `path` (it answers a connection, or its queue is full).
    package static func canConnect(_ path: String) -> Bool {
        switch connect(path, until: MonotonicClock.seconds() + 1) {
        case .connected: return true  // the socket closes as it goes
        case .queueFull: return true
        case .nobody: return false
        }
    }

    /// The outcome of ``connect(_:until:)``.
    package enum Connection: ~Copyable {
        case connected(OwnedDescriptor)
        case nobody
        /// The listening socket's queue stayed full until the deadline.
        case queueFull
    }

    /// Connects without blocking: a server whose queue of connections is full is retried until
    /// `deadline` (a ``MonotonicClock`` time), never waited on without an end.
    package static func connect(_ path: String, until deadline: Double) -> Connection {
        guard var address = SocketAddress.make(path) else { return .nobody }
        while true {
            let socket: OwnedDescriptor
            do throws(SystemCallError) {
                socket = try OwnedDescriptor("socket") {
                    Glibc.socket(
                        AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
                }
            } catch {
                return .nobody
            }
            let fd = socket.rawValue
            do throws(SystemCallError) {
                try SystemCallError.check("connect", retryingInterrupts: false) {
                    withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                        }
                    }
                }
                return .connected(socket)
            } catch {
                // A full queue (EAGAIN) or a signal: try again with a new socket; anything else: nobody.
                guard error.number == EAGAIN || error.number == EINTR else {
                    return .nobody
                }
            }
            guard MonotonicClock.seconds() < deadline else { return .queueFull }
            usleep(20_000)
        }
    }

    /// The outcome of ``exchange(_:_:limit:until:)``.
    package enum Exchange {
        /// The answer, without its newline.
        case line([UInt8])
        /// The deadline passed first.
        case timedOut
        /// The peer closed, failed or sent more than the limit without a newline.
        case broken
    }

    /// Writes `request` to the non-blocking socket `fd` and reads one line back (at most `limit`
    /// bytes), all before `deadline` (a ``MonotonicClock`` time).
    package static func exchange(_ fd: Int32, _ request: [UInt8], limit: Int, until deadline: Double) -> Exchange {
        var sent = 0
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let writing = sent < request.count
            if writing {
                let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n > 0 {
                    sent += n
                    continue
                }
                if n < 0 && errno != EAGAIN && errno != EINTR {
                    // The server may have answered and closed before reading (it is busy): read that.
                    sent = request.count
                    continue
                }
            } else {
                let n = read(fd, &buffer, buffer.count)
                if n > 0 {
                    if let newline = buffer[0..<n].firstIndex(of: UInt8(ascii: "\n")) {
                        return .line(answer + buffer[0..<newline])
                    }
                    answer += buffer[0..<n]
                    if answer.count > limit { return .broken }
                    continue
                }
                if n == 0 { return answer.isEmpty ? .broken : .line(answer) }
                if errno != EAGAIN && errno != EINTR { return .broken }
            }
            let left = deadline - MonotonicClock.seconds()
            guard left > 0 else { return .timedOut }
            var pfd = pollfd(fd: fd, events: Int16(writing ? POLLOUT : POLLIN), revents: 0)
            _ = poll(&pfd, 1, Int32(min((left * 1000).rounded(.up), 60_000)))
        }
    }
}

/// `struct ucred` (pid, uid, gid), which Glibc's Swift overlay does not export.
private struct PeerCredentials {
    var pid: Int32 = 0
    var uid: UInt32 = UInt32.max
    var gid: UInt32 = UInt32.max
}

/// A `sockaddr_un` for a path (`nil` when it does not fit its 108 bytes with the terminator).
package enum SocketAddress {
    package static func make(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }
}
