#if canImport(Glibc)
import Glibc
#endif

/// Ocean waves, made at play time: brown and pink noise under slow, randomised, asymmetric
/// wave envelopes (a slow swell, then a longer wash back), the pink layer through a low-pass
/// that opens as each wave breaks, plus a band of hissing foam at the crest. Every wave differs
/// in length (6–13 s: an envelope of 0.08–0.17 Hz), height, pan and foam, so nothing repeats.
final class OceanWavesVoice: Voice {
    private var random: NoiseSource
    private var brown = (BrownNoise(), BrownNoise())
    private var pink = (EconomyPinkNoise(), EconomyPinkNoise())
    private var body = (OnePole(), OnePole(), OnePole(), OnePole())
    private var foamLow = (OnePole(), OnePole())
    private var foamHigh = (OnePole(), OnePole())

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

    func render(into buffer: UnsafeMutableBufferPointer<Float>) {
        let frames = buffer.count / 2
        var f = 0
        while f < frames {
            let block = min(32, frames - f)
            let c = bodyCoefficient
            let g = gains
            if g.foamL > 0 || g.foamR > 0 {
                for i in f..<(f + block) {
                    let (wl, wr) = random.whitePair()
                    let (fl, fr) = random.whitePair()
                    let bl = body.1.lowPass(body.0.lowPass(pink.0.next(wl), c), c)
                    let br = body.3.lowPass(body.2.lowPass(pink.1.next(wr), c), c)
                    let foamL = foamHigh.0.lowPass(
                        fl - foamLow.0.lowPass(fl, Self.foamLowCoefficient), Self.foamHighCoefficient)
                    let foamR = foamHigh.1.lowPass(
                        fr - foamLow.1.lowPass(fr, Self.foamLowCoefficient), Self.foamHighCoefficient)
                    let left = brown.0.next(wl) * g.brownL + bl * 3 * g.bodyL + foamL * 0.25 * g.foamL
                    let right = brown.1.next(wr) * g.brownR + br * 3 * g.bodyR + foamR * 0.25 * g.foamR
                    buffer[2 * i] = softLimit(left * Self.level)
                    buffer[2 * i + 1] = softLimit(right * Self.level)
                }
            } else {
                // Between crests there is no foam: skip its noise and filters.
                for i in f..<(f + block) {
                    let (wl, wr) = random.whitePair()
                    let bl = body.1.lowPass(body.0.lowPass(pink.0.next(wl), c), c)
                    let br = body.3.lowPass(body.2.lowPass(pink.1.next(wr), c), c)
                    let left = brown.0.next(wl) * g.brownL + bl * 3 * g.bodyL
                    let right = brown.1.next(wr) * g.brownR + br * 3 * g.bodyR
                    buffer[2 * i] = softLimit(left * Self.level)
                    buffer[2 * i + 1] = softLimit(right * Self.level)
                }
            }
            f += block
            frame += block
            updateBlock()
        }
    }
}
