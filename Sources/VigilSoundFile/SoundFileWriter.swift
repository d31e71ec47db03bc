internal import CSndfile

#if canImport(Glibc)
import Glibc
#endif

/// Writes interleaved `Float` frames to a new sound file (WAV 16-bit PCM, FLAC 16-bit, Ogg Vorbis,
/// Opus or MP3) with libsndfile: for rendering soundscapes to files and for tests.
///
/// The data goes to `path.partial` and is renamed to `path` by ``finish()``, so a failed or
/// interrupted write never leaves a partial file under the final name.
public final class SoundFileWriter {
    /// The final path.
    public let path: String
    private let partialPath: String
    private let channels: Int
    private var handle: OpaquePointer?

    /// Creates the file. Opus needs a sample rate of 8, 12, 16, 24 or 48 kHz.
    public init(path: String, format: SoundFileFormat, sampleRate: Int, channels: Int) throws(SoundFileError) {
        self.path = path
        self.partialPath = path + ".partial"
        self.channels = channels
        let major: Int32
        let minor: Int32
        switch format {
        case .wav: (major, minor) = (Int32(SF_FORMAT_WAV), Int32(SF_FORMAT_PCM_16))
        case .flac: (major, minor) = (Int32(SF_FORMAT_FLAC), Int32(SF_FORMAT_PCM_16))
        case .oggVorbis: (major, minor) = (Int32(SF_FORMAT_OGG), Int32(SF_FORMAT_VORBIS))
        case .opus: (major, minor) = (Int32(SF_FORMAT_OGG), Int32(SF_FORMAT_OPUS))
        case .mp3: (major, minor) = (Int32(SF_FORMAT_MPEG), Int32(SF_FORMAT_MPEG_LAYER_III))
        case .other:
            throw SoundFileError(
                code: .invalidArgument, path: path, message: "choose wav, flac, ogg-vorbis, opus or mp3")
        }
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = Int32(channels)
        info.format = major | minor
        guard channels > 0, sf_format_check(&info) != 0 else {
            throw SoundFileError(
                code: .invalidArgument, path: path,
                message: "\(format.rawValue) cannot hold \(channels) channels at \(sampleRate) Hz")
        }
        guard let handle = sf_open(partialPath, Int32(SFM_WRITE), &info) else {
            throw SoundFileError(
                code: .writeFailed, path: path, message: "cannot create: \(String(cString: sf_strerror(nil)))")
        }
        self.handle = handle
    }

    deinit {
        if let handle {
            sf_close(handle)
            unlink(partialPath)
        }
    }

    /// Appends interleaved frames (`samples.count` a multiple of the channel count), clipped to −1…1.
    public func write(_ samples: [Float]) throws(SoundFileError) {
        guard let handle else { throw SoundFileError(code: .invalidArgument, path: path, message: "already finished") }
        let frames = samples.count / channels
        let written = samples.withUnsafeBufferPointer { sf_writef_float(handle, $0.baseAddress, sf_count_t(frames)) }
        guard written == frames else {
            throw SoundFileError(
                code: .writeFailed, path: path, message: "write failed: \(String(cString: sf_strerror(handle)))")
        }
    }

    /// Completes the file, flushes it to disk and renames it into place.
    public func finish() throws(SoundFileError) {
        guard let handle else { return }
        sf_write_sync(handle)
        let rc = sf_close(handle)
        self.handle = nil
        guard rc == 0, rename(partialPath, path) == 0 else {
            let failure = SystemCallError.current(rc == 0 ? "rename" : "sf_close")
            unlink(partialPath)
            throw SoundFileError(
                code: .writeFailed, path: path, message: "cannot complete the file: \(failure.reason)", cause: failure)
        }
    }
}
