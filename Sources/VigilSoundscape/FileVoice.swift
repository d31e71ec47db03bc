import Logging
import VigilSoundFile

#if canImport(Glibc)
import Glibc
#endif

/// What levelling a user file needs, found by decoding it once (bounded memory).
struct FileAnalysis: Sendable, Hashable {
    /// Frames at 48 kHz.
    var frames: Int
    /// Integrated loudness in LUFS.
    var loudness: Double
    /// True peak in dBTP.
    var truePeak: Double

    /// The gain that brings the file to −27 LUFS, lowered if needed so true peaks stay ≤ −6 dBTP.
    var gain: Float {
        guard loudness.isFinite else { return 1 }
        let toTarget = Soundscape.targetLoudness - loudness
        let headroom = Soundscape.truePeakCeiling - truePeak
        return Float(pow(10, min(toTarget, headroom) / 20))
    }

    /// Decodes `path` to the end, measuring it. Blocking: call it on a thread of your own.
    static func measure(path: String) throws(SoundFileError) -> FileAnalysis {
        let stream = try SoundFileStream(path: path, sampleRate: SoundscapeMixer.sampleRate)
        var meter = LoudnessMeter()
        var buffer = [Float](repeating: 0, count: 8192)
        var frames = 0
        while true {
            let got = try buffer.withUnsafeMutableBufferPointer { b throws(SoundFileError) in try stream.read(into: b) }
            if got == 0 { break }
            frames += got
            buffer.withUnsafeBufferPointer { meter.add(UnsafeBufferPointer(rebasing: $0[0..<(2 * got)])) }
        }
        guard frames >= SoundscapeMixer.sampleRate / 2 else {
            throw SoundFileError(
                code: .empty, path: path, message: "shorter than half a second; a loop needs at least 0.5 s of audio")
        }
        return FileAnalysis(frames: frames, loudness: meter.integratedLoudness, truePeak: meter.truePeak)
    }
}

/// A user's sound file, looped seamlessly: the last 200 ms of each pass are crossfaded (equal
/// power) into the first 200 ms of the next, so the loop point has no click and no gap. Two
/// decoders take turns; memory does not depend on the file's length.
final class FileVoice: Voice {
    private var main: SoundFileStream
    private var head: SoundFileStream
    private let total: Int
    private let fade: Int
    private let gain: Float
    private var position = 0
    private var scratch = [Float](repeating: 0, count: 8192)
    private var failed = false
    private let logger: Logger

    /// Opens the file twice (the playing pass and the next one). Quick: no decoding happens here.
    init(path: String, analysis: FileAnalysis, logger: Logger) throws(SoundFileError) {
        main = try SoundFileStream(path: path, sampleRate: SoundscapeMixer.sampleRate)
        head = try SoundFileStream(path: path, sampleRate: SoundscapeMixer.sampleRate)
        total = analysis.frames
        fade = min(9_600, analysis.frames / 4)
        gain = analysis.gain
        self.logger = logger
    }

    func render(into buffer: UnsafeMutableBufferPointer<Float>) {
        let frames = buffer.count / 2
        var done = 0
        while done < frames {
            if failed {
                for i in (2 * done)..<(2 * frames) { buffer[i] = 0 }
                return
            }
            let fadeStart = total - fade
            if position < fadeStart {
                let n = min(frames - done, fadeStart - position)
                read(main, into: buffer, at: done, frames: n)
                position += n
                done += n
                continue
            }
            let n = min(frames - done, total - position, scratch.count / 2)
            read(main, into: buffer, at: done, frames: n)
            scratch.withUnsafeMutableBufferPointer { s in
                let part = UnsafeMutableBufferPointer(rebasing: s[0..<(2 * n)])
                readAll(head, into: part)
                for f in 0..<n {
                    let t = Float(position - fadeStart + f) / Float(fade)
                    let out = cosf(Float.pi / 2 * t), into = sinf(Float.pi / 2 * t)
                    buffer[2 * (done + f)] = buffer[2 * (done + f)] * out + part[2 * f] * into * gain
                    buffer[2 * (done + f) + 1] = buffer[2 * (done + f) + 1] * out + part[2 * f + 1] * into * gain
                }
            }
            position += n
            done += n
            if position >= total {
                // The next pass is already `fade` frames in; the old decoder waits at the start.
                swap(&main, &head)
                position = fade
                do { try head.rewind() } catch {
                    logger.warning(
                        "Soundscape file cannot loop; going silent", metadata: ["soundscape.error": "\(error)"])
                    failed = true
                }
            }
        }
    }

    /// Reads `frames` frames from `stream` at gain into `buffer` at `offset`; zeros if it ends early.
    private func read(
        _ stream: SoundFileStream, into buffer: UnsafeMutableBufferPointer<Float>, at offset: Int, frames: Int
    ) {
        let part = UnsafeMutableBufferPointer(rebasing: buffer[(2 * offset)..<(2 * (offset + frames))])
        readAll(stream, into: part)
        for i in 0..<part.count { part[i] *= gain }
    }

    private func readAll(_ stream: SoundFileStream, into part: UnsafeMutableBufferPointer<Float>) {
        var got = 0
        while got < part.count / 2 {
            let n: Int
            do {
                n = try stream.read(into: UnsafeMutableBufferPointer(rebasing: part[(2 * got)...]))
            } catch {
                if !failed {
                    logger.warning(
                        "Soundscape file stopped decoding; going silent", metadata: ["soundscape.error": "\(error)"])
                }
                failed = true
                n = 0
            }
            if n == 0 { break }
            got += n
        }
        for i in (2 * got)..<part.count { part[i] = 0 }
    }
}
