internal import CPulse
public import Logging
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// A PulseAudio-protocol client (PulseAudio or pipewire-pulse) for what announcements need:
/// the other apps' streams and their volumes, module-stream-restore's saved entries, change
/// notifications, and playing one prompt.
///
/// Every call blocks until the server answered (or ``timeoutMicroseconds`` passed) and runs
/// libpulse's main loop on the calling thread: use one mixer from one thread you own, never
/// from Swift's cooperative pool. libpulse starts no thread of its own.
public final class PulseMixer {
    /// A playing stream of some client (a sink input).
    public struct SinkInput: Sendable, Hashable {
        /// The server's index for it (unique until the server restarts).
        public var index: UInt32
        /// The sink it plays to.
        public var sink: UInt32
        /// Its volume, one `pa_volume_t` per channel (65536 = 100 %).
        public var volume: [UInt32]
        /// Whether its volume can be changed at all (passthrough streams cannot).
        public var volumeWritable: Bool
        /// Muted by someone.
        public var muted: Bool
        /// Paused by its client.
        public var corked: Bool
        /// All its properties (`application.name`, `media.role`, `module-stream-restore.id`…).
        public var properties: [String: String]

        /// `application.name`.
        public var applicationName: String? { properties["application.name"] }
        /// `media.role`.
        public var mediaRole: String? { properties["media.role"] }
        /// The key module-stream-restore saves its volume under (`module-stream-restore.id`).
        public var restoreID: String? { properties["module-stream-restore.id"] }

        /// Creates a description (tests).
        public init(
            index: UInt32, sink: UInt32 = 0, volume: [UInt32], volumeWritable: Bool = true, muted: Bool = false,
            corked: Bool = false, properties: [String: String] = [:]
        ) {
            self.index = index
            self.sink = sink
            self.volume = volume
            self.volumeWritable = volumeWritable
            self.muted = muted
            self.corked = corked
            self.properties = properties
        }
    }

    /// One entry of module-stream-restore's database.
    public struct RestoreEntry: Sendable, Hashable, Codable {
        /// Its key, for example `sink-input-by-media-role:music`.
        public var name: String
        /// The channel positions the volume is for (empty when no volume is saved).
        public var channelPositions: [Int32]
        /// The saved volume per channel (empty when none is saved).
        public var volume: [UInt32]
        /// The saved sink, if any.
        public var device: String?
        /// The saved mute state.
        public var muted: Bool

        /// Creates an entry.
        public init(name: String, channelPositions: [Int32], volume: [UInt32], device: String?, muted: Bool) {
            self.name = name
            self.channelPositions = channelPositions
            self.volume = volume
            self.device = device
            self.muted = muted
        }
    }

    /// What the server says about itself.
    public struct ServerInfo: Sendable, Hashable {
        /// `server_name`: "pulseaudio", or "PulseAudio (on PipeWire x.y.z)".
        public var name: String
        /// Its version.
        public var version: String
        /// A random number identifying this run of the server (stream indexes are only
        /// meaningful within one run).
        public var cookie: UInt32
        /// The default sink's name.
        public var defaultSink: String?

        /// True for pipewire-pulse.
        public var isPipeWire: Bool { name.contains("PipeWire") }
    }

    /// A loaded server module.
    public struct Module: Sendable, Hashable {
        /// For example `module-role-ducking`.
        public var name: String
        /// Its argument string (`trigger_roles=phone ducking_roles=music,video`).
        public var argument: String
    }

    /// A sink input came, changed or went (after ``subscribeToSinkInputs()``).
    public enum SinkInputChange: Sendable, Hashable {
        case new(UInt32)
        case changed(UInt32)
        case removed(UInt32)
    }

    /// How one prompt played.
    public struct Playback: Sendable, Hashable {
        /// Monotonic nanoseconds when the server reported that the prompt started playing
        /// (its first sample was mixed into the sink).
        public var startedAt: UInt64
        /// Monotonic nanoseconds when the server reported the prompt fully played.
        public var finishedAt: UInt64
        /// Underflows (the server ran out of prompt audio; audible gaps).
        public var underflows: Int
    }

