@_exported public import VigilBase

/// Why a soundscape control was refused.
public typealias SoundscapeError = CodedError<SoundscapeErrorCode>

/// The kind of a ``SoundscapeError``, stable for the control channel and the CLI.
public enum SoundscapeErrorCode: String, ErrorCode, Codable {
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
    /// The host could not take the request now (every control connection in use, or no answer
    /// in time); trying again later may work.
    case busy = "soundscape-busy"
}
