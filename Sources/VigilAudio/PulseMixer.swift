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
    /// The `pa_volume_t` of 100 %.
    public static let normalVolume: UInt32 = 65536

    /// How long one request may take, in microseconds.
    public var timeoutMicroseconds: UInt64 {
        get { connection.timeoutMicroseconds }
        set { connection.timeoutMicroseconds = newValue }
    }

    /// The client connection: mainloop, context, connect deadline, error table.
    let connection: PulseConnection
    private let logger: Logger
    private var subscribed = false
    private var changes: [SinkInputChange] = []

    /// Creates a mixer for `server`, a libpulse server string (`nil`: the system-wide socket
    /// only; a host passes the address its environment names, see
    /// ``SoundServer/serverList(_:)``). Nothing connects until ``connect()``.
    public init(server: String?, applicationName: String, logger: Logger) {
        connection = PulseConnection(server: server ?? SoundServer.systemAddress, applicationName: applicationName)
        self.logger = logger
    }

    deinit {
        disconnect()
    }

    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private static func from(_ userdata: UnsafeMutableRawPointer?) -> PulseMixer {
        Unmanaged<PulseMixer>.fromOpaque(userdata!).takeUnretainedValue()
    }

    /// True while connected.
    public var isConnected: Bool { connection.isReady }

    /// Connects (does nothing when connected), within ``timeoutMicroseconds``. The host's
    /// `PULSE_PROP*` variables are kept off the client (see `StreamIdentity`).
    public func connect() throws(AudioError) {
        if isConnected { return }
        disconnect()
        try connection.connect(deadline: PulseConnection.now + timeoutMicroseconds)
        pa_context_set_subscribe_callback(
            try readyContext(),
            { _, type, index, userdata in
                PulseMixer.from(userdata).received(type.rawValue, index)
            }, userdata)
    }

    /// Disconnects; safe to call when not connected.
    public func disconnect() {
        connection.disconnect()
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
            if connection.errorCode == Int32(PA_ERR_NOENTITY.rawValue), isConnected { return nil }
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
        let deadline = PulseConnection.now + microseconds
        while true {
            let now = PulseConnection.now
            if now >= deadline { return }
            connection.iterate(timeoutMicroseconds: Int32(min(deadline - now, 1_000_000)))
        }
    }

    // MARK: Plumbing

    func readyContext() throws(AudioError) -> OpaquePointer { try connection.readyContext() }

    func wait(_ operation: OpaquePointer?, _ function: String) throws(AudioError) {
        try connection.wait(operation, function)
    }

    func error(_ kind: AudioErrorCode, _ function: String, _ code: Int32) -> AudioError {
        connection.error(kind, function, code)
    }
}

/// A reference cell handed to libpulse callbacks as userdata (kept alive by the caller until
/// the operation is done).
private final class Box<T> {
    var value: T
    init(_ value: T) { self.value = value }
    var pointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
}
