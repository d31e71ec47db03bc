import Foundation
import Testing
import VigilSoundFile
import VigilTestSupport

/// Writes `seconds` of a `frequency` Hz sine at 0.5 (stereo, right channel inverted) in `format`.
private func writeTone(
    _ path: String, format: SoundFileFormat, rate: Int, seconds: Double, frequency: Double = 1000, channels: Int = 2
) throws {
    let writer = try SoundFileWriter(path: path, format: format, sampleRate: rate, channels: channels)
    let frames = Int(seconds * Double(rate))
    var samples: [Float] = []
    samples.reserveCapacity(4096 * channels)
    for i in 0..<frames {
        let v = Float(0.5 * sin(2 * Double.pi * frequency * Double(i) / Double(rate)))
        samples.append(v)
        if channels == 2 { samples.append(-v) }
        if samples.count >= 4096 * channels {
            try writer.write(samples)
            samples.removeAll(keepingCapacity: true)
        }
    }
    try writer.write(samples)
    try writer.finish()
}

/// Decodes the whole stream, `chunk` frames at a time.
private func decode(_ stream: SoundFileStream, chunk: Int = 1000) throws -> [Float] {
    var out: [Float] = []
    var buffer = [Float](repeating: 0, count: chunk * 2)
    while true {
        let got = try buffer.withUnsafeMutableBufferPointer { try stream.read(into: $0) }
        if got == 0 { break }
        out += buffer[0..<(got * 2)]
    }
    return out
}

private func residentBytes() -> Int {
    let fields = (try? TextFile.read("/proc/self/statm"))?.split(separator: " ") ?? []
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}

@Suite("VigilSoundFile: libsndfile decoding", .serialized)
struct VigilSoundFileTests {
    @Test(
        "decodes each common format to 48 kHz stereo, keeping the tone",
        arguments: [
            (SoundFileFormat.wav, 44_100, "wav"), (.flac, 48_000, "flac"), (.oggVorbis, 44_100, "ogg"),
            (.opus, 48_000, "opus"), (.mp3, 44_100, "mp3"),
        ])
    func decodesFormats(format: SoundFileFormat, rate: Int, ext: String) throws {
        let dir = try TestDirectory("vigil-sndfile")
        defer { dir.remove() }
        let path = dir.url("tone.\(ext)")
        try writeTone(path, format: format, rate: rate, seconds: 2)
        #expect(!FileManager.default.fileExists(atPath: path + ".partial"))
        let stream = try SoundFileStream(path: path, sampleRate: 48_000)
        #expect(stream.file.info.format == format)
        #expect(stream.file.info.sampleRate == rate)
        #expect(stream.file.info.channels == 2)
        let samples = try decode(stream)
        let frames = samples.count / 2
        // Lossy codecs add a little padding; the length stays within 0.1 s of 2 s at 48 kHz.
        #expect(abs(frames - 96_000) < 4_800, "decoded \(frames) frames")
        // The tone survives: about 1000 Hz, level near 0.5/√2, right channel the inverse of the left.
        let ints = samples.map { Int16(max(-1, min(1, $0)) * 32767) }
        let analysis = AudioAnalysis(interleaved: ints, sampleRate: 48_000, trimSeconds: 0.2)
        #expect(abs(analysis.zeroCrossingFrequency - 1000) < 10, "\(analysis.zeroCrossingFrequency) Hz")
        #expect(abs(analysis.rms - 0.3536) < 0.03, "rms \(analysis.rms)")
        let mid = frames / 2
        #expect(abs(samples[2 * mid] + samples[2 * mid + 1]) < 0.05)

        // Rewind starts over with the same audio.
        try stream.rewind()
        let again = try decode(stream)
        #expect(again.count == samples.count)
        #expect(again.prefix(2000) == samples.prefix(2000))
    }

