internal import CPulse
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Plays through a PulseAudio-compatible sound server (PulseAudio or pipewire-pulse) over its
/// native protocol, with a private `pa_mainloop` iterated on the writer thread: libpulse starts
/// no thread of its own.
///
/// Why not the ALSA `pulse` plugin, which talks to the same server: it connects its stream with
/// automatic timing updates (a request and a reply every 1.5 s) and early requests (one request
/// per ALSA period), on a libpulse thread of its own that then wakes the ALSA writer. Measured
/// with a 2 s buffer, that is 5–7 wakeups a second; this driver needs 0.6 on PulseAudio and
/// about 1.1 on pipewire-pulse (docs/silent-engine.md).
///
/// The stream asks for no timing updates. Its target length is the configured buffer and its
/// minimum request is sized for the server it finds (``requestSizes(bufferMilliseconds:server:)``):
/// PulseAudio asks once per sink pull (2 s buffer: every 1.75 s; 10 s: every 4 s), pipewire-pulse
/// once per minimum request (2 s buffer: every 0.9 s; 10 s: every 4.9 s). A silent source is
/// written as a gap (one zero frame at the far end of each request), which the server plays as
/// silence without copying a sample; other sources render straight into libpulse's
/// shared-memory blocks.
final class PulseDriver: PlaybackDriver {
    let backend = PlaybackStream.Backend.pulseAudio
    let stream: PlaybackStream
    private let configuration: PlaybackConfiguration
    private var source: any SampleSource
    private let silent: Bool
    /// The sink to play to, or `nil` for the server's default sink (the stream then follows it).
    private let sink: String?
    /// The device name as configured (`pulse` or `pulse:SINK`), for messages.
    let device: String
    private let wakeFD: Int32
    let logger: Logger

    /// The client connection: mainloop, context, connect deadline, error table.
    let connection: PulseConnection
    private var wakeEvent: OpaquePointer?
    var paStream: OpaquePointer?
    /// The connect timeout while opening, then the health-check timer. Every request from the
    /// server pushes the check back by a whole interval: the server asks only for what its sink
    /// consumed, so a request proves the stream plays, and a stream that keeps asking never
    /// wakes for a check (a timer wake-up and a reply every interval saved).
    var timer: OpaquePointer?

    var opening = false
    /// Which server answered (read from its server name before the stream is created).
    private var server = Server.pulseAudio
    private var primed = false
    private var stopRequested = false
    private var failure: AudioError?
    /// The server's read index at the last health check: it must move between checks.
    var lastReadIndex: Int64?
    /// True while the stream's sink is suspended by someone else (reported as an interruption
    /// ridden out in place: reopening would not help).
    var sinkSuspended = false
    /// True while the server's last stream event asked this stream to cork.
    var corkRequested = false

    /// How long to wait for the server to accept the client and the stream.
    static let connectTimeoutMicroseconds = PulseConnection.defaultTimeoutMicroseconds

    /// `nil` if `device` does not name the sound server; else the sink it names (`nil` for the default sink).
    static func sink(of device: String) -> String?? {
        if device == "pulse" { return .some(nil) }
        if device.hasPrefix("pulse:"), device.count > "pulse:".count {
            return .some(String(device.dropFirst("pulse:".count)))
        }
        return nil
    }

    init(
        stream: PlaybackStream, configuration: PlaybackConfiguration, source: any SampleSource, sink: String?,
        wakeFD: Int32, logger: Logger
    ) {
        self.stream = stream
        self.configuration = configuration
        self.source = source
        self.silent = source.isSilent
        self.sink = sink
        let device = sink.map { "pulse:\($0)" } ?? "pulse"
        self.device = device
        self.wakeFD = wakeFD
        self.logger = logger
        connection = PulseConnection(
            server: configuration.serverList, applicationName: configuration.applicationName, device: device,
            sink: .some(sink))
        connection.timeoutMicroseconds = Self.connectTimeoutMicroseconds
        wakeEvent = connection.api.pointee.io_new?(
            connection.api, wakeFD, PA_IO_EVENT_INPUT,
            { _, _, _, _, userdata in PulseDriver.from(userdata).stopRequested = true },
            Unmanaged.passUnretained(self).toOpaque())
        connection.onLost = { [unowned self] code in
            fail(
                connection.error(
                    opening ? .openFailed : .streamFailed, opening ? "pa_context_connect" : "pa_context", code))
        }
    }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> PulseDriver {
        Unmanaged<PulseDriver>.fromOpaque(userdata!).takeUnretainedValue()
    }

