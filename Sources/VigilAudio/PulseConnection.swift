internal import CPulse
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// One client connection to a PulseAudio-protocol sound server (PulseAudio or pipewire-pulse):
/// the one libpulse client both ``PulseDriver`` (the keep-alive stream) and ``PulseMixer`` (what
/// announcements need) are built on.
///
/// It owns a private `pa_mainloop`, iterated on the thread that uses the connection (libpulse
/// starts no thread of its own), and one `pa_context` at a time:
/// - ``connect(deadline:cancelled:)`` creates the context, keeps the host's `PULSE_PROP*`
///   variables off the client (``StreamIdentity``) and iterates until the server accepted the
///   client, refused it, the deadline passed or the caller cancelled;
/// - a context that fails or ends after that is reported once to ``onLost``, and ``isReady``
///   turns false;
/// - ``disconnect()`` tears the context down (the mainloop stays, so the connection can connect
///   again) and `deinit` frees the mainloop;
/// - ``error(_:_:_:)`` is the one table from libpulse's error codes to an ``AudioError``: its
///   errno and a remedy.
///
/// Like the mainloop, a connection is used from one thread only.
final class PulseConnection {
    /// The libpulse server string (`pa_context_connect`): always explicit, never libpulse's
    /// fallback to the process's own environment.
    let server: String
    /// `application.name` of the client.
    let applicationName: String
    /// What a remedy calls the user's output, when the caller plays to one (`pulse`, `pulse:SINK`);
    /// `nil` for a client that only queries and controls the server.
    let device: String?
    /// The sink the caller plays to: `.some(nil)` for the default sink, `nil` when it plays to none.
    let sink: String??

    let mainloop: OpaquePointer
    /// The mainloop's API, for the caller's own I/O and timer events.
    let api: UnsafeMutablePointer<pa_mainloop_api>
    /// The context, while one exists (connecting, ready, or failed and not yet disconnected).
    private(set) var context: OpaquePointer?
    /// Called on this thread when a ready context fails or ends, with libpulse's error code.
    var onLost: ((Int32) -> Void)?
    private var wasReady = false

    /// The default time a connection or a request may take.
    static let defaultTimeoutMicroseconds: UInt64 = 5_000_000
    /// The time ``connect(deadline:cancelled:)``'s callers allow (named in the timeout's remedy).
    var timeoutMicroseconds = PulseConnection.defaultTimeoutMicroseconds

    /// A connection to `server` (a libpulse server string); nothing connects until
    /// ``connect(deadline:cancelled:)``.
    init(server: String, applicationName: String, device: String? = nil, sink: String?? = nil) {
        self.server = server
        self.applicationName = applicationName
        self.device = device
        self.sink = sink
        // pa_mainloop_new fails only when out of memory or descriptors; libpulse aborts then anyway.
        mainloop = pa_mainloop_new()!
        api = pa_mainloop_get_api(mainloop)!
    }

    deinit {
        disconnect()
        pa_mainloop_free(mainloop)
    }

    /// Now on libpulse's monotonic clock (`pa_rtclock_now`), in microseconds: the clock of
    /// deadlines and of `pa_context_rttime_new` timers.
    static var now: UInt64 { pa_rtclock_now() }

    /// True while the context is connected and ready.
    var isReady: Bool {
        guard let context else { return false }
        return pa_context_get_state(context) == PA_CONTEXT_READY
    }

    // MARK: Connecting

    /// Connects a new context (after tearing down any old one) and returns once the server
    /// accepted it. Throws `open-failed` when the server refuses the client or does not answer by
    /// `deadline` (``now``-based microseconds), or `cancelled()` (asked after each iteration)
    /// returns true; nothing is left connected then.
    func connect(deadline: UInt64, cancelled: () -> Bool = { false }) throws(AudioError) {
        disconnect()
        let properties = pa_proplist_new()
        pa_proplist_sets(properties, PA_PROP_APPLICATION_NAME, applicationName)
        context = pa_context_new_with_proplist(api, applicationName, properties)
        pa_proplist_free(properties)
        guard let context else {
            throw AudioError(
                code: .openFailed, function: "pa_context_new",
                message: "libpulse could not create a client context — the process may be out of memory")
        }
        pa_context_set_state_callback(
            context,
            { _, userdata in Unmanaged<PulseConnection>.fromOpaque(userdata!).takeUnretainedValue().stateChanged() },
            Unmanaged.passUnretained(self).toOpaque())
        do {
            // libpulse reads the host's PULSE_PROP* variables while the client connects: keep
            // them off (see StreamIdentity) until the server has the client's properties.
            try StreamIdentity.withoutHostProperties { () throws(AudioError) -> Void in
                if pa_context_connect(context, server, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
                    throw error(.openFailed, "pa_context_connect", pa_context_errno(context))
                }
                while true {
                    switch pa_context_get_state(context) {
                    case PA_CONTEXT_READY: return
                    case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED:
                        throw error(.openFailed, "pa_context_connect", pa_context_errno(context))
                    default: break
                    }
                    if cancelled() {
                        throw AudioError(
                            code: .openFailed, function: nil,
                            message: "the connection to the sound server at \(server) was cancelled while connecting")
                    }
                    let now = Self.now
                    guard now < deadline else {
                        throw error(.openFailed, "pa_context_connect", Int32(PA_ERR_TIMEOUT.rawValue))
                    }
                    if !iterate(timeoutMicroseconds: Int32(min(deadline - now, 1_000_000))) {
                        throw AudioError(
                            code: .openFailed, function: "pa_mainloop_iterate",
                            message: "libpulse's main loop failed — this is a bug; please report it")
                    }
                }
            }
        } catch {
            disconnect()
            throw error
        }
        wasReady = true
    }

