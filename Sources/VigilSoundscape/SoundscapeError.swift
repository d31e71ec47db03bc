/// Why a soundscape control was refused.
public struct SoundscapeError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, Codable {
        /// No soundscape of that name is configured.
        case unknownSoundscape = "soundscape-unknown"
        /// A volume outside 0…1, or an unknown preset.
        case invalidVolume = "soundscape-invalid-volume"
        /// A sleep timer outside 0…1440 minutes.
        case invalidSleepTimer = "soundscape-invalid-sleep-timer"
        /// The soundscape's file cannot be played.
        case fileUnavailable = "soundscape-file-unavailable"
        /// The soundscape plugin is not running (in this process, or in the host the CLI asked).
        case notRunning = "soundscape-not-running"
        /// The control channel failed or answered something unexpected.
        case controlChannel = "soundscape-control-channel"
    }

    public var code: Code
    public var message: String
    public var function: String

    public init(code: Code, message: String, function: String = #function) {
        self.code = code
        self.message = message
        self.function = function
    }

    public var description: String { "[\(code.rawValue)] \(message)" }
}