    var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Closes the stream and frees the wake-up event; the connection's mainloop goes with the driver.
    func release() {
        close()
        if let wakeEvent { connection.api.pointee.io_free?(wakeEvent) }
        wakeEvent = nil
    }

    func close() {
        if let paStream {
            pa_stream_set_state_callback(paStream, nil, nil)
            pa_stream_set_write_callback(paStream, nil, nil)
            pa_stream_set_underflow_callback(paStream, nil, nil)
            pa_stream_set_moved_callback(paStream, nil, nil)
            pa_stream_set_suspended_callback(paStream, nil, nil)
            pa_stream_set_event_callback(paStream, nil, nil)
            pa_stream_disconnect(paStream)
            pa_stream_unref(paStream)
        }
        paStream = nil
        if let timer { connection.api.pointee.time_free?(timer) }
        timer = nil
        connection.disconnect()
        primed = false
        lastReadIndex = nil
        sinkSuspended = false
        if corkRequested {
            // A new stream starts without the request.
            corkRequested = false
            stream.serverRequested(.uncork)
        }
    }

    // MARK: Opening

    /// Connects to the server, creates the stream, writes the first buffer and returns once the
    /// server has it; throws (leaving nothing open) on failure, timeout or `stop()`.
    func open() throws(AudioError) {
        failure = nil
        opening = true
        defer { opening = false }
        let deadline = PulseConnection.now + Self.connectTimeoutMicroseconds
        do {
            try connection.connect(deadline: deadline) { stopRequested }
            startStream(deadline: deadline)
        } catch {
            if !stopRequested { fail(error) }
        }
        while !primed && failure == nil && !stopRequested { iterate() }
        if !primed {
            let error =
                failure
                ?? AudioError(
                    code: .openFailed, message: "stop() was called while the stream to \"\(device)\" was opening")
            close()
            throw error
        }
        if let timer, let context = connection.context {
            pa_context_rttime_restart(context, timer, PulseConnection.now + healthCheckMicroseconds)
        }
        var bufferFrames = 0
        var periodFrames = 0
        if let paStream, let attributes = pa_stream_get_buffer_attr(paStream) {
            bufferFrames = Int(attributes.pointee.tlength) / Self.frameBytes
            periodFrames = Int(attributes.pointee.minreq) / Self.frameBytes
        }
        stream.update {
            $0.bufferFrames = bufferFrames
            $0.periodFrames = periodFrames
        }
        logger.info(
            "Keep-alive stream running",
            metadata: [
                "audio.backend": "pulseaudio", "audio.sink": "\(currentSinkName ?? "?")",
                "audio.buffer_frames": "\(bufferFrames)", "audio.period_frames": "\(periodFrames)",
                "audio.gaps": "\(silent)",
            ])
    }

    /// On the ready connection: arms the open timeout for what is left of `deadline`, asks which
    /// server this is (request sizing differs, see ``requestSizes(bufferMilliseconds:server:)``)
    /// and then creates the stream.
    private func startStream(deadline: UInt64) {
        guard let context = connection.context else { return }
        timer = pa_context_rttime_new(
            context, deadline, { _, _, _, userdata in PulseDriver.from(userdata).timerFired() }, userdata)
        let operation = pa_context_get_server_info(
            context,
            { _, info, userdata in
                let driver = PulseDriver.from(userdata)
                if let name = info?.pointee.server_name, String(cString: name).contains("PipeWire") {
                    driver.server = .pipeWire
                } else {
                    driver.server = .pulseAudio
                }
                driver.createStream()
            }, userdata)
        if let operation { pa_operation_unref(operation) } else { createStream() }
    }

