#if canImport(Glibc)
import Glibc
#endif

/// Ocean waves, made at play time: brown and pink noise under slow, randomised, asymmetric
/// wave envelopes (a slow swell, then a longer wash back), the pink layer through a low-pass
/// that opens as each wave breaks, plus a band of hissing foam at the crest. Every wave differs
/// in length (6–13 s: an envelope of 0.08–0.17 Hz), height, pan and foam, so nothing repeats.
final class OceanWavesVoice: Voice {
    private var random: NoiseSource
    private var filters = Filters()

    // The current wave.
    private var frame = 0
    private var riseFrames = 1
    private var totalFrames = 1
    private var startLevel: Double = 0.15
    private var height: Double = 1
    private var floorLevel: Double = 0.15
    private var decay: Double = 1
    private var pan: Double = 0
    private var foam: Double = 0.5
    private var envelope: Double = 0.15

    // Per-block parameters (updated every 32 frames).
    private var bodyCoefficient: Float = 0
    private var gains: (brownL: Float, brownR: Float, bodyL: Float, bodyR: Float, foamL: Float, foamR: Float) = (
        0, 0, 0, 0, 0, 0
    )

    private static let sampleRate = 48_000.0
    static let level: Float = 0.146
    private static let foamLowCoefficient = OnePole.coefficient(cutoff: 1800)
    private static let foamHighCoefficient = OnePole.coefficient(cutoff: 7000)

    init(seed: UInt64) {
        random = NoiseSource(seed: seed)
        nextWave()
        // Start part-way into the first wave so the soundscape does not always begin the same way.
        frame = Int(random.uniform(0...0.5) * Double(riseFrames))
        updateBlock()
    }

    private func nextWave() {
        startLevel = envelope
        let seconds = random.uniform(6...13)
        totalFrames = Int(seconds * Self.sampleRate)
        riseFrames = Int(Double(totalFrames) * random.uniform(0.3...0.45))
        height = random.uniform(0.65...1.0)
        floorLevel = random.uniform(0.08...0.2)
        decay = Double(totalFrames - riseFrames) / random.uniform(3...4.5)
        pan = random.uniform(-0.35...0.35)
        foam = random.uniform(0.3...1.0)
        frame = 0
    }

    private func updateBlock() {
        if frame >= totalFrames { nextWave() }
        if frame < riseFrames {
            let x = sin(Double.pi / 2 * Double(frame) / Double(riseFrames))
            envelope = startLevel + (height - startLevel) * x * x
        } else {
            envelope = floorLevel + (height - floorLevel) * exp(-Double(frame - riseFrames) / decay)
        }
        let e = envelope
        bodyCoefficient = OnePole.coefficient(cutoff: 250 + 2600 * e * e)
        let crest = max(0, e - 0.55) / 0.45
        let left = 1 - pan, right = 1 + pan
        let rumble = 0.35 + 0.65 * e
        let wash = 0.15 + 0.85 * e
        let hiss = foam * crest * crest * 0.9
        gains = (
            Float(rumble * 0.55 * left), Float(rumble * 0.55 * right), Float(wash * left), Float(wash * right),
            Float(hiss * left), Float(hiss * right)
        )
    }

    /// The per-sample state, left and right in the two lanes of each vector: both channels are
    /// computed by one vector instruction, the same arithmetic, in the same order, as per channel.
    private struct Filters {
        /// Brown noise (a leaky integrator, −6 dB per octave).
        var brown = SIMD2<Float>()
        /// Paul Kellet's economy pink filter (see ``EconomyPinkNoise``).
        var pink0 = SIMD2<Float>(), pink1 = SIMD2<Float>(), pink2 = SIMD2<Float>()
        /// The swept two-pole low-pass over the pink layer.
        var body0 = SIMD2<Float>(), body1 = SIMD2<Float>()
        /// The foam band: white noise less its low-passed part, then low-passed again.
        var foamLow = SIMD2<Float>(), foamHigh = SIMD2<Float>()

        /// The brown and filtered pink layers for white noise `w`, swept by `c`.
        @inline(__always)
        mutating func surf(_ w: SIMD2<Float>, _ c: Float, brownGain: SIMD2<Float>, bodyGain: SIMD2<Float>)
            -> SIMD2<Float>
        {
            pink0 = 0.99765 * pink0 + w * 0.0990460
            pink1 = 0.96300 * pink1 + w * 0.2965164
            pink2 = 0.57000 * pink2 + w * 1.0526913
            let pink = (pink0 + pink1 + pink2 + w * 0.1848) * 0.11
            body0 += c * (pink - body0)
            body1 += c * (body0 - body1)
            brown = 0.999 * brown + 0.05 * w
            return brown * brownGain + body1 * 3 * bodyGain
        }

        /// The foam band for white noise `w` (`low`, `high`: the two filters' coefficients).
        @inline(__always)
        mutating func foam(_ w: SIMD2<Float>, low: Float, high: Float) -> SIMD2<Float> {
            foamLow += low * (w - foamLow)
            foamHigh += high * ((w - foamLow) - foamHigh)
            return foamHigh
        }
    }

    /// Stores frame `i` of `out`, soft-limited (``softLimit(_:)``) only when a sample needs it.
    @inline(__always)
    private static func store(_ v: SIMD2<Float>, _ out: UnsafeMutablePointer<Float>, _ i: Int) {
        let limit: Float = 0.3
        if abs(v.x) <= limit && abs(v.y) <= limit {
            out[2 * i] = v.x
            out[2 * i + 1] = v.y
        } else {
            out[2 * i] = softLimit(v.x)
            out[2 * i + 1] = softLimit(v.y)
        }
    }

    func render(into buffer: UnsafeMutableBufferPointer<Float>) {
        guard let out = buffer.baseAddress else { return }
        let frames = buffer.count / 2
        // The state lives in locals while a block renders, so it stays in registers rather than
        // being reloaded after every store to `buffer`.
        var state = filters
        let foamLow = Self.foamLowCoefficient, foamHigh = Self.foamHighCoefficient
        var f = 0
        while f < frames {
            let block = min(32, frames - f)
            let c = bodyCoefficient
            let g = gains
            let brownGain = SIMD2(g.brownL, g.brownR), bodyGain = SIMD2(g.bodyL, g.bodyR)
            var rng = random
            if g.foamL > 0 || g.foamR > 0 {
                let foamGain = SIMD2(g.foamL, g.foamR)
                for i in f..<(f + block) {
                    let w = rng.whiteVector()
                    let fw = rng.whiteVector()
                    let surf = state.surf(w, c, brownGain: brownGain, bodyGain: bodyGain)
                    Self.store(
                        (surf + state.foam(fw, low: foamLow, high: foamHigh) * 0.25 * foamGain) * Self.level, out, i)
                }
            } else {
                // Between crests there is no foam: skip its noise and filters.
                for i in f..<(f + block) {
                    let w = rng.whiteVector()
                    Self.store(state.surf(w, c, brownGain: brownGain, bodyGain: bodyGain) * Self.level, out, i)
                }
            }
            random = rng
            f += block
            frame += block
            updateBlock()
        }
        filters = state
    }
}
