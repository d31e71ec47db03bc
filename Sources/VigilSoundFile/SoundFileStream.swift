/// Decodes a ``SoundFile`` as interleaved stereo `Float` frames at a chosen sample rate, through
/// one fixed-size decode buffer: memory is the same for a 5-second and a 5-hour file.
///
/// Mono is copied to both channels; with more than two channels the first two are used.
/// Other sample rates are converted by linear interpolation (enough for ambience and speech).
/// Not thread-safe: use it from one thread at a time.
public final class SoundFileStream {
    /// The file being decoded.
    public let file: SoundFile
    /// The output sample rate.
    public let sampleRate: Int

    private var chunk: [Float]
    private var chunkFrames = 0
    private var chunkIndex = 0
    private var ended = false
    private let step: Double
    private var fraction = 0.0
    private var current: (Float, Float)?
    private var next: (Float, Float)?

    /// Opens `path` for decoding to `sampleRate`, decoding `bufferFrames` source frames at a time.
    /// - Throws: ``SoundFileError`` (see ``SoundFile/init(path:)``), or ``SoundFileError/Code/empty``
    ///   when the file holds no audio.
    public init(path: String, sampleRate: Int = 48_000, bufferFrames: Int = 8192) throws(SoundFileError) {
        guard (8000...384_000).contains(sampleRate), (256...1 << 20).contains(bufferFrames) else {
            throw SoundFileError(
                code: .invalidArgument, path: path,
                message:
                    "sample rate \(sampleRate) Hz or buffer of \(bufferFrames) frames out of range (8000–384000 Hz, 256–1048576 frames)"
            )
        }
        file = try SoundFile(path: path)
        self.sampleRate = sampleRate
        step = Double(file.info.sampleRate) / Double(sampleRate)
        chunk = [Float](repeating: 0, count: bufferFrames * file.info.channels)
        current = try sourceFrame()
        next = try sourceFrame()
        if current == nil {
            throw SoundFileError(code: .empty, path: path, message: "the file holds no audio frames")
        }
    }

    /// Fills `output` (interleaved stereo: `output.count / 2` frames) and returns the frames
    /// written; fewer than asked only at the end of the file (0 once it ended).
    public func read(into output: UnsafeMutableBufferPointer<Float>) throws(SoundFileError) -> Int {
        let frames = output.count / 2
        var written = 0
        while written < frames, let a = current {
            let b = next ?? a
            let t = Float(fraction)
            output[2 * written] = a.0 + (b.0 - a.0) * t
            output[2 * written + 1] = a.1 + (b.1 - a.1) * t
            written += 1
            fraction += step
            while fraction >= 1, current != nil {
                fraction -= 1
                current = next
                next = try sourceFrame()
            }
        }
        return written
    }

    /// Starts again from the first frame.
    public func rewind() throws(SoundFileError) {
        try file.rewind()
        chunkFrames = 0
        chunkIndex = 0
        ended = false
        fraction = 0
        current = try sourceFrame()
        next = try sourceFrame()
    }

    private func sourceFrame() throws(SoundFileError) -> (Float, Float)? {
        if chunkIndex >= chunkFrames {
            if ended { return nil }
            let got = try chunk.withUnsafeMutableBufferPointer { buffer throws(SoundFileError) in
                try file.read(into: buffer)
            }
            if got == 0 {
                ended = true
                return nil
            }
            chunkFrames = got
            chunkIndex = 0
        }
        let channels = file.info.channels
        let base = chunkIndex * channels
        chunkIndex += 1
        return channels == 1 ? (chunk[base], chunk[base]) : (chunk[base], chunk[base + 1])
    }
}