    /// One blocking main-loop iteration; a failing main loop fails the stream.
    private func iterate() {
        if !connection.iterate() {
            fail(
                AudioError(
                    code: opening ? .openFailed : .streamFailed, function: "pa_mainloop_iterate",
                    message: "libpulse's main loop failed — this is a bug; please report it"))
        }
    }

    var healthCheckMicroseconds: UInt64 { UInt64(configuration.healthCheckSeconds) * 1_000_000 }

    private static let frameBytes = PlaybackConfiguration.channels * MemoryLayout<Int16>.size

    var currentSinkName: String? {
        guard let paStream, let name = pa_stream_get_device_name(paStream) else { return nil }
        return String(cString: name)
    }

    private func createStream() {
        guard let context = connection.context, paStream == nil, failure == nil else { return }
        var spec = pa_sample_spec(
            format: PA_SAMPLE_S16LE, rate: UInt32(PlaybackConfiguration.sampleRate),
            channels: UInt8(PlaybackConfiguration.channels))
        let properties = pa_proplist_new()
        pa_proplist_sets(properties, PA_PROP_APPLICATION_NAME, configuration.applicationName)
        // Marks the stream as Vigil's keep-alive: announcements never duck it (docs/announce.md).
        pa_proplist_sets(properties, "vigil.stream", "keep-alive")
        for (key, value) in configuration.streamProperties { pa_proplist_sets(properties, key, value) }
        paStream = pa_stream_new_with_proplist(context, "keep-alive", &spec, nil, properties)
        pa_proplist_free(properties)
        guard let paStream else {
            fail(connection.error(.openFailed, "pa_stream_new", pa_context_errno(context)))
            return
        }
        pa_stream_set_state_callback(
            paStream, { _, userdata in PulseDriver.from(userdata).streamStateChanged() }, userdata)
        pa_stream_set_write_callback(
            paStream, { _, bytes, userdata in PulseDriver.from(userdata).write(bytes: bytes) }, userdata)
        pa_stream_set_underflow_callback(
            paStream, { _, userdata in PulseDriver.from(userdata).underflowed() }, userdata)
        pa_stream_set_moved_callback(paStream, { _, userdata in PulseDriver.from(userdata).moved() }, userdata)
        pa_stream_set_suspended_callback(
            paStream, { _, userdata in PulseDriver.from(userdata).suspendedChanged() }, userdata)
        pa_stream_set_event_callback(
            paStream, { _, name, _, userdata in PulseDriver.from(userdata).serverEvent(name) }, userdata)

        let (bufferBytes, requestBytes) = Self.requestSizes(
            bufferMilliseconds: configuration.bufferMilliseconds, server: server)
        var attributes = pa_buffer_attr(
            maxlength: UInt32.max, tlength: bufferBytes, prebuf: UInt32.max, minreq: requestBytes, fragsize: UInt32.max)
        let rc = pa_stream_connect_playback(paStream, sink, &attributes, PA_STREAM_NOFLAGS, nil, nil)
        if rc < 0 { fail(connection.error(.openFailed, "pa_stream_connect_playback", pa_context_errno(context))) }
    }

    /// The sound servers that speak the protocol, which size requests differently.
    enum Server {
        /// PulseAudio: sends a request when a sink pull leaves at least a minimum request missing.
        case pulseAudio
        /// pipewire-pulse: consumes a quantum at a time and sends a request each time a minimum
        /// request is missing.
        case pipeWire
    }

