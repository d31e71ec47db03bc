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
    private let stream: PlaybackStream
    private let configuration: PlaybackConfiguration
    private var source: any SampleSource
    private let silent: Bool
    /// The sink to play to, or `nil` for the server's default sink (the stream then follows it).
    private let sink: String?
    /// The device name as configured (`pulse` or `pulse:SINK`), for messages.
    private let device: String
    private let wakeFD: Int32
    private let logger: Logger

    private let mainloop: OpaquePointer
    private let api: UnsafeMutablePointer<pa_mainloop_api>
    private var wakeEvent: OpaquePointer?
    private var context: OpaquePointer?
    private var paStream: OpaquePointer?
    /// The connect timeout while opening, then the health-check timer. Every request from the
    /// server pushes the check back by a whole interval: the server asks only for what its sink
    /// consumed, so a request proves the stream plays, and a stream that keeps asking never
    /// wakes for a check (a timer wake-up and a reply every interval saved).
    private var timer: OpaquePointer?

    private var opening = false
    private var connected = false
    /// Which server answered (read from its server name before the stream is created).
    private var server = Server.pulseAudio
    private var primed = false
    private var stopRequested = false
    private var failure: AudioError?
    /// The server's read index at the last health check: it must move between checks.
    private var lastReadIndex: Int64?
    /// True while the stream's sink is suspended by someone else (reported as an interruption
    /// ridden out in place: reopening would not help).
    private var sinkSuspended = false
    /// True while the server's last stream event asked this stream to cork.
    private var corkRequested = false

    /// How long to wait for the server to accept the client and the stream.
    static let connectTimeoutMicroseconds: UInt64 = 5_000_000

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
        self.device = sink.map { "pulse:\($0)" } ?? "pulse"
        self.wakeFD = wakeFD
        self.logger = logger
        // pa_mainloop_new fails only when out of memory or descriptors; libpulse aborts then anyway.
        mainloop = pa_mainloop_new()!
        api = pa_mainloop_get_api(mainloop)!
        wakeEvent = api.pointee.io_new?(
            api, wakeFD, PA_IO_EVENT_INPUT,
            { _, _, _, _, userdata in PulseDriver.from(userdata).stopRequested = true },
            Unmanaged.passUnretained(self).toOpaque())
    }

    private static func from(_ userdata: UnsafeMutableRawPointer?) -> PulseDriver {
        Unmanaged<PulseDriver>.fromOpaque(userdata!).takeUnretainedValue()
    }

    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    func release() {
        close()
        if let wakeEvent { api.pointee.io_free?(wakeEvent) }
        wakeEvent = nil
        pa_mainloop_free(mainloop)
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
        if let timer { api.pointee.time_free?(timer) }
        timer = nil
        if let context {
            pa_context_set_state_callback(context, nil, nil)
            pa_context_set_subscribe_callback(context, nil, nil)
            pa_context_disconnect(context)
            pa_context_unref(context)
        }
        context = nil
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
        // libpulse reads the host's PULSE_PROP* variables while the client connects: keep them
        // off (see StreamIdentity), until the server has the client's properties.
        try StreamIdentity.withoutHostProperties { () throws(AudioError) -> Void in
            try connect()
            while !connected && failure == nil && !stopRequested { iterate() }
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
        if let timer, let context {
            pa_context_rttime_restart(context, timer, pa_rtclock_now() + healthCheckMicroseconds)
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

    /// Creates the context and starts connecting it, with the connect timeout armed.
    private func connect() throws(AudioError) {
        connected = false
        let properties = pa_proplist_new()
        pa_proplist_sets(properties, PA_PROP_APPLICATION_NAME, configuration.applicationName)
        context = pa_context_new_with_proplist(api, configuration.applicationName, properties)
        pa_proplist_free(properties)
        guard let context else {
            throw AudioError(
                code: .openFailed, function: "pa_context_new",
                message: "libpulse could not create a client context — the process may be out of memory")
        }
        pa_context_set_state_callback(
            context, { _, userdata in PulseDriver.from(userdata).contextStateChanged() }, userdata)
        if pa_context_connect(context, configuration.serverList, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
            let error = pulseError(.openFailed, "pa_context_connect", pa_context_errno(context))
            close()
            throw error
        }
        timer = pa_context_rttime_new(
            context, pa_rtclock_now() + Self.connectTimeoutMicroseconds,
            { _, _, _, userdata in PulseDriver.from(userdata).timerFired() }, userdata)
    }

    /// One blocking main-loop iteration; a failing main loop fails the stream.
    private func iterate() {
        if pa_mainloop_iterate(mainloop, 1, nil) < 0 {
            fail(
                AudioError(
                    code: opening ? .openFailed : .streamFailed, function: "pa_mainloop_iterate",
                    message: "libpulse's main loop failed — this is a bug; please report it"))
        }
    }

    private var healthCheckMicroseconds: UInt64 { UInt64(configuration.healthCheckSeconds) * 1_000_000 }

    private static let frameBytes = PlaybackConfiguration.channels * MemoryLayout<Int16>.size

    private var currentSinkName: String? {
        guard let paStream, let name = pa_stream_get_device_name(paStream) else { return nil }
        return String(cString: name)
    }

    private func contextStateChanged() {
        guard let context else { return }
        switch pa_context_get_state(context) {
        case PA_CONTEXT_READY:
            connected = true
            // Which server is this? Request sizing differs (see requestSizes).
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
        case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED:
            fail(
                pulseError(
                    opening ? .openFailed : .streamFailed, opening ? "pa_context_connect" : "pa_context",
                    pa_context_errno(context)))
        default:
            break
        }
    }

    private func createStream() {
        guard let context, paStream == nil, failure == nil else { return }
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
            fail(pulseError(.openFailed, "pa_stream_new", pa_context_errno(context)))
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
        if rc < 0 { fail(pulseError(.openFailed, "pa_stream_connect_playback", pa_context_errno(context))) }
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
        guard let paStream, let context else { return }
        switch pa_stream_get_state(paStream) {
        case PA_STREAM_FAILED:
            fail(
                pulseError(
                    opening ? .openFailed : .streamFailed, opening ? "pa_stream_connect_playback" : "pa_stream",
                    pa_context_errno(context)))
        case PA_STREAM_TERMINATED:
            fail(pulseError(.streamFailed, "pa_stream", Int32(PA_ERR_KILLED.rawValue)))
        default:
            break
        }
    }

    private func fail(_ error: AudioError) {
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
            if rc < 0, let context {
                fail(pulseError(.streamFailed, "pa_stream_write", pa_context_errno(context)))
                return
            }
        } else {
            var remaining = frames * Self.frameBytes
            while remaining > 0 {
                var data: UnsafeMutableRawPointer?
                var size = remaining
                if pa_stream_begin_write(paStream, &data, &size) < 0 || data == nil {
                    if let context {
                        fail(pulseError(.streamFailed, "pa_stream_begin_write", pa_context_errno(context)))
                    }
                    return
                }
                size = min(size, remaining) / Self.frameBytes * Self.frameBytes
                let samples = data!.bindMemory(to: Int16.self, capacity: size / 2)
                source.render(into: UnsafeMutableBufferPointer(start: samples, count: size / 2))
                if pa_stream_write(paStream, data, size, nil, 0, PA_SEEK_RELATIVE) < 0 {
                    if let context { fail(pulseError(.streamFailed, "pa_stream_write", pa_context_errno(context))) }
                    return
                }
                remaining -= size
            }
        }
        stream.update { $0.framesWritten += UInt64(frames) }
        primed = true
        postponeHealthCheck()
    }

    /// A request proves the stream advanced: the next check is a whole interval away, and it
    /// starts from a fresh baseline.
    private func postponeHealthCheck() {
        guard !opening, let timer, let context else { return }
        pa_context_rttime_restart(context, timer, pa_rtclock_now() + healthCheckMicroseconds)
        lastReadIndex = nil
    }

    /// A stream event: `request-cork` / `request-uncork` (PulseAudio's role-cork during a phone call).
    private func serverEvent(_ name: UnsafePointer<CChar>?) {
        guard let name else { return }
        switch String(cString: name) {
        case "request-cork" where !corkRequested:
            corkRequested = true
            logger.info("The sound server asked the stream to be quiet (cork request)")
            stream.serverRequested(.cork)
            watchMute(true)
        case "request-uncork" where corkRequested:
            liftCorkRequest()
        default:
            break
        }
    }

    private func liftCorkRequest() {
        corkRequested = false
        watchMute(false)
        logger.info("The sound server lifted its cork request")
        stream.serverRequested(.uncork)
    }

    /// PulseAudio's role-cork mutes the stream with its cork request, but sends `request-uncork`
    /// only to streams that obeyed and corked; a keep-alive never corks, so while a request stands
    /// the driver watches its own sink input and takes the unmute as the end of the request.
    private func watchMute(_ on: Bool) {
        guard let context else { return }
        if on {
            pa_context_set_subscribe_callback(
                context, { _, event, index, userdata in PulseDriver.from(userdata).sinkInputChanged(event, index) },
                userdata)
        }
        let mask = on ? PA_SUBSCRIPTION_MASK_SINK_INPUT : PA_SUBSCRIPTION_MASK_NULL
        if let operation = pa_context_subscribe(context, mask, nil, nil) { pa_operation_unref(operation) }
        if !on { pa_context_set_subscribe_callback(context, nil, nil) }
    }

    private func sinkInputChanged(_ event: pa_subscription_event_type_t, _ index: UInt32) {
        guard corkRequested, let context, let paStream, index == pa_stream_get_index(paStream),
            event.rawValue & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue == PA_SUBSCRIPTION_EVENT_CHANGE.rawValue
        else { return }
        if let operation = pa_context_get_sink_input_info(
            context, index,
            { _, info, _, userdata in
                guard let info, info.pointee.mute == 0 else { return }
                PulseDriver.from(userdata).unmuted()
            }, userdata)
        {
            pa_operation_unref(operation)
        }
    }

    private func unmuted() {
        if corkRequested { liftCorkRequest() }
    }

    private func underflowed() {
        stream.update { $0.underruns += 1 }
        logger.warning("Keep-alive stream underran; the server refills it from the next write")
    }

    private func moved() {
        logger.info("Keep-alive stream moved to another sink", metadata: ["audio.sink": "\(currentSinkName ?? "?")"])
    }

    /// The server says the stream's sink was suspended or resumed. A playing keep-alive keeps
    /// its sink from suspending on idle, so a suspension comes from someone else (`pactl
    /// suspend-sink`, a system policy): it is an interruption the stream rides out connected.
    private func suspendedChanged() {
        guard let paStream, !opening else { return }
        if pa_stream_is_suspended(paStream) > 0 {
            enterSuspension()
        } else if sinkSuspended {
            sinkSuspended = false
            lastReadIndex = nil
            logger.info("The keep-alive stream's sink resumed", metadata: ["audio.sink": "\(currentSinkName ?? "?")"])
            stream.resumedInPlace()
        }
    }

    private func enterSuspension() {
        guard !sinkSuspended else { return }
        sinkSuspended = true
        lastReadIndex = nil
        let sinkName = currentSinkName ?? "unknown"
        logger.warning(
            "The keep-alive stream's sink was suspended by someone else", metadata: ["audio.sink": "\(sinkName)"])
        stream.interruptedInPlace(
            AudioError(
                code: .notRunning, function: "pa_stream_is_suspended",
                message: "the sink \(sinkName) of the stream to \"\(device)\" was suspended by another program "
                    + "(for example `pactl suspend-sink \(sinkName) 1`) — the stream stays connected and plays "
                    + "again when the sink resumes (`pactl suspend-sink \(sinkName) 0`)"))
    }

    /// While opening: the connect timeout. While playing: the health check, due only when the
    /// server sent no request for a whole interval, which asks the server whether the stream is
    /// playing and re-arms itself.
    private func timerFired() {
        guard let context else { return }
        if opening {
            fail(pulseError(.openFailed, "pa_context_connect", Int32(PA_ERR_TIMEOUT.rawValue)))
            return
        }
        if let timer { pa_context_rttime_restart(context, timer, pa_rtclock_now() + healthCheckMicroseconds) }
        guard let paStream else { return }
        stream.update { $0.healthCheckRoundTrips += 1 }
        if let operation = pa_stream_update_timing_info(
            paStream, { _, success, userdata in PulseDriver.from(userdata).checkHealth(success: success != 0) },
            userdata)
        {
            pa_operation_unref(operation)
        }
    }

    private func checkHealth(success: Bool) {
        guard success, let paStream, let info = pa_stream_get_timing_info(paStream) else { return }
        if pa_stream_is_suspended(paStream) > 0 {
            enterSuspension()
            return
        }
        if sinkSuspended { return }
        let readIndex = info.pointee.read_index
        let corked = pa_stream_is_corked(paStream) > 0
        // The first check after an open only takes a baseline: a sink that was suspended takes
        // about a second to pull its first block, and until then the server says "not playing".
        guard let previous = lastReadIndex, !corked else {
            lastReadIndex = readIndex
            if !corked { return }
            fail(notPlaying("corked"))
            return
        }
        let stalled = readIndex <= previous
        if info.pointee.playing == 0 || stalled {
            fail(notPlaying(info.pointee.playing == 0 ? "not playing" : "not advancing"))
            return
        }
        lastReadIndex = readIndex
    }

    private func notPlaying(_ what: String) -> AudioError {
        logger.warning(
            "Health check: the keep-alive stream is \(what)", metadata: ["audio.sink": "\(currentSinkName ?? "?")"])
        return AudioError(
            code: .notRunning, function: "pa_stream_update_timing_info",
            message: "the health check found the stream to \"\(device)\" \(what) (sink "
                + "\(currentSinkName ?? "unknown")) — Vigil reopens it; `pactl list sink-inputs` shows its state")
    }

    // MARK: Errors

    /// An ``AudioError`` for libpulse error `code` from `function`, with the errno it corresponds
    /// to and a remedy.
    private func pulseError(_ kind: AudioError.Code, _ function: String, _ code: Int32) -> AudioError {
        let text = String(cString: pa_strerror(code))
        let errnoValue: Int32
        let remedy: String
        let server = "at \(configuration.serverList)"
        switch UInt32(bitPattern: code) {
        case PA_ERR_CONNECTIONREFUSED.rawValue, PA_ERR_INVALIDSERVER.rawValue:
            errnoValue = ECONNREFUSED
            remedy =
                "no sound server answers \(server): start PulseAudio or pipewire-pulse (`pactl info` must answer), "
                + "or set `device` to an ALSA PCM"
        case PA_ERR_CONNECTIONTERMINATED.rawValue, PA_ERR_KILLED.rawValue:
            errnoValue = EIO
            remedy =
                "the sound server went away or the stream's sink was removed; check `pactl info` and `pactl list short sinks`"
        case PA_ERR_NOENTITY.rawValue:
            errnoValue = ENOENT
            remedy =
                sink.map { "the server has no sink named \"\($0)\": pick one from `pactl list short sinks`" }
                ?? "the server has no sink to play to: connect a sound card or load one (`pactl load-module module-null-sink`)"
        case PA_ERR_ACCESS.rawValue, PA_ERR_AUTHKEY.rawValue:
            errnoValue = EACCES
            remedy =
                "the server refused this client: run Vigil as the user who owns the sound server, "
                + "or give it the server's cookie (~/.config/pulse/cookie)"
        case PA_ERR_TIMEOUT.rawValue:
            errnoValue = ETIMEDOUT
            remedy =
                "the sound server did not answer within \(Self.connectTimeoutMicroseconds / 1_000_000) s: check that it is not hung (`pactl info`)"
        default:
            errnoValue = EIO
            remedy = "check the sound server with `pactl info` and `pactl list short sinks`"
        }
        return AudioError(
            code: kind, function: function, errno: errnoValue,
            message: "\(function) on \"\(device)\" failed: \(text) — \(remedy)")
    }
}
