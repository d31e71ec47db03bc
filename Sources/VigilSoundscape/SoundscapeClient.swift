import FoundationEssentials
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Talks to a running host's soundscape through its control channel (what `vigil soundscape`
/// uses). Blocking: call it off the cooperative pool.
public struct SoundscapeClient: Sendable {
    /// The socket path.
    public let path: String

    /// The control socket of the soundscape plugin for the state home in `environment`
    /// (`$XDG_STATE_HOME/vigil/plugins/soundscape/control.sock`, else under `$HOME/.local/state`).
    public static func defaultPath(environment: [String: String], plugin: String = "soundscape") -> String? {
        let base: String
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            base = state
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            base = home + "/.local/state"
        } else {
            return nil
        }
        return ControlChannel.socketPath(stateDirectory: "\(base)/vigil/plugins/\(plugin)")
    }

    public init(path: String) { self.path = path }

    static func canConnect(_ path: String) -> Bool {
        let fd = connectSocket(path)
        if fd >= 0 { close(fd) }
        return fd >= 0
    }

    private static func connectSocket(_ path: String) -> Int32 {
        guard var address = SocketAddress.make(path) else { return -1 }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if rc != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    /// Sends `request` and returns the host's answer.
    /// - Throws: ``SoundscapeError/Code/notRunning`` when no host serves the socket,
    ///   ``SoundscapeError/Code/controlChannel`` when the answer is not understood.
    public func send(_ request: ControlRequest) throws(SoundscapeError) -> ControlResponse {
        let fd = Self.connectSocket(path)
        guard fd >= 0 else {
            throw SoundscapeError(
                code: .notRunning,
                message:
                    "no running host plays a soundscape here (nothing answers on \(path)); start it with `vigil up` or `vigil run`"
            )
        }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let body = try? JSONEncoder().encode(request) else {
            throw SoundscapeError(code: .controlChannel, message: "cannot encode the request")
        }
        try? FileIO.writeAll(fd, Array(body) + [UInt8(ascii: "\n")])
        guard let line = SocketIO.readLine(fd, limit: 1 << 20),
            let response = try? JSONDecoder().decode(ControlResponse.self, from: Data(line))
        else {
            throw SoundscapeError(code: .controlChannel, message: "the host at \(path) gave no understandable answer")
        }
        return response
    }
}
