internal import CPulse

/// What a ``PulseMixer`` reports and takes: streams, module-stream-restore entries, the server,
/// its modules, change notifications, a played prompt; and the conversions between libpulse's
/// per-channel C arrays and Swift arrays.
extension PulseMixer {
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

    /// `volume` scaled by the linear amplitude `factor` (0–1), channel by channel.
    public static func scaled(_ volume: [UInt32], by factor: Double) -> [UInt32] {
        let f = pa_sw_volume_from_linear(max(0, min(1, factor)))
        return volume.map { pa_sw_volume_multiply($0, f) }
    }

    /// The linear amplitude of `volume` (1.0 = 100 %).
    public static func linear(_ volume: UInt32) -> Double { pa_sw_volume_to_linear(volume) }

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
