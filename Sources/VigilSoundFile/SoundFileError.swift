@_exported public import VigilBase

/// Why a sound file could not be opened or decoded.
public struct SoundFileError: StructuredError, Hashable {
    /// What kind of failure this is.
    public enum Code: String, ErrorCode {
        /// No file at the path.
        case notFound = "sound-file-not-found"
        /// The file exists but cannot be read (permissions, or it is a directory).
        case unreadable = "sound-file-unreadable"
        /// Not a format libsndfile knows (WAV, FLAC, Ogg Vorbis, Opus, MP3, AIFF, …).
        case unrecognisedFormat = "sound-file-unrecognised-format"
        /// The container is recognised but damaged.
        case malformed = "sound-file-malformed"
        /// The container is fine but its encoding is not supported.
        case unsupportedEncoding = "sound-file-unsupported-encoding"
        /// The file holds no audio frames.
        case empty = "sound-file-empty"
        /// Decoding failed part-way, or a seek failed.
        case decodeFailed = "sound-file-decode-failed"
        /// Writing a new file failed.
        case writeFailed = "sound-file-write-failed"
        /// A parameter was out of range (the message says which).
        case invalidArgument = "sound-file-invalid-argument"
    }

    public var code: Code
    /// The file concerned.
    public var path: String
    /// What happened and how to fix it.
    public var message: String
    /// The failed system call and its `Errno` (a ``SystemCallError``), when the system reported one.
    public var cause: ErrorCause?
    /// Where the failure was detected.
    public var function: String

    public init(
        code: Code, path: String, message: String, cause: SystemCallError? = nil, function: String = #function
    ) {
        self.code = code
        self.path = path
        self.message = message
        self.cause = cause.map(ErrorCause.init)
        self.function = function
    }

    /// The failed call, when a system call is the cause.
    public var systemCall: SystemCallError? { cause?.systemCall }

    public var description: String { "[\(code)] \(path): \(message)" }
}
