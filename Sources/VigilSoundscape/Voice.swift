/// One soundscape's sound: renders interleaved stereo `Float` frames at 48 kHz, levelled so
/// that gain 1.0 measures about −27 LUFS (EBU R128) with true peaks at or below −6 dBTP.
///
/// A voice lives on the audio writer thread: ``render(into:)`` is called there only and must not
/// block or allocate.
protocol Voice: AnyObject {
    /// Fills `buffer` (interleaved stereo, `buffer.count / 2` frames).
    func render(into buffer: UnsafeMutableBufferPointer<Float>)
}

/// A filter that colours white noise, one sample at a time, for a ``FilteredNoiseVoice``.
protocol NoiseFilter {
    /// The gain that levels the voice to −27 LUFS at voice gain 1 (calibrated over 60 s).
    static var voiceLevel: Float { get }
    init()
    mutating func next(_ white: Float) -> Float
}

extension BrownNoise: NoiseFilter {
    static let voiceLevel: Float = 0.1636
}

extension PinkNoise: NoiseFilter {
    static let voiceLevel: Float = 0.1695
}

/// Brown noise: deep and even, like a distant waterfall (−6 dB per octave).
typealias BrownNoiseVoice = FilteredNoiseVoice<BrownNoise>
/// Pink noise: steady, even across octaves to the ear (−3 dB per octave).
typealias PinkNoiseVoice = FilteredNoiseVoice<PinkNoise>

/// Steady coloured noise: each channel its own `Filter` over its own white noise.
final class FilteredNoiseVoice<Filter: NoiseFilter>: Voice {
    private var random: NoiseSource
    private var left = Filter()
    private var right = Filter()

    init(seed: UInt64) { random = NoiseSource(seed: seed) }

    func render(into buffer: UnsafeMutableBufferPointer<Float>) {
        for f in 0..<(buffer.count / 2) {
            buffer[2 * f] = softLimit(left.next(random.white()) * Filter.voiceLevel)
            buffer[2 * f + 1] = softLimit(right.next(random.white()) * Filter.voiceLevel)
        }
    }
}
