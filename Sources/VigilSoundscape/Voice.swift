/// One soundscape's sound: renders interleaved stereo `Float` frames at 48 kHz, levelled so
/// that gain 1.0 measures about −27 LUFS (EBU R128) with true peaks at or below −6 dBTP.
///
/// A voice lives on the audio writer thread: ``render(into:)`` is called there only and must not
/// block or allocate.
protocol Voice: AnyObject {
    /// Fills `buffer` (interleaved stereo, `buffer.count / 2` frames).
    func render(into buffer: UnsafeMutableBufferPointer<Float>)
}

/// Brown noise: deep and even, like a distant waterfall (−6 dB per octave).
final class BrownNoiseVoice: Voice {
    private var random: NoiseSource
    private var left = BrownNoise()
    private var right = BrownNoise()
    /// Calibrated: 60 s of this voice at gain 1 measure −27 LUFS.
    static let level: Float = 0.1636

    init(seed: UInt64) { random = NoiseSource(seed: seed) }

    func render(into buffer: UnsafeMutableBufferPointer<Float>) {
        for f in 0..<(buffer.count / 2) {
            buffer[2 * f] = softLimit(left.next(random.white()) * Self.level)
            buffer[2 * f + 1] = softLimit(right.next(random.white()) * Self.level)
        }
    }
}

/// Pink noise: steady, even across octaves to the ear (−3 dB per octave).
final class PinkNoiseVoice: Voice {
    private var random: NoiseSource
    private var left = PinkNoise()
    private var right = PinkNoise()
    static let level: Float = 0.1695

    init(seed: UInt64) { random = NoiseSource(seed: seed) }

    func render(into buffer: UnsafeMutableBufferPointer<Float>) {
        for f in 0..<(buffer.count / 2) {
            buffer[2 * f] = softLimit(left.next(random.white()) * Self.level)
            buffer[2 * f + 1] = softLimit(right.next(random.white()) * Self.level)
        }
    }
}