    /// The stream's target length and minimum request, in bytes, for a buffer of `bufferMilliseconds`.
    ///
    /// PulseAudio sets the sink's latency to the target length minus two minimum requests and
    /// sends a request when a sink pull leaves at least a minimum request missing. Sinks cap their
    /// latency (the null sink and most sound cards at 2 s), so: up to 2.25 s, a sixteenth of the
    /// buffer (a request per sink pull, the pull as large as the buffer allows); above, whatever
    /// leaves exactly 2 s of sink latency (a 10 s buffer: a request every 4 s, for 4 s of audio).
    ///
    /// pipewire-pulse caps the node latency at its quantum limit (8192 frames) and asks again
    /// every minimum request, so the minimum request is as large as it can be while 200 ms stay
    /// for that latency: half the buffer less 100 ms (2 s: every 0.9 s; 10 s: every 4.9 s), never
    /// below a sixteenth.
    static func requestSizes(bufferMilliseconds: Int, server: Server) -> (target: UInt32, minimum: UInt32) {
        let frame = Self.frameBytes
        let bytesPerMillisecond = PlaybackConfiguration.sampleRate / 1000 * frame
        let target = bufferMilliseconds * bytesPerMillisecond
        let minimum: Int
        switch server {
        case .pulseAudio: minimum = max(target / 16, (target - 2000 * bytesPerMillisecond) / 2)
        case .pipeWire: minimum = max(target / 16, target / 2 - 100 * bytesPerMillisecond)
        }
        return (UInt32(target), UInt32(max(frame, minimum / frame * frame)))
    }

    private func streamStateChanged() {
        guard let paStream, let context = connection.context else { return }
        switch pa_stream_get_state(paStream) {
        case PA_STREAM_FAILED:
            fail(
                connection.error(
                    opening ? .openFailed : .streamFailed, opening ? "pa_stream_connect_playback" : "pa_stream",
                    pa_context_errno(context)))
        case PA_STREAM_TERMINATED:
            fail(connection.error(.streamFailed, "pa_stream", Int32(PA_ERR_KILLED.rawValue)))
        default:
            break
        }
    }

    func fail(_ error: AudioError) {
        if failure == nil { failure = error }
    }

    // MARK: Playing

    /// Iterates the main loop until `stop()` or a failure.
    func play() -> DriverExit {
        while failure == nil && !stopRequested { iterate() }
        if stopRequested { return .stopped }
        return .failed(failure!)
    }

    /// The server asked for `bytes` more: a gap for a silent source, rendered samples otherwise.
    private func write(bytes: Int) {
        guard let paStream else { return }
        let frames = bytes / Self.frameBytes
        guard frames > 0 else { return }
        if silent {
            var zeroFrame: (Int16, Int16) = (0, 0)
            let rc = pa_stream_write(
                paStream, &zeroFrame, Self.frameBytes, nil, Int64((frames - 1) * Self.frameBytes), PA_SEEK_RELATIVE)
            if rc < 0, let context = connection.context {
                fail(connection.error(.streamFailed, "pa_stream_write", pa_context_errno(context)))
                return
            }
        } else {
            var remaining = frames * Self.frameBytes
            while remaining > 0 {
                var data: UnsafeMutableRawPointer?
                var size = remaining
                if pa_stream_begin_write(paStream, &data, &size) < 0 || data == nil {
                    if let context = connection.context {
                        fail(connection.error(.streamFailed, "pa_stream_begin_write", pa_context_errno(context)))
                    }
                    return
                }
                size = min(size, remaining) / Self.frameBytes * Self.frameBytes
                let samples = data!.bindMemory(to: Int16.self, capacity: size / 2)
                source.render(into: UnsafeMutableBufferPointer(start: samples, count: size / 2))
                if pa_stream_write(paStream, data, size, nil, 0, PA_SEEK_RELATIVE) < 0 {
                    if let context = connection.context {
                        fail(connection.error(.streamFailed, "pa_stream_write", pa_context_errno(context)))
                    }
                    return
                }
                remaining -= size
            }
        }
        stream.update { $0.framesWritten += UInt64(frames) }
        primed = true
        postponeHealthCheck()
    }
}
