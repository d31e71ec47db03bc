internal import CPulse
import VigilBase

extension PulseMixer {
    // MARK: Playing a prompt

    /// Plays `audio` as one new stream with `properties` (`media.role`…) on `sink` (`nil`: the
    /// default sink) and returns once it has played: all of it sent and its length passed since
    /// the server started it (or the stream drained, whichever comes first).
    ///
    /// - Parameters:
    ///   - started: called (on this thread) when the server starts playing the prompt.
    ///   - tick: called about every 20 ms while the prompt plays (for handling notifications).
    ///   - cancelled: polled as often; `true` stops the prompt at once.
    public func play(
        _ audio: PromptAudio, properties: [String: String], sink: String?,
        started: (UInt64) -> Void, tick: () -> Void, cancelled: () -> Bool
    ) throws(AudioError) -> Playback {
        try audio.validate()
        let context = try readyContext()
        var spec = pa_sample_spec(
            format: PA_SAMPLE_S16LE, rate: UInt32(audio.sampleRate), channels: UInt8(audio.channels))
        let list = pa_proplist_new()
        for (key, value) in properties { pa_proplist_sets(list, key, value) }
        let stream = pa_stream_new_with_proplist(context, properties["media.name"] ?? "announcement", &spec, nil, list)
        pa_proplist_free(list)
        guard let stream else { throw error(.openFailed, "pa_stream_new", pa_context_errno(context)) }
        let player = PromptWriter(audio: audio, stream: stream)
        let raw = Unmanaged.passUnretained(player).toOpaque()
        // play() may return before the drain is acknowledged: its callback must not outlive `player`.
        var drainOperation: OpaquePointer?
        defer {
            if let drainOperation {
                pa_operation_cancel(drainOperation)
                pa_operation_unref(drainOperation)
            }
            pa_stream_set_state_callback(stream, nil, nil)
            pa_stream_set_write_callback(stream, nil, nil)
            pa_stream_set_started_callback(stream, nil, nil)
            pa_stream_set_underflow_callback(stream, nil, nil)
            pa_stream_disconnect(stream)
            pa_stream_unref(stream)
        }
        pa_stream_set_write_callback(
            stream,
            { _, bytes, userdata in Unmanaged<PromptWriter>.fromOpaque(userdata!).takeUnretainedValue().write(bytes) },
            raw)
        pa_stream_set_started_callback(
            stream,
            { _, userdata in Unmanaged<PromptWriter>.fromOpaque(userdata!).takeUnretainedValue().markStarted() }, raw)
        pa_stream_set_underflow_callback(
            stream,
            { _, userdata in Unmanaged<PromptWriter>.fromOpaque(userdata!).takeUnretainedValue().underflows += 1 }, raw)

        let frameBytes = audio.channels * 2
        let bytesPer10ms = audio.sampleRate / 100 * frameBytes
        let total = audio.samples.count * 2
        // The stream asks for as much buffer as the keep-alive (2 s, no PA_STREAM_ADJUST_LATENCY),
        // so the sink keeps its latency and with it its rewind range: when the prompt's first
        // data arrives the server rewinds the sink and mixes it in at once. A low-latency
        // request would shrink the sink's rewind range first, and the prompt would wait for
        // the audio the sink had already mixed ahead (up to its whole latency, ~1.75 s with
        // the keep-alive's 2 s buffer; measured). Playback starts as soon as 20 ms are there.
        let target = UInt32(200 * bytesPer10ms)
        var attributes = pa_buffer_attr(
            maxlength: UInt32.max, tlength: target, prebuf: UInt32(min(total, 2 * bytesPer10ms)),
            minreq: UInt32.max, fragsize: UInt32.max)
        let flags = pa_stream_flags_t(rawValue: PA_STREAM_START_UNMUTED.rawValue)
        if pa_stream_connect_playback(stream, sink, &attributes, flags, nil, nil) < 0 {
            throw error(.openFailed, "pa_stream_connect_playback", pa_context_errno(context))
        }
        let playTimeout = UInt64((audio.duration + 5) * 1e9) + timeoutMicroseconds * 1000
        let deadline = MonotonicClock.nanoseconds() + playTimeout
        var drainRequested = false
        var lastTick = MonotonicClock.nanoseconds()
        while !player.drained {
            switch pa_stream_get_state(stream) {
            case PA_STREAM_FAILED, PA_STREAM_TERMINATED:
                throw error(.streamFailed, "pa_stream_connect_playback", pa_context_errno(context))
            default: break
            }
            if !isConnected { throw error(.streamFailed, "pa_context", pa_context_errno(context)) }
            if let at = player.startedAt, !player.reportedStart {
                player.reportedStart = true
                started(at)
            }
            if player.written == total, !drainRequested, pa_stream_get_state(stream) == PA_STREAM_READY {
                drainRequested = true
                let op: OpaquePointer? = pa_stream_drain(
                    stream,
                    { _, _, userdata in
                        let writer = Unmanaged<PromptWriter>.fromOpaque(userdata!).takeUnretainedValue()
                        if writer.drainAckedAt == nil { writer.drainAckedAt = MonotonicClock.nanoseconds() }
                    }, raw)
                drainOperation = op
            }
            // Played: every sample was sent and the prompt's length has passed since the server
            // started it (the rewind put its first sample at the sink's play position). Waiting
            // for the drain would also wait out the sink's rewind history — up to its whole
            // latency (~1.7 s with the keep-alive) after the last sample was heard.
            // (Without a "started" notification, the drain's acknowledgement stands in for it.)
            if drainRequested, let at = player.startedAt ?? player.drainAckedAt,
                MonotonicClock.nanoseconds() >= at + UInt64((audio.duration + 0.03) * 1e9)
            {
                player.drained = true
                player.finishedAt = MonotonicClock.nanoseconds()
                break
            }
            if cancelled() {
                throw AudioError(
                    code: .streamFailed, function: nil, message: "the prompt was cancelled before it finished")
            }
            if MonotonicClock.nanoseconds() > deadline {
                throw error(.streamFailed, "pa_stream_drain", Int32(PA_ERR_TIMEOUT.rawValue))
            }
            connection.iterate(timeoutMicroseconds: 20_000)
            if MonotonicClock.nanoseconds() - lastTick >= 15_000_000 {
                lastTick = MonotonicClock.nanoseconds()
                tick()
            }
        }
        let startedAt = player.startedAt ?? player.finishedAt
        if !player.reportedStart { started(startedAt) }
        return Playback(startedAt: startedAt, finishedAt: player.finishedAt, underflows: player.underflows)
    }

    /// Feeds one prompt stream from libpulse's callbacks.
    private final class PromptWriter {
        let audio: PromptAudio
        let stream: OpaquePointer
        var written = 0
        var startedAt: UInt64?
        var reportedStart = false
        var drained = false
        var drainAckedAt: UInt64?
        var finishedAt: UInt64 = 0
        var underflows = 0

        init(audio: PromptAudio, stream: OpaquePointer) {
            self.audio = audio
            self.stream = stream
        }

        func markStarted() {
            if startedAt == nil { startedAt = MonotonicClock.nanoseconds() }
        }

        func write(_ bytes: Int) {
            let total = audio.samples.count * 2
            let count = min(bytes, total - written)
            guard count > 0 else { return }
            audio.samples.withUnsafeBytes { raw in
                _ = pa_stream_write(stream, raw.baseAddress! + written, count, nil, 0, PA_SEEK_RELATIVE)
            }
            written += count
        }
    }
}
