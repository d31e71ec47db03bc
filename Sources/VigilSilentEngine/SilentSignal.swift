import VigilAudio

#if canImport(Glibc)
import Glibc
#endif

/// The keep-alive signal silent-engine plays: a ``SampleSource`` for each `mode`.
///
/// All are inaudible at their defaults; the non-zero ones exist for sinks and speakers that
/// treat digital silence as "nothing playing" (some HDMI receivers and Bluetooth speakers).
struct SilentSignal: SampleSource {
    /// What to play.
    enum Mode: String, CaseIterable, Sendable {
        /// Digital silence.
        case zero
        /// Silence with one sample of the smallest non-zero value (±1 of 32767), alternating in
        /// sign, `rate` times a second.
        case fluctuate
        /// A sine tone of `frequency` Hz at `amplitude` (fraction of full scale).
        case sine
        /// White noise, uniform within ±`level` of full scale.
        case noise
    }

    let mode: Mode
    let fluctuateRate: Double
    let sineFrequency: Double
    let sineAmplitude: Double
    let noiseLevel: Double

    /// Frames rendered so far (the phase of every mode).
    private(set) var frame: Int = 0
    private var nextSign: Int16 = 1
    private var noiseState: UInt64 = 0x9E37_79B9_7F4A_7C15

    init(
        mode: Mode, fluctuateRate: Double = 50, sineFrequency: Double = 30, sineAmplitude: Double = 0.01,
        noiseLevel: Double = 0.001
    ) {
        self.mode = mode
        self.fluctuateRate = fluctuateRate
        self.sineFrequency = sineFrequency
        self.sineAmplitude = sineAmplitude
        self.noiseLevel = noiseLevel
    }

    /// Frames between two fluctuate pulses.
    var fluctuateInterval: Int {
        max(1, Int((Double(PlaybackConfiguration.sampleRate) / fluctuateRate).rounded()))
    }

    /// The sine sample for frame `n` (exact, for tests too).
    static func sineSample(frame n: Int, frequency: Double, amplitude: Double) -> Int16 {
        let rate = Double(PlaybackConfiguration.sampleRate)
        // Reduce the phase to one period first so precision does not decay over long runs.
        let period = rate / frequency
        let position = Double(n).truncatingRemainder(dividingBy: period)
        let value = amplitude * 32767 * sin(2 * Double.pi * position / period)
        return Int16(value.rounded())
    }

    /// Zero mode is silent: the PulseAudio backend sends gaps instead of samples.
    var isSilent: Bool { mode == .zero }

    mutating func render(into buffer: UnsafeMutableBufferPointer<Int16>) {
        let channels = PlaybackConfiguration.channels
        let frames = buffer.count / channels
        switch mode {
        case .zero:
            buffer.update(repeating: 0)
        case .fluctuate:
            buffer.update(repeating: 0)
            let interval = fluctuateInterval
            var offset = (interval - frame % interval) % interval
            while offset < frames {
                for c in 0..<channels { buffer[offset * channels + c] = nextSign }
                nextSign = -nextSign
                offset += interval
            }
        case .sine:
            for i in 0..<frames {
                let s = Self.sineSample(frame: frame + i, frequency: sineFrequency, amplitude: sineAmplitude)
                for c in 0..<channels { buffer[i * channels + c] = s }
            }
        case .noise:
            let scale = noiseLevel * 32767
            for i in 0..<(frames * channels) {
                // xorshift64*: cheap, good enough for inaudible noise, deterministic for tests.
                noiseState ^= noiseState >> 12
                noiseState ^= noiseState << 25
                noiseState ^= noiseState >> 27
                let r = noiseState &* 0x2545_F491_4F6C_DD1D
                let unit = Double(r >> 11) / Double(1 << 53) * 2 - 1  // [-1, 1)
                buffer[i] = Int16((unit * scale).rounded())
            }
        }
        frame += frames
    }
}
