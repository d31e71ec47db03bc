@_exported public import VigilBase

/// Why an announcement failed, or why a journal could not be restored: a stable code, the
/// cause and the remedy.
public typealias AnnounceError = CodedError<AnnounceErrorCode>

/// The kind of an ``AnnounceError``, stable for callers, tests and exit codes.
public enum AnnounceErrorCode: String, ErrorCode, CaseIterable {
    /// The prompt cannot be played (empty, bad rate, bad text, unknown voice).
    case invalidPrompt = "invalid-prompt"
    /// `[announce]` in vigil.toml is invalid.
    case invalidSettings = "invalid-settings"
    /// espeak-ng could not speak the text.
    case speechFailed = "speech-failed"
    /// The sound server is unreachable or failed during the prompt.
    case soundServer = "sound-server"
    /// `pause-spoken` could not reach the session bus.
    case sessionBus = "session-bus"
    /// The journal of ducked volumes could not be written or read; nothing was lowered.
    case journal = "journal"
    /// The journal, its lock or a directory above them is a symbolic link, another user's, or
    /// writable by others (StrictModes); nothing was read from it or lowered.
    case stateUnsafe = "state-unsafe"
    /// Another announcement held the announce lock past its own deadline (or past the longest
    /// a prompt may take); nothing was lowered.
    case busy = "busy"
    /// The host stopped the announcer, or the task that asked for the prompt was cancelled.
    case cancelled = "cancelled"
}
