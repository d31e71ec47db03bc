import FoundationEssentials
import VigilBase
import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

/// Talks to a running host's soundscape through its control channel (what `vigil soundscape`
/// uses). Blocking: call it off the cooperative pool.
public struct SoundscapeClient: Sendable {
    /// The socket path.
    public let path: String

    /// The control socket of the soundscape plugin of a host run with `environment`:
    /// `$XDG_RUNTIME_DIR/vigil/plugins/soundscape/control.sock`, else (no runtime directory) in the
    /// plugin's state directory (`$XDG_STATE_HOME/vigil/plugins/soundscape`, else under
    /// `$HOME/.local/state`) — where the plugin puts it.
    public static func defaultPath(environment: [String: String], plugin: String = "soundscape") -> String? {
        let host = HostEnvironment(variables: environment)
        if let runtime = host.runtimeHome {
            return ControlChannel.socketPath(runtimeHome: runtime, plugin: plugin, stateDirectory: "")
        }
        guard let state = host.pluginStateDirectory(plugin) else { return nil }
        return ControlChannel.socketPath(runtimeHome: nil, plugin: plugin, stateDirectory: state)
    }

    public init(path: String) { self.path = path }

    /// How long ``send(_:)`` waits for the host, from connecting to the end of its answer.
    public static let answerDeadlineSeconds = 5

    /// Sends `request` and returns the host's answer.
    /// - Throws: ``SoundscapeError/Code/notRunning`` when no host serves the socket,
    ///   ``SoundscapeError/Code/busy`` when the host took no connection or gave no answer within
    ///   ``answerDeadlineSeconds`` (a host serving all the connections it takes answers instead,
    ///   `ok: false` with the code `busy`),
    ///   ``SoundscapeError/Code/controlChannel`` when the answer is not understood.
    public func send(_ request: ControlRequest) throws(SoundscapeError) -> ControlResponse {
        let deadline = MonotonicClock.seconds() + Double(Self.answerDeadlineSeconds)
        let socket: OwnedDescriptor
        switch LocalSocket.connect(path, until: deadline) {
        case .connected(let connected): socket = connected
        case .nobody:
            throw SoundscapeError(
                code: .notRunning,
                message:
                    "no running host plays a soundscape here (nothing answers on \(path)); start it with `vigil up` or `vigil run`"
            )
        case .queueFull:
            throw SoundscapeError(
                code: .busy,
                message: "the host is busy: its control socket \(path) took no new connection within "
                    + "\(Self.answerDeadlineSeconds) s — try again")
        }
        guard let body = try? JSONEncoder().encode(request) else {
            throw SoundscapeError(code: .controlChannel, message: "cannot encode the request")
        }
        let exchange = LocalSocket.exchange(
            socket.rawValue, Array(body) + [UInt8(ascii: "\n")], limit: 1 << 20, until: deadline)
        guard case .line(let line) = exchange else {
            if case .timedOut = exchange {
                throw SoundscapeError(
                    code: .busy,
                    message: "the host at \(path) did not answer within \(Self.answerDeadlineSeconds) s — it is "
                        + "busy or stuck; try again")
            }
            throw SoundscapeError(code: .controlChannel, message: "the host at \(path) gave no understandable answer")
        }
        guard let response = try? JSONDecoder().decode(ControlResponse.self, from: Data(line)) else {
            throw SoundscapeError(code: .controlChannel, message: "the host at \(path) gave no understandable answer")
        }
        return response
    }
}
