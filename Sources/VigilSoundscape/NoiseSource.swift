#if canImport(Glibc)
import Glibc
#endif

/// A fast pseudo-random generator (xorshift64*), seeded per generator so nothing repeats
/// between runs unless a test fixes the seed.
struct NoiseSource {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed
    }

    /// The next raw 64 random bits.
    @inline(__always)
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }

    /// Uniform white noise in −1…1.
    @inline(__always)
    mutating func white() -> Float {
        Float(Int32(truncatingIfNeeded: next() >> 32)) * (1.0 / 2_147_483_648.0)
    }

    /// Two independent uniform white-noise samples in −1…1 from one draw.
    @inline(__always)
    mutating func whitePair() -> (Float, Float) {
        let bits = next()
        let scale: Float = 1.0 / 2_147_483_648.0
        return (
            Float(Int32(truncatingIfNeeded: bits >> 32)) * scale, Float(Int32(truncatingIfNeeded: bits)) * scale
        )
    }

    /// ``whitePair()`` as a vector: left in `x`, right in `y`.
    @inline(__always)
    mutating func whiteVector() -> SIMD2<Float> {
        let (left, right) = whitePair()
        return SIMD2(left, right)
    }

    /// Uniform in 0…1.
    @inline(__always)
    mutating func unit() -> Double {
        Double(next() >> 11) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// Uniform in `range`.
    mutating func uniform(_ range: ClosedRange<Double>) -> Double {
        range.lowerBound + (range.upperBound - range.lowerBound) * unit()
    }
}

/// Brown (red) noise: white noise through a leaky integrator, −6 dB per octave above ~8 Hz.
struct BrownNoise {
    private var level: Float = 0
    // Leak: corner at (1 − 0.999) · 48000 / 2π ≈ 8 Hz.
    private static let leak: Float = 0.999

    @inline(__always)
    mutating func next(_ white: Float) -> Float {
        level = Self.leak * level + 0.05 * white
        return level
    }
}

/// Pink noise: Paul Kellet's refined filter over white noise, −3 dB per octave (within
/// ±0.05 dB from 9 Hz to Nyquist at 44.1 kHz, per its author).
struct PinkNoise {
    private var b0: Float = 0, b1: Float = 0, b2: Float = 0, b3: Float = 0, b4: Float = 0, b5: Float = 0, b6: Float = 0

    @inline(__always)
    mutating func next(_ white: Float) -> Float {
        b0 = 0.99886 * b0 + white * 0.0555179
        b1 = 0.99332 * b1 + white * 0.0750759
        b2 = 0.96900 * b2 + white * 0.1538520
        b3 = 0.86650 * b3 + white * 0.3104856
        b4 = 0.55000 * b4 + white * 0.5329522
        b5 = -0.7616 * b5 - white * 0.0168980
        let out = b0 + b1 + b2 + b3 + b4 + b5 + b6 + white * 0.5362
        b6 = white * 0.115926
        return out * 0.11
    }
}

/// Pink noise, Paul Kellet's economy filter (three poles, ±0.5 dB): for layers that are filtered
/// further anyway, at half the refined filter's cost.
struct EconomyPinkNoise {
    private var b0: Float = 0, b1: Float = 0, b2: Float = 0

    @inline(__always)
    mutating func next(_ white: Float) -> Float {
        b0 = 0.99765 * b0 + white * 0.0990460
        b1 = 0.96300 * b1 + white * 0.2965164
        b2 = 0.57000 * b2 + white * 1.0526913
        return (b0 + b1 + b2 + white * 0.1848) * 0.11
    }
}

/// A one-pole low-pass filter; `coefficient` = 1 − e^(−2π·fc/fs).
struct OnePole {
    var state: Float = 0

    @inline(__always)
    mutating func lowPass(_ x: Float, _ coefficient: Float) -> Float {
        state += coefficient * (x - state)
        return state
    }

    static func coefficient(cutoff: Double, sampleRate: Double = 48_000) -> Float {
        Float(1 - exp(-2 * Double.pi * cutoff / sampleRate))
    }
}

/// A soft limiter: transparent below 0.3 (−10.5 dBFS), then bending smoothly towards 0.45
/// (−6.9 dBFS), so a generated voice's rare peaks stay under the −6 dBTP ceiling without clicks.
@inline(__always)
func softLimit(_ x: Float) -> Float {
    let threshold: Float = 0.3, ceiling: Float = 0.45
    let a = abs(x)
    if a <= threshold { return x }
    let y = threshold + (ceiling - threshold) * tanhf((a - threshold) / (ceiling - threshold))
    return x < 0 ? -y : y
}