    /// The `pa_volume_t` of 100 %.
    public static let normalVolume: UInt32 = 65536

    /// How long one request may take, in microseconds.
    public var timeoutMicroseconds: UInt64 = 5_000_000

    private let server: String
    private let applicationName: String
    private let logger: Logger
    private let mainloop: OpaquePointer
    private let api: UnsafeMutablePointer<pa_mainloop_api>
    private var context: OpaquePointer?
    private var subscribed = false
    private var changes: [SinkInputChange] = []

    /// Creates a mixer for `server`, a libpulse server string (`nil`: the system-wide socket
    /// only; a host passes the address its environment names, see
    /// ``SoundServer/serverList(_:)``). Nothing connects until ``connect()``.
    public init(server: String?, applicationName: String, logger: Logger) {
        self.server = server ?? SoundServer.systemAddress
        self.applicationName = applicationName
        self.logger = logger
        mainloop = pa_mainloop_new()!
        api = pa_mainloop_get_api(mainloop)!
    }

    deinit {
        disconnect()
        pa_mainloop_free(mainloop)
    }

    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private static func from(_ userdata: UnsafeMutableRawPointer?) -> PulseMixer {
        Unmanaged<PulseMixer>.fromOpaque(userdata!).takeUnretainedValue()
    }

    /// True while connected.
    public var isConnected: Bool {
        guard let context else { return false }
        return pa_context_get_state(context) == PA_CONTEXT_READY
    }

