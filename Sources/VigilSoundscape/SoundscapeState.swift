/// A snapshot of the soundscape player, for the host app, the CLI and MPRIS.
public struct SoundscapeState: Sendable, Hashable, Codable {
    /// MPRIS-style playback status.
    public enum Playback: String, Sendable, Hashable, Codable {
        case playing = "Playing"
        case paused = "Paused"
        case stopped = "Stopped"
    }

    /// The soundscape's id.
    public var soundscape: String
    /// Its title.
    public var title: String
    /// The volume 0…1.
    public var volume: Double
    /// The preset whose volume this is, if any.
    public var preset: VolumePreset?
    /// Playing, paused (by the user or the sleep timer) or stopped; in every case the stream keeps running.
    public var playback: Playback
    /// The sound server asked the stream to be quiet (a phone call): faded to silence until it lifts the request.
    public var interrupted: Bool
    /// The sleep timer ran out: silent until Play.
    public var asleep: Bool
    /// Seconds until the sleep timer ends (its 30 s fade-out included), when one is set.
    public var sleepTimerRemaining: Double?
}
