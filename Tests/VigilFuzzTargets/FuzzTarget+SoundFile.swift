import Foundation
import VigilSoundFile

extension FuzzTarget {
    /// Decodes the bytes as an audio file, the way the soundscape streams a file it loops: open,
    /// read every frame through the resampling stream, rewind, read again (bounded).
    static func soundFile(_ bytes: [UInt8]) {
        let path = scratchFile
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            preconditionFailure("cannot write the scratch file \(path)")
        }
        guard let stream = try? SoundFileStream(path: path, sampleRate: 48_000, bufferFrames: 1024) else { return }
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: 4096)
        defer { buffer.deallocate() }
        // A decoder that never reaches the end is a hang; 1 s of output at 48 kHz per pass is enough
        // for inputs of libFuzzer's sizes (and keeps a run at more than a few inputs per second).
        for pass in 0..<2 {
            var frames = 0
            while frames < 48_000, let n = try? stream.read(into: buffer), n > 0 {
                precondition(
                    buffer[0..<(2 * n)].allSatisfy { $0.isFinite && abs($0) <= 1 },
                    "the decoder produced a sample outside −1…1")
                frames += n
            }
            if pass == 0 { guard (try? stream.rewind()) != nil else { return } }
        }
    }

    /// One file per process, rewritten for each input.
    static let scratchFile = FileManager.default.temporaryDirectory.path + "/vigil-fuzz-\(getpid()).audio"
}
