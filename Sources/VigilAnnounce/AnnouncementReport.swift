/// Another app's stream an announcement lowered.
public struct DuckedStream: Sendable, Hashable {
    /// The server's index of the stream (a sink input).
    public var index: UInt32
    /// Its `application.name`.
    public var application: String?
    /// Its `media.role`.
    public var role: String?
    /// Its volume before (per channel, 65536 = 100 %).
    public var originalVolume: [UInt32]
    /// The volume Vigil lowered it to.
    public var duckedVolume: [UInt32]

    /// Creates a description.
    public init(index: UInt32, application: String?, role: String?, originalVolume: [UInt32], duckedVolume: [UInt32]) {
        self.index = index
        self.application = application
        self.role = role
        self.originalVolume = originalVolume
        self.duckedVolume = duckedVolume
    }
}

/// Who lowered the other apps for a prompt.
public enum DuckMethod: Sendable, Hashable, CustomStringConvertible {
    /// Nobody (`mix`, `pause-spoken`).
    case none
    /// Vigil, stream by stream.
    case client
    /// The server's `module-role-ducking`, triggered by the prompt's role.
    case server(role: String)

    public var description: String {
        switch self {
        case .none: "none"
        case .client: "client"
        case .server(let role): "server (role \(role))"
        }
    }
}

/// How an announcement went.
public struct AnnouncementReport: Sendable, Hashable {
    /// The announcement's number in this process.
    public var id: UInt64
    /// The policy it played with.
    public var policy: AnnouncementPolicy
    /// Who ducked.
    public var method: DuckMethod
    /// The streams lowered, including ones that started during the prompt.
    public var ducked: [DuckedStream]
    /// The streams put back to their volume.
    public var restored: [UInt32]
    /// The streams whose volume someone changed during the prompt: left as they were.
    public var keptUserChange: [UInt32]
    /// The streams that went away during the prompt (their saved volume was put back).
    public var gone: [UInt32]
    /// The MPRIS players paused for the prompt (bus names); each was resumed unless someone
    /// changed its state meanwhile.
    public var pausedPlayers: [String]
    /// From the call to the server starting the prompt's first sample, in milliseconds.
    public var firstSampleMilliseconds: Double
    /// How long lowering took (journal and ramp), in milliseconds.
    public var duckMilliseconds: Double
    /// How long restoring took, in milliseconds.
    public var restoreMilliseconds: Double
    /// The prompt's length in seconds.
    public var promptSeconds: Double
    /// Underflows while the prompt played (audible gaps; 0 normally).
    public var underflows: Int
}

/// What a restore from a journal left by a killed process did.
public struct RecoveryReport: Sendable, Hashable {
    /// The process that left the journal.
    public var pid: Int32
    /// Streams put back to their volume.
    public var restored: [UInt32]
    /// Streams someone changed meanwhile: left alone.
    public var keptUserChange: [UInt32]
    /// module-stream-restore entries put back (or removed, when Vigil had created them).
    public var restoreEntries: [String]
}

/// A change in the announcer, on ``Announcer/events``.
public enum AnnouncementEvent: Sendable, Hashable {
    /// The prompt's first sample is playing; `ducked` are the streams lowered for it.
    case started(id: UInt64, method: DuckMethod, ducked: [DuckedStream], firstSampleMilliseconds: Double)
    /// A stream that started during the prompt was lowered too.
    case duckedLate(id: UInt64, stream: DuckedStream)
    /// The prompt played and everything was put back.
    case finished(AnnouncementReport)
    /// The prompt failed; whatever was lowered was put back.
    case failed(id: UInt64, error: AnnounceError)
    /// Volumes left lowered by a killed process were put back.
    case recovered(RecoveryReport)
}