    /// Connects (does nothing when connected). The host's `PULSE_PROP*` variables are kept off
    /// the client (see `StreamIdentity`).
    public func connect() throws(AudioError) {
        if isConnected { return }
        disconnect()
        let properties = pa_proplist_new()
        pa_proplist_sets(properties, PA_PROP_APPLICATION_NAME, applicationName)
        context = pa_context_new_with_proplist(api, applicationName, properties)
        pa_proplist_free(properties)
        guard let context else {
            throw AudioError(
                code: .openFailed, function: "pa_context_new", message: "libpulse could not create a client context")
        }
        try StreamIdentity.withoutHostProperties { () throws(AudioError) -> Void in
            if pa_context_connect(context, server, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
                throw error(.openFailed, "pa_context_connect", pa_context_errno(context))
            }
            let deadline = MonotonicClock.nanoseconds() + timeoutMicroseconds * 1000
            while true {
                let state = pa_context_get_state(context)
                if state == PA_CONTEXT_READY { break }
                if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
                    throw error(.openFailed, "pa_context_connect", pa_context_errno(context))
                }
                if MonotonicClock.nanoseconds() > deadline {
                    throw error(.openFailed, "pa_context_connect", Int32(PA_ERR_TIMEOUT.rawValue))
                }
                iterate(microseconds: 100_000)
            }
        }
        pa_context_set_subscribe_callback(
            context,
            { _, type, index, userdata in
                PulseMixer.from(userdata).received(type.rawValue, index)
            }, userdata)
    }

    /// Disconnects; safe to call when not connected.
    public func disconnect() {
        if let context {
            pa_context_set_subscribe_callback(context, nil, nil)
            pa_context_disconnect(context)
            pa_context_unref(context)
        }
        context = nil
        subscribed = false
        changes = []
    }

    // MARK: Queries

    /// The server's name, version, run cookie and default sink.
    public func serverInfo() throws(AudioError) -> ServerInfo {
        let box = Box<ServerInfo?>(nil)
        let op = pa_context_get_server_info(
            try readyContext(),
            { _, info, userdata in
                guard let info else { return }
                let box = Unmanaged<Box<ServerInfo?>>.fromOpaque(userdata!).takeUnretainedValue()
                box.value = ServerInfo(
                    name: info.pointee.server_name.map { String(cString: $0) } ?? "",
                    version: info.pointee.server_version.map { String(cString: $0) } ?? "",
                    cookie: info.pointee.cookie,
                    defaultSink: info.pointee.default_sink_name.map { String(cString: $0) })
            }, box.pointer)
        try wait(op, "pa_context_get_server_info")
        guard let info = box.value else {
            throw error(.streamFailed, "pa_context_get_server_info", Int32(PA_ERR_NODATA.rawValue))
        }
        return info
    }

    /// The loaded modules.
    public func modules() throws(AudioError) -> [Module] {
        let box = Box<[Module]>([])
        let op = pa_context_get_module_info_list(
            try readyContext(),
            { _, info, eol, userdata in
                guard eol == 0, let info else { return }
                let box = Unmanaged<Box<[Module]>>.fromOpaque(userdata!).takeUnretainedValue()
                box.value.append(
                    Module(
                        name: info.pointee.name.map { String(cString: $0) } ?? "",
                        argument: info.pointee.argument.map { String(cString: $0) } ?? ""))
            }, box.pointer)
        try wait(op, "pa_context_get_module_info_list")
        return box.value
    }

    /// Every sink input, in index order.
    public func sinkInputs() throws(AudioError) -> [SinkInput] {
        let box = Box<[SinkInput]>([])
        let op = pa_context_get_sink_input_info_list(
            try readyContext(),
            { _, info, eol, userdata in
                guard eol == 0, let info else { return }
                Unmanaged<Box<[SinkInput]>>.fromOpaque(userdata!).takeUnretainedValue().value.append(
                    PulseMixer.sinkInput(info))
            }, box.pointer)
        try wait(op, "pa_context_get_sink_input_info_list")
        return box.value.sorted { $0.index < $1.index }
    }

    /// The process ids the server's clients declared (`application.process.id`), so a caller can
    /// tell whether a process still has a connection (a dead client's requests are all handled
    /// once it is gone from this list).
    public func clientProcessIDs() throws(AudioError) -> [Int32] {
        let box = Box<[Int32]>([])
        let op = pa_context_get_client_info_list(
            try readyContext(),
            { _, info, eol, userdata in
                guard eol == 0, let info, let list = info.pointee.proplist,
                    let value = pa_proplist_gets(list, PA_PROP_APPLICATION_PROCESS_ID),
                    let pid = Int32(String(cString: value))
                else { return }
                Unmanaged<Box<[Int32]>>.fromOpaque(userdata!).takeUnretainedValue().value.append(pid)
            }, box.pointer)
        try wait(op, "pa_context_get_client_info_list")
        return box.value
    }

    /// The sink input `index`, or `nil` when it is gone.
    public func sinkInput(_ index: UInt32) throws(AudioError) -> SinkInput? {
        let box = Box<SinkInput?>(nil)
        let op = pa_context_get_sink_input_info(
            try readyContext(), index,
            { _, info, eol, userdata in
                guard eol == 0, let info else { return }
                Unmanaged<Box<SinkInput?>>.fromOpaque(userdata!).takeUnretainedValue().value = PulseMixer.sinkInput(
                    info)
            }, box.pointer)
        // A missing index fails the operation with PA_ERR_NOENTITY: that is the answer "gone".
        do {
            try wait(op, "pa_context_get_sink_input_info")
        } catch {
            if let context, pa_context_errno(context) == Int32(PA_ERR_NOENTITY.rawValue), isConnected { return nil }
            throw error
        }
        return box.value
    }

    private static func sinkInput(_ info: UnsafePointer<pa_sink_input_info>) -> SinkInput {
        var properties: [String: String] = [:]
        if let list = info.pointee.proplist {
            var state: UnsafeMutableRawPointer?
            while let key = pa_proplist_iterate(list, &state) {
                if let value = pa_proplist_gets(list, key) { properties[String(cString: key)] = String(cString: value) }
            }
        }
        return SinkInput(
            index: info.pointee.index, sink: info.pointee.sink, volume: volumes(info.pointee.volume),
            volumeWritable: info.pointee.volume_writable != 0, muted: info.pointee.mute != 0,
            corked: info.pointee.corked != 0, properties: properties)
    }

    // MARK: Volumes

    /// Sets sink input `index` to `volume` (one value per channel) and waits for the server's
    /// answer. Returns false when the stream is gone.
    @discardableResult
    public func setVolume(_ volume: [UInt32], of index: UInt32) throws(AudioError) -> Bool {
        var cvolume = Self.cvolume(volume)
        let box = Box<Bool>(false)
        let op = pa_context_set_sink_input_volume(
            try readyContext(), index, &cvolume,
            { _, success, userdata in
                Unmanaged<Box<Bool>>.fromOpaque(userdata!).takeUnretainedValue().value = success != 0
            }, box.pointer)
        try wait(op, "pa_context_set_sink_input_volume")
        return box.value
    }

    /// `volume` scaled by the linear amplitude `factor` (0–1), channel by channel.
    public static func scaled(_ volume: [UInt32], by factor: Double) -> [UInt32] {
        let f = pa_sw_volume_from_linear(max(0, min(1, factor)))
        return volume.map { pa_sw_volume_multiply($0, f) }
    }

    /// The linear amplitude of `volume` (1.0 = 100 %).
    public static func linear(_ volume: UInt32) -> Double { pa_sw_volume_to_linear(volume) }

    // MARK: module-stream-restore

    /// module-stream-restore's entries, or `nil` when the module is not loaded.
    public func restoreEntries() throws(AudioError) -> [RestoreEntry]? {
        let box = Box<[RestoreEntry]>([])
        let op = pa_ext_stream_restore_read(
            try readyContext(),
            { _, info, eol, userdata in
                guard eol == 0, let info else { return }
                let entry = RestoreEntry(
                    name: info.pointee.name.map { String(cString: $0) } ?? "",
                    channelPositions: PulseMixer.positions(info.pointee.channel_map),
                    volume: PulseMixer.volumes(info.pointee.volume),
                    device: info.pointee.device.map { String(cString: $0) }, muted: info.pointee.mute != 0)
                Unmanaged<Box<[RestoreEntry]>>.fromOpaque(userdata!).takeUnretainedValue().value.append(entry)
            }, box.pointer)
        do {
            try wait(op, "pa_ext_stream_restore_read")
        } catch {
            // Without the module the server refuses the extension command.
            if isConnected { return nil }
            throw error
        }
        return box.value
    }

    /// Writes `entries` into module-stream-restore's database, each replacing the entry of its
    /// name (other entries are kept; nothing is applied to playing streams).
    public func writeRestoreEntries(_ entries: [RestoreEntry]) throws(AudioError) {
        guard !entries.isEmpty else { return }
        var names: [UnsafeMutablePointer<CChar>?] = []
        var devices: [UnsafeMutablePointer<CChar>?] = []
        defer {
            for p in names { free(p) }
            for p in devices { free(p) }
        }
        var infos: [pa_ext_stream_restore_info] = []
        for entry in entries {
            let name = strdup(entry.name)
            let device = entry.device.map { strdup($0) } ?? nil
            names.append(name)
            devices.append(device)
            var info = pa_ext_stream_restore_info()
            info.name = UnsafePointer(name)
            info.device = UnsafePointer(device)
            info.channel_map = Self.channelMap(entry.channelPositions)
            info.volume = Self.cvolume(entry.volume)
            info.mute = entry.muted ? 1 : 0
            infos.append(info)
        }
        let box = Box<Bool>(false)
        let context = try readyContext()
        let op = infos.withUnsafeBufferPointer { buffer in
            pa_ext_stream_restore_write(
                context, PA_UPDATE_REPLACE, buffer.baseAddress, UInt32(buffer.count), 0,
                { _, success, userdata in
                    Unmanaged<Box<Bool>>.fromOpaque(userdata!).takeUnretainedValue().value = success != 0
                }, box.pointer)
        }
        try wait(op, "pa_ext_stream_restore_write")
        if !box.value { throw error(.streamFailed, "pa_ext_stream_restore_write", pa_context_errno(context)) }
    }

    /// Deletes the entries named `names` from module-stream-restore's database.
    public func deleteRestoreEntries(_ names: [String]) throws(AudioError) {
        guard !names.isEmpty else { return }
        var pointers: [UnsafePointer<CChar>?] = names.map { UnsafePointer(strdup($0)) }
        defer { for p in pointers { free(UnsafeMutablePointer(mutating: p)) } }
        pointers.append(nil)
        let box = Box<Bool>(false)
        let context = try readyContext()
        let op = pointers.withUnsafeBufferPointer { buffer in
            pa_ext_stream_restore_delete(
                context, buffer.baseAddress,
                { _, success, userdata in
                    Unmanaged<Box<Bool>>.fromOpaque(userdata!).takeUnretainedValue().value = success != 0
                }, box.pointer)
        }
        try wait(op, "pa_ext_stream_restore_delete")
        withExtendedLifetime(box) {}
    }

    // MARK: Change notifications

    /// Starts collecting sink-input changes (see ``takeChanges()``).
    public func subscribeToSinkInputs() throws(AudioError) {
        guard !subscribed else { return }
        let op = pa_context_subscribe(try readyContext(), PA_SUBSCRIPTION_MASK_SINK_INPUT, nil, nil)
        try wait(op, "pa_context_subscribe")
        subscribed = true
    }

    /// The changes seen since the last call, oldest first.
    public func takeChanges() -> [SinkInputChange] {
        defer { changes = [] }
        return changes
    }

    private func received(_ type: UInt32, _ index: UInt32) {
        guard type & PA_SUBSCRIPTION_EVENT_FACILITY_MASK.rawValue == PA_SUBSCRIPTION_EVENT_SINK_INPUT.rawValue else {
            return
        }
        switch type & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue {
        case PA_SUBSCRIPTION_EVENT_NEW.rawValue: changes.append(.new(index))
        case PA_SUBSCRIPTION_EVENT_CHANGE.rawValue: changes.append(.changed(index))
        case PA_SUBSCRIPTION_EVENT_REMOVE.rawValue: changes.append(.removed(index))
        default: break
        }
    }

    /// Runs the main loop for `microseconds`, collecting notifications (a sleep that listens).
    public func pump(microseconds: UInt64) {
        let deadline = MonotonicClock.nanoseconds() + microseconds * 1000
        while true {
            let now = MonotonicClock.nanoseconds()
            if now >= deadline { return }
            iterate(microseconds: Int32(min((deadline - now) / 1000 + 1, 1_000_000)))
        }
    }

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
            iterate(microseconds: 20_000)
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

    // MARK: Plumbing

    private func readyContext() throws(AudioError) -> OpaquePointer {
        guard let context, pa_context_get_state(context) == PA_CONTEXT_READY else {
            throw AudioError(
                code: .streamFailed, function: "pa_context",
                message: "the connection to the sound server is not open (it failed or was lost) — check that "
                    + "the server runs and answers: `pactl info`")
        }
        return context
    }

    /// Iterates until `op` is done; fails on a lost connection or after ``timeoutMicroseconds``.
    private func wait(_ op: OpaquePointer?, _ function: String) throws(AudioError) {
        let context = try readyContext()
        guard let op else { throw error(.streamFailed, function, pa_context_errno(context)) }
        defer { pa_operation_unref(op) }
        let deadline = MonotonicClock.nanoseconds() + timeoutMicroseconds * 1000
        while pa_operation_get_state(op) == PA_OPERATION_RUNNING {
            if pa_context_get_state(context) != PA_CONTEXT_READY {
                pa_operation_cancel(op)
                throw error(.streamFailed, function, pa_context_errno(context))
            }
            if MonotonicClock.nanoseconds() > deadline {
                pa_operation_cancel(op)
                throw error(.streamFailed, function, Int32(PA_ERR_TIMEOUT.rawValue))
            }
            iterate(microseconds: 100_000)
        }
        if pa_operation_get_state(op) == PA_OPERATION_CANCELLED {
            throw error(.streamFailed, function, pa_context_errno(context))
        }
    }

    private func iterate(microseconds: Int32) {
        if pa_mainloop_prepare(mainloop, microseconds) < 0 { return }
        if pa_mainloop_poll(mainloop) < 0 { return }
        _ = pa_mainloop_dispatch(mainloop)
    }

    private func error(_ kind: AudioError.Code, _ function: String, _ code: Int32) -> AudioError {
        let text = String(cString: pa_strerror(code))
        let at = "at \(server)"
        let errnoValue: Int32
        let remedy: String
        switch UInt32(bitPattern: code) {
        case PA_ERR_CONNECTIONREFUSED.rawValue, PA_ERR_INVALIDSERVER.rawValue:
            errnoValue = ECONNREFUSED
            remedy = "no sound server answers \(at): start PulseAudio or pipewire-pulse (`pactl info` must answer)"
        case PA_ERR_TIMEOUT.rawValue:
            errnoValue = ETIMEDOUT
            remedy = "the sound server \(at) did not answer in time: check that it is not hung (`pactl info`)"
        case PA_ERR_NOENTITY.rawValue:
            errnoValue = ENOENT
            remedy = "the server has no such sink or stream: `pactl list short sinks` lists the sinks"
        case PA_ERR_ACCESS.rawValue, PA_ERR_AUTHKEY.rawValue:
            errnoValue = EACCES
            remedy = "the server refused this client: run as the user who owns the sound server"
        default:
            errnoValue = EIO
            remedy = "check the sound server with `pactl info`"
        }
        return AudioError(
            code: kind, function: function, errno: errnoValue, message: "\(function) failed: \(text) — \(remedy)")
    }

    static func volumes(_ volume: pa_cvolume) -> [UInt32] {
        fixedArray(volume.values, count: volume.channels, of: UInt32.self)
    }

    static func cvolume(_ values: [UInt32]) -> pa_cvolume {
        var volume = pa_cvolume()
        volume.channels = store(values, into: &volume.values)
        return volume
    }

    static func positions(_ map: pa_channel_map) -> [Int32] {
        fixedArray(map.map, count: map.channels, of: Int32.self)
    }

    static func channelMap(_ positions: [Int32]) -> pa_channel_map {
        var map = pa_channel_map()
        map.channels = store(positions, into: &map.map)
        return map
    }

    /// The first `count` (at most `PA_CHANNELS_MAX`) elements of a per-channel C array, which
    /// Swift imports as a tuple of `Element`.
    private static func fixedArray<Tuple, Element>(_ tuple: Tuple, count: UInt8, of _: Element.Type) -> [Element] {
        let count = Int(min(count, UInt8(PA_CHANNELS_MAX)))
        return withUnsafeBytes(of: tuple) { Array($0.bindMemory(to: Element.self).prefix(count)) }
    }

    /// Stores the first `PA_CHANNELS_MAX` of `values` into a per-channel C array (a tuple of
    /// `Element`); returns how many it stored, the channel count.
    private static func store<Tuple, Element>(_ values: [Element], into tuple: inout Tuple) -> UInt8 {
        let count = min(values.count, Int(PA_CHANNELS_MAX))
        withUnsafeMutableBytes(of: &tuple) { raw in
            let slots = raw.bindMemory(to: Element.self)
            for i in 0..<count { slots[i] = values[i] }
        }
        return UInt8(count)
    }
}

/// A reference cell handed to libpulse callbacks as userdata (kept alive by the caller until
/// the operation is done).
private final class Box<T> {
    var value: T
    init(_ value: T) { self.value = value }
    var pointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
}
