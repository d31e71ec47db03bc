import FoundationEssentials
import Logging
import Synchronization
import VigilBase
import VigilCore

#if canImport(Glibc)
import Glibc
#endif

/// The soundscape's local control channel: a Unix socket in the plugin's state directory
/// (directory 0700, socket 0600), and a peer-credential check on every connection, so only the
/// host's user can reach it. One JSON ``ControlRequest`` line in, one ``ControlResponse`` line out.
package final class ControlChannel: Sendable {
    let path: String
    private let listenFD: Int32
    private let wakeWrite: Int32
    private let done = Mutex(false)

    /// `control.sock` in `stateDirectory`.
    static func socketPath(stateDirectory: String) -> String { stateDirectory + "/control.sock" }

    private init(path: String, listenFD: Int32, wakeWrite: Int32) {
        self.path = path
        self.listenFD = listenFD
        self.wakeWrite = wakeWrite
    }

    /// Binds the socket (replacing a stale one nobody answers on) and serves it on a thread of its own.
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
        guard var address = SocketAddress.make(path) else {
            throw SoundscapeError(
                code: .controlChannel,
                message: "the socket path \(path) is longer than 107 bytes; set a shorter XDG_STATE_HOME")
        }
        if SoundscapeClient.canConnect(path) {
            throw SoundscapeError(code: .controlChannel, message: "another host already serves \(path)")
        }
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Self.failure(.current("socket"), "cannot create the control socket") }
        let previous = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(previous)
        guard bound == 0, listen(fd, 8) == 0 else {
            let failure = SystemCallError.current(bound == 0 ? "listen" : "bind")
            close(fd)
            throw Self.failure(failure, "cannot listen on \(path)")
        }
        chmod(path, 0o600)
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            close(fd)
            unlink(path)
            throw Self.failure(.current("pipe"), "cannot create the control channel's wake-up pipe")
        }
        for p in pipeFDs { _ = fcntl(p, F_SETFD, FD_CLOEXEC) }
        let channel = ControlChannel(path: path, listenFD: fd, wakeWrite: pipeFDs[1])
        let wakeRead = pipeFDs[0]
        KernelThread.start(name: "vigil-soundscape-ctl") {
            channel.serve(wakeRead: wakeRead, controller: controller, logger: logger)
            close(wakeRead)
        }
        return channel
    }

    /// `what` failed in `failure`: a control-channel error with the system call as its cause.
    private static func failure(_ failure: SystemCallError, _ what: String) -> SoundscapeError {
        SoundscapeError(code: .controlChannel, message: "\(what): \(failure.reason)", cause: ErrorCause(failure))
    }

    /// Stops serving and removes the socket.
    func stop() {
        let first = done.withLock { d -> Bool in
            defer { d = true }
            return !d
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func serve(wakeRead: Int32, controller: SoundscapeController, logger: Logger) {
        defer {
            unlink(path)
            close(listenFD)
            close(wakeWrite)
        }
        while true {
            var fds = [
                pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let rc = poll(&fds, 2, -1)
            if rc < 0 && errno == EINTR { continue }
            if fds[1].revents != 0 || rc < 0 { return }
            let client = accept(listenFD, nil, nil)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            handle(client, controller: controller, logger: logger)
            close(client)
        }
    }

    private func handle(_ client: Int32, controller: SoundscapeController, logger: Logger) {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(client, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, credentials.uid == getuid()
        else {
            logger.warning(
                "Soundscape control channel refused a connection from another user",
                metadata: ["uid": "\(credentials.uid)"])
            return
        }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let line = SocketIO.readLine(client, limit: Self.maxRequestSize) else { return }
        guard let answer = Self.answer(line, controller: controller) else { return }
        try? FileIO.writeAll(client, answer)
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
        guard let data = try? JSONEncoder().encode(response) else { return nil }
        return Array(data) + [UInt8(ascii: "\n")]
    }
}

/// `struct ucred` (pid, uid, gid), which Glibc's Swift overlay does not export.
struct PeerCredentials {
    var pid: Int32 = 0
    var uid: UInt32 = UInt32.max
    var gid: UInt32 = UInt32.max
}

enum SocketAddress {
    static func make(_ path: String) -> sockaddr_un? {
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

enum SocketIO {
    /// Reads up to a newline (not included) or `limit` bytes; `nil` on error, timeout or overflow.
    static func readLine(_ fd: Int32, limit: Int) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while out.count <= limit {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return out.isEmpty ? nil : out }
            if let newline = buffer[0..<n].firstIndex(of: UInt8(ascii: "\n")) {
                out += buffer[0..<newline]
                return out
            }
            out += buffer[0..<n]
        }
        return nil
    }
}