    @Test("mono is copied to both channels; a 1 s file at 24 kHz becomes 48000 frames")
    func monoAndResampling() throws {
        let dir = try TestDirectory("vigil-sndfile")
        defer { dir.remove() }
        let path = dir.url("mono.wav")
        try writeTone(path, format: .wav, rate: 24_000, seconds: 1, frequency: 500, channels: 1)
        let samples = try decode(SoundFileStream(path: path, sampleRate: 48_000), chunk: 777)
        #expect(abs(samples.count / 2 - 48_000) <= 2)
        #expect(stride(from: 0, to: samples.count, by: 2).allSatisfy { samples[$0] == samples[$0 + 1] })
        let ints = samples.map { Int16($0 * 32767) }
        #expect(abs(AudioAnalysis(interleaved: ints, trimSeconds: 0.1).zeroCrossingFrequency - 500) < 5)
    }

    @Test("bad input is a typed error with the path, never a crash")
    func badInput() throws {
        let dir = try TestDirectory("vigil-sndfile")
        defer { dir.remove() }
        let cases: [(String, SoundFileError.Code)] = [
            (dir.url("missing.wav"), .notFound),
            (try dir.makeDirectory("folder.wav"), .unreadable),
            (try dir.write("text.wav", "this is not audio at all, just some words\n"), .unrecognisedFormat),
            (try dir.write("empty.flac", []), .unrecognisedFormat),
        ]
        for (path, code) in cases {
            do {
                _ = try SoundFileStream(path: path)
                Issue.record("\(path) opened")
            } catch {
                #expect(error.code == code, "\(path): \(error)")
                #expect(error.path == path)
                // The errno stays typed: the failed call and its Errno, not a number in the text.
                let cause = code == .notFound ? SystemCallError("open", errno: ENOENT) : nil
                #expect(error.systemCall == cause, "\(path): \(String(describing: error.cause))")
            }
        }
        // A WAV header with no frames is empty, not a crash.
        let silent = dir.url("zero.wav")
        let writer = try SoundFileWriter(path: silent, format: .wav, sampleRate: 48_000, channels: 2)
        try writer.finish()
        do {
            _ = try SoundFileStream(path: silent)
            Issue.record("an empty WAV opened")
        } catch {
            #expect(error.code == .empty)
        }
        // Opus cannot hold 44.1 kHz: refused before any file appears.
        #expect(throws: SoundFileError.self) {
            _ = try SoundFileWriter(path: dir.url("x.opus"), format: .opus, sampleRate: 44_100, channels: 2)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.url("x.opus")))
    }

    @Test("decoding a long file keeps memory flat: the buffer is bounded")
    func boundedMemory() throws {
        let dir = try TestDirectory("vigil-sndfile")
        defer { dir.remove() }
        let path = dir.url("long.flac")
        try writeTone(path, format: .flac, rate: 48_000, seconds: 180, frequency: 440)
        let stream = try SoundFileStream(path: path, sampleRate: 48_000)
        var buffer = [Float](repeating: 0, count: 4096 * 2)
        let before = residentBytes()
        var peak = before
        var frames = 0
        while true {
            let got = try buffer.withUnsafeMutableBufferPointer { try stream.read(into: $0) }
            if got == 0 { break }
            frames += got
            if frames % (48_000 * 10) < 4096 { peak = max(peak, residentBytes()) }
        }
        #expect(frames == 180 * 48_000)
        // 180 s of stereo float would be 69 MB; decoding it adds far less than that.
        #expect(peak - before < 8 << 20, "resident grew by \(peak - before) bytes")
    }
}

/// A float WAV holding 2, −3, NaN, ±infinity and 1e30 (Fuzz/Regressions/sound-file/float-out-of-range.wav,
/// written through libsndfile): what the decoder hands on stays finite and within −1…1.
@Test func floatSamplesPastFullScaleAreClampedAndNaNSilenced() throws {
    let path = VigilExecutable.packageRoot + "/Fuzz/Regressions/sound-file/float-out-of-range.wav"
    let file = try SoundFile(path: path)
    var buffer = [Float](repeating: 0, count: 64)
    let frames = try buffer.withUnsafeMutableBufferPointer { try file.read(into: $0) }
    #expect(frames == 64)
    #expect(Array(buffer[0..<8]) == [0.5, 1, -1, 0, 1, -1, 1, -0.25])
}
