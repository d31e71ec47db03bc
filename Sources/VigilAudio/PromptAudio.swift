/// One prompt's audio, held in memory: interleaved signed 16-bit samples at any rate and
/// channel count the sound server accepts (it resamples to the sink).
public struct PromptAudio: Sendable, Hashable {
    /// Interleaved samples (`channels` per frame).
    public var samples: [Int16]
    /// Frames per second (8000–192000).
    public var sampleRate: Int
    /// Channels per frame (1–8).
    public var channels: Int

    /// Creates prompt audio; see ``validate()`` for the accepted ranges.
    public init(samples: [Int16], sampleRate: Int, channels: Int) {
        self.samples = samples
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// The number of frames.
    public var frames: Int { channels > 0 ? samples.count / channels : 0 }

    /// The length in seconds.
    public var duration: Double { sampleRate > 0 ? Double(frames) / Double(sampleRate) : 0 }

    /// `duration` seconds of digital silence at 48 kHz stereo.
    public static func silence(seconds: Double) -> PromptAudio {
        let frames = max(0, Int(seconds * 48_000))
        return PromptAudio(samples: [Int16](repeating: 0, count: frames * 2), sampleRate: 48_000, channels: 2)
    }

    /// A sine tone of `frequency` Hz at `amplitude` (0–1 of full scale), 48 kHz mono.
    public static func tone(frequency: Double, seconds: Double, amplitude: Double = 0.5) -> PromptAudio {
        let frames = max(0, Int(seconds * 48_000))
        let scale = max(0, min(1, amplitude)) * 32767
        var samples = [Int16](repeating: 0, count: frames)
        for i in 0..<frames {
            samples[i] = Int16((scale * _sin(2 * Double.pi * frequency * Double(i) / 48_000)).rounded())
        }
        return PromptAudio(samples: samples, sampleRate: 48_000, channels: 1)
    }

    /// Throws ``AudioError/Code/invalidConfiguration`` when the rate, channel count or sample
    /// count cannot be played, or the prompt is empty.
    public func validate() throws(AudioError) {
        func check(_ ok: Bool, _ what: String) throws(AudioError) {
            if !ok { throw AudioError(code: .invalidConfiguration, message: "invalid prompt audio: \(what)") }
        }
        try check((8000...192_000).contains(sampleRate), "sample rate \(sampleRate) Hz; use 8000 to 192000 Hz")
        try check((1...8).contains(channels), "\(channels) channels; use 1 to 8")
        try check(
            samples.count % channels == 0,
            "\(samples.count) samples is not a whole number of \(channels)-channel frames")
        try check(frames > 0, "no samples — a prompt needs at least one frame")
    }
}

#if canImport(Glibc)
import Glibc
private func _sin(_ x: Double) -> Double { Glibc.sin(x) }
#endif
