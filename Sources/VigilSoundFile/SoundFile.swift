internal import CSndfile
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The container/codec of an opened sound file.
public enum SoundFileFormat: String, Sendable, Hashable {
    case wav, flac, oggVorbis = "ogg-vorbis", opus, mp3, other
}

/// What a sound file holds.
public struct SoundFileInfo: Sendable, Hashable {
    /// The container/codec.
    public var format: SoundFileFormat
    /// Frames per second.
    public var sampleRate: Int
    /// Interleaved channels per frame.
    public var channels: Int
    /// The number of frames libsndfile reports (for MP3 an estimate until decoded).
    public var frames: Int64
    /// Whether ``SoundFile/rewind()`` works.
    public var seekable: Bool

    /// The length in seconds (from ``frames``).
    public var seconds: Double { sampleRate > 0 ? Double(frames) / Double(sampleRate) : 0 }
}

/// A sound file opened for decoding with libsndfile: WAV, FLAC, Ogg Vorbis, Opus, MP3 and the
/// other formats Debian's libsndfile reads. Decodes on demand into the caller's buffer, so memory
/// does not depend on the file's length.
///
/// Not thread-safe: use one instance from one thread at a time. Closed on ``close()`` or deinit.
public final class SoundFile {
    /// The file's path.
    public let path: String
    /// What the file holds.
    public let info: SoundFileInfo
    private var handle: OpaquePointer?

    /// What a file of `mode` is, for a refusal ("a FIFO").
    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "a special file"
        }
    }

    /// Opens `path` and reads its header; anything but a regular file (a FIFO, socket, device or
    /// directory) is refused before a byte is read.
    /// - Throws: ``SoundFileError`` saying why the file cannot be played.
    public init(path: String) throws(SoundFileError) {
        self.path = path
        // Non-blocking, so a FIFO with no writer cannot hold the open; the kind is checked on
        // the descriptor before a byte is read.
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            let failure = SystemCallError.current("open")
            let missing = failure.number == ENOENT || failure.number == ENOTDIR
            var st = stat()
            if failure.number == ENXIO, stat(path, &st) == 0, (st.st_mode & S_IFMT) != S_IFREG {
                // open(2) of a socket fails with ENXIO: name what is there.
                throw SoundFileError(
                    code: .unreadable, path: path,
                    message: "is \(Self.kind(st.st_mode)), not a regular file; name an audio file", cause: failure)
            }
            throw SoundFileError(
                code: missing ? .notFound : .unreadable, path: path,
                message: missing ? "no such file; check the path" : "cannot open: \(failure.reason)", cause: failure)
        }
        let file = OwnedDescriptor(adopting: fd)  // closed on every throw below
        var st = stat()
        guard fstat(file.rawValue, &st) == 0 else {
            let failure = SystemCallError.current("fstat")
            throw SoundFileError(
                code: .unreadable, path: path, message: "cannot inspect: \(failure.reason)", cause: failure)
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw SoundFileError(
                code: .unreadable, path: path,
                message: "is \(Self.kind(st.st_mode)), not a regular file; name an audio file")
        }
        _ = fcntl(file.rawValue, F_SETFL, fcntl(file.rawValue, F_GETFL) & ~O_NONBLOCK)
        var sfInfo = SF_INFO()
        // With close_desc set libsndfile owns the descriptor from here: sf_close closes it, and so
        // does a failed sf_open_fd (closing it again here could close another thread's new file).
        guard let handle = sf_open_fd(file.take(), Int32(SFM_READ), &sfInfo, 1) else {
            let number = sf_error(nil)
            let detail = String(cString: sf_strerror(nil))
            let code: SoundFileError.Code =
                switch Int(number) {
                case Int(SF_ERR_UNRECOGNISED_FORMAT): .unrecognisedFormat
                case Int(SF_ERR_MALFORMED_FILE): .malformed
                case Int(SF_ERR_UNSUPPORTED_ENCODING): .unsupportedEncoding
                default: .unrecognisedFormat
                }
            throw SoundFileError(
                code: code, path: path,
                message: "\(detail) — use WAV, FLAC, Ogg Vorbis, Opus or MP3")
        }
        self.handle = handle
        let major = Int(sfInfo.format) & Int(SF_FORMAT_TYPEMASK)
        let minor = Int(sfInfo.format) & Int(SF_FORMAT_SUBMASK)
        let format: SoundFileFormat =
            switch major {
            case Int(SF_FORMAT_WAV), Int(SF_FORMAT_WAVEX), Int(SF_FORMAT_RF64): .wav
            case Int(SF_FORMAT_FLAC): .flac
            case Int(SF_FORMAT_OGG): minor == Int(SF_FORMAT_OPUS) ? .opus : .oggVorbis
            case Int(SF_FORMAT_MPEG): .mp3
            default: .other
            }
        info = SoundFileInfo(
            format: format, sampleRate: Int(sfInfo.samplerate), channels: Int(sfInfo.channels), frames: sfInfo.frames,
            seekable: sfInfo.seekable != 0)
        guard info.channels > 0, info.sampleRate > 0 else {
            sf_close(handle)
            self.handle = nil
            throw SoundFileError(
                code: .malformed, path: path, message: "the header names no channels or no sample rate")
        }
    }

    deinit { close() }

    /// Decodes up to `buffer.count / channels` frames of interleaved samples in −1…1 into
    /// `buffer`; returns the frames read, 0 at the end of the file.
    public func read(into buffer: UnsafeMutableBufferPointer<Float>) throws(SoundFileError) -> Int {
        guard let handle else {
            throw SoundFileError(code: .invalidArgument, path: path, message: "the file was closed")
        }
        let frames = buffer.count / info.channels
        guard frames > 0, let base = buffer.baseAddress else { return 0 }
        let got = sf_readf_float(handle, base, sf_count_t(frames))
        if got < 0 || (got == 0 && sf_error(handle) != 0) {
            throw SoundFileError(
                code: .decodeFailed, path: path, message: "decoding failed: \(String(cString: sf_strerror(handle)))")
        }
        // libsndfile hands a float or double file's samples through as stored: NaN, infinities and
        // values past full scale would reach the mixer and the sound server. Keep the promise of −1…1.
        let samples = UnsafeMutableBufferPointer(start: base, count: Int(got) * info.channels)
        for i in samples.indices where !(abs(samples[i]) <= 1) {
            samples[i] = samples[i].isNaN ? 0 : samples[i] > 0 ? 1 : -1
        }
        return Int(got)
    }

    /// Goes back to the first frame.
    public func rewind() throws(SoundFileError) {
        guard let handle else {
            throw SoundFileError(code: .invalidArgument, path: path, message: "the file was closed")
        }
        if sf_seek(handle, 0, SEEK_SET) < 0 {
            throw SoundFileError(
                code: .decodeFailed, path: path,
                message: "cannot go back to the start: \(String(cString: sf_strerror(handle)))")
        }
    }

    /// Closes the file. Safe to call twice.
    public func close() {
        if let handle { sf_close(handle) }
        handle = nil
    }
}