    /// Tears the context down (its callbacks first); safe to call when not connected.
    func disconnect() {
        if let context {
            pa_context_set_state_callback(context, nil, nil)
            pa_context_set_subscribe_callback(context, nil, nil)
            pa_context_disconnect(context)
            pa_context_unref(context)
        }
        context = nil
        wasReady = false
    }

    private func stateChanged() {
        guard wasReady, let context else { return }
        switch pa_context_get_state(context) {
        case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED:
            wasReady = false
            onLost?(pa_context_errno(context))
        default:
            break
        }
    }

    /// The ready context, or `stream-failed` saying the connection is not open.
    func readyContext() throws(AudioError) -> OpaquePointer {
        guard let context, pa_context_get_state(context) == PA_CONTEXT_READY else {
            throw AudioError(
                code: .streamFailed, function: "pa_context",
                message: "the connection to the sound server is not open (it failed or was lost) — check that "
                    + "the server runs and answers: `pactl info`")
        }
        return context
    }

    /// libpulse's error code of the context (`PA_ERR_CONNECTIONTERMINATED` when there is none).
    var errorCode: Int32 {
        guard let context else { return Int32(PA_ERR_CONNECTIONTERMINATED.rawValue) }
        return pa_context_errno(context)
    }

    // MARK: Iterating

    /// One mainloop iteration: waits up to `timeoutMicroseconds` (`-1`: until an event) and
    /// dispatches what is due. False when the mainloop failed.
    @discardableResult
    func iterate(timeoutMicroseconds: Int32 = -1) -> Bool {
        pa_mainloop_prepare(mainloop, timeoutMicroseconds) >= 0 && pa_mainloop_poll(mainloop) >= 0
            && pa_mainloop_dispatch(mainloop) >= 0
    }

    /// Iterates until `operation` is done; throws `stream-failed` when it could not be sent, the
    /// connection is lost, or it takes longer than ``timeoutMicroseconds``.
    func wait(_ operation: OpaquePointer?, _ function: String) throws(AudioError) {
        let context = try readyContext()
        guard let operation else { throw error(.streamFailed, function, pa_context_errno(context)) }
        defer { pa_operation_unref(operation) }
        let deadline = Self.now + timeoutMicroseconds
        while pa_operation_get_state(operation) == PA_OPERATION_RUNNING {
            if pa_context_get_state(context) != PA_CONTEXT_READY {
                pa_operation_cancel(operation)
                throw error(.streamFailed, function, pa_context_errno(context))
            }
            if Self.now > deadline {
                pa_operation_cancel(operation)
                throw error(.streamFailed, function, Int32(PA_ERR_TIMEOUT.rawValue))
            }
            iterate(timeoutMicroseconds: 100_000)
        }
        if pa_operation_get_state(operation) == PA_OPERATION_CANCELLED {
            throw error(.streamFailed, function, pa_context_errno(context))
        }
    }

    // MARK: Errors

    /// An ``AudioError`` of `kind` for libpulse error `code` from `function`: the errno it
    /// corresponds to (`ECONNREFUSED`, `EIO`, `ENOENT`, `EACCES`, `ETIMEDOUT`) and a remedy.
    func error(_ kind: AudioErrorCode, _ function: String, _ code: Int32) -> AudioError {
        let text = String(cString: pa_strerror(code))
        let errnoValue: Int32
        let remedy: String
        switch UInt32(bitPattern: code) {
        case PA_ERR_CONNECTIONREFUSED.rawValue, PA_ERR_INVALIDSERVER.rawValue:
            errnoValue = ECONNREFUSED
            remedy =
                "no sound server answers at \(server): start PulseAudio or pipewire-pulse (`pactl info` must answer)"
                + (device == nil ? "" : ", or set `device` to an ALSA PCM")
        case PA_ERR_CONNECTIONTERMINATED.rawValue, PA_ERR_KILLED.rawValue:
            errnoValue = EIO
            remedy =
                "the sound server went away or the stream's sink was removed; check `pactl info` and `pactl list short sinks`"
        case PA_ERR_NOENTITY.rawValue:
            errnoValue = ENOENT
            switch sink {
            case .some(.some(let name)):
                remedy = "the server has no sink named \"\(name)\": pick one from `pactl list short sinks`"
            case .some(.none):
                remedy =
                    "the server has no sink to play to: connect a sound card or load one (`pactl load-module module-null-sink`)"
            case .none:
                remedy = "the server has no such sink or stream: `pactl list short sinks` lists the sinks"
            }
        case PA_ERR_ACCESS.rawValue, PA_ERR_AUTHKEY.rawValue:
            errnoValue = EACCES
            remedy =
                "the server refused this client: run Vigil as the user who owns the sound server, "
                + "or give it the server's cookie (~/.config/pulse/cookie)"
        case PA_ERR_TIMEOUT.rawValue:
            errnoValue = ETIMEDOUT
            remedy =
                "the sound server at \(server) did not answer within \(timeoutMicroseconds / 1_000_000) s: "
                + "check that it is not hung (`pactl info`)"
        default:
            errnoValue = EIO
            remedy = "check the sound server with `pactl info` and `pactl list short sinks`"
        }
        let subject = device.map { "\(function) on \"\($0)\"" } ?? function
        return AudioError(
            code: kind, function: function, errno: errnoValue, message: "\(subject) failed: \(text) — \(remedy)")
    }
}
