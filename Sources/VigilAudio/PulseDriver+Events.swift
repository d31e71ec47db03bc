internal import CPulse
import Logging
import VigilBase

/// What the keep-alive stream hears while it plays: the health check (due only when the server sent
/// no request for a whole interval), the sink suspended by someone else, and the server's cork
/// requests (PulseAudio's role-cork during a phone call).
extension PulseDriver {
    /// A request proves the stream advanced: the next check is a whole interval away, and it
    /// starts from a fresh baseline.
    func postponeHealthCheck() {
        guard !opening, let timer, let context = connection.context else { return }
        pa_context_rttime_restart(context, timer, PulseConnection.now + healthCheckMicroseconds)
        lastReadIndex = nil
    }

    /// A stream event: `request-cork` / `request-uncork` (PulseAudio's role-cork during a phone call).
    func serverEvent(_ name: UnsafePointer<CChar>?) {
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

    func liftCorkRequest() {
        corkRequested = false
        watchMute(false)
        logger.info("The sound server lifted its cork request")
        stream.serverRequested(.uncork)
    }

    /// PulseAudio's role-cork mutes the stream with its cork request, but sends `request-uncork`
    /// only to streams that obeyed and corked; a keep-alive never corks, so while a request stands
    /// the driver watches its own sink input and takes the unmute as the end of the request.
    func watchMute(_ on: Bool) {
        guard let context = connection.context else { return }
        if on {
            pa_context_set_subscribe_callback(
                context, { _, event, index, userdata in PulseDriver.from(userdata).sinkInputChanged(event, index) },
                userdata)
        }
        let mask = on ? PA_SUBSCRIPTION_MASK_SINK_INPUT : PA_SUBSCRIPTION_MASK_NULL
        if let operation = pa_context_subscribe(context, mask, nil, nil) { pa_operation_unref(operation) }
        if !on { pa_context_set_subscribe_callback(context, nil, nil) }
    }

    func sinkInputChanged(_ event: pa_subscription_event_type_t, _ index: UInt32) {
        guard corkRequested, let context = connection.context, let paStream, index == pa_stream_get_index(paStream),
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

    func unmuted() {
        if corkRequested { liftCorkRequest() }
    }

    func underflowed() {
        stream.underran()
        logger.warning("Keep-alive stream underran; the server refills it from the next write")
    }

    func moved() {
        logger.info("Keep-alive stream moved to another sink", metadata: ["audio.sink": "\(currentSinkName ?? "?")"])
    }

    /// The server says the stream's sink was suspended or resumed. A playing keep-alive keeps
    /// its sink from suspending on idle, so a suspension comes from someone else (`pactl
    /// suspend-sink`, a system policy): it is an interruption the stream rides out connected.
    func suspendedChanged() {
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

    func enterSuspension() {
        guard !sinkSuspended else { return }
        sinkSuspended = true
        lastReadIndex = nil
        let sinkName = currentSinkName ?? "unknown"
        logger.warning(
            "The keep-alive stream's sink was suspended by someone else",
            metadata: ["audio.sink": "\(sinkName)", OperatorEvent.metadataKey: "\(OperatorEvent.sinkSuspended)"])
        stream.sinkSuspended()
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
    func timerFired() {
        guard let context = connection.context else { return }
        if opening {
            fail(connection.error(.openFailed, "pa_context_connect", Int32(PA_ERR_TIMEOUT.rawValue)))
            return
        }
        if let timer { pa_context_rttime_restart(context, timer, PulseConnection.now + healthCheckMicroseconds) }
        guard let paStream else { return }
        stream.update { $0.healthCheckRoundTrips += 1 }
        if let operation = pa_stream_update_timing_info(
            paStream, { _, success, userdata in PulseDriver.from(userdata).checkHealth(success: success != 0) },
            userdata)
        {
            pa_operation_unref(operation)
        }
    }

    func checkHealth(success: Bool) {
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

    func notPlaying(_ what: String) -> AudioError {
        logger.warning(
            "Health check: the keep-alive stream is \(what)", metadata: ["audio.sink": "\(currentSinkName ?? "?")"])
        return AudioError(
            code: .notRunning, function: "pa_stream_update_timing_info",
            message: "the health check found the stream to \"\(device)\" \(what) (sink "
                + "\(currentSinkName ?? "unknown")) — Vigil reopens it; `pactl list sink-inputs` shows its state")
    }
}
