#if canImport(Glibc)
import Glibc
#endif

/// Rain, made at play time: a steady hiss of band-limited pink noise (the bed) plus short
/// drop impulses — tiny decaying resonances at random pitch, loudness, pan and time (about 70
/// a second), as in Farnell's *Designing Sound*.
final class RainVoice: Voice {
    private struct Drop {
        var y1: Float = 0, y2: Float = 0
        var c1: Float = 0, c2: Float = 0
        var left: Float = 0, right: Float = 0
        var remaining = 0
    }

    private var random: NoiseSource
    private var pink = (PinkNoise(), PinkNoise())
    private var highPass = (OnePole(), OnePole())
    private var lowPass = (OnePole(), OnePole())
    private var drops = [Drop](repeating: Drop(), count: 16)
    private var drift: Double = 1
    private var driftTarget: Double = 1
    private var blockCounter = 0

    static let level: Float = 0.138
    private static let dropsPerSecond = 70.0
    private static let highPassCoefficient = OnePole.coefficient(cutoff: 600)
    private static let lowPassCoefficient = OnePole.coefficient(cutoff: 7000)
    private let dropThreshold: UInt64

    init(seed: UInt64) {
        random = NoiseSource(seed: seed)
        dropThreshold = UInt64(Double(UInt64.max) * Self.dropsPerSecond / 48_000)
    }

    private func startDrop() {
        guard let slot = drops.firstIndex(where: { $0.remaining == 0 }) else { return }
        let frequency = random.uniform(1800...6500)
        let seconds = random.uniform(0.001...0.004)
        let r = exp(-1 / (seconds * 48_000))
        let amplitude = Float(pow(random.unit(), 2.5) * 0.9 + 0.02)
        let pan = Float(random.uniform(-0.8...0.8))
        var drop = Drop()
        drop.c1 = Float(2 * r * cos(2 * Double.pi * frequency / 48_000))
        drop.c2 = Float(r * r)
        drop.y1 = amplitude * Float(sin(2 * Double.pi * frequency / 48_000))
        drop.left = 1 - pan
        drop.right = 1 + pan
        drop.remaining = Int(seconds * 48_000 * 7)
        drops[slot] = drop
    }

    func render(into buffer: UnsafeMutableBufferPointer<Float>) {
        for f in 0..<(buffer.count / 2) {
            blockCounter += 1
            if blockCounter == 4800 {
                // The shower swells and eases a little (±1.5 dB) every few seconds.
                blockCounter = 0
                if abs(drift - driftTarget) < 0.01 { driftTarget = random.uniform(0.84...1.18) }
                drift += (driftTarget - drift) * 0.08
            }
            if random.next() < dropThreshold { startDrop() }
            let wl = random.white(), wr = random.white()
            let pl = pink.0.next(wl), pr = pink.1.next(wr)
            let bedL = lowPass.0.lowPass(pl - highPass.0.lowPass(pl, Self.highPassCoefficient), Self.lowPassCoefficient)
            let bedR = lowPass.1.lowPass(pr - highPass.1.lowPass(pr, Self.highPassCoefficient), Self.lowPassCoefficient)
            var left = bedL * Float(drift) * 0.8
            var right = bedR * Float(drift) * 0.8
            for d in 0..<drops.count where drops[d].remaining > 0 {
                let y = drops[d].c1 * drops[d].y1 - drops[d].c2 * drops[d].y2
                drops[d].y2 = drops[d].y1
                drops[d].y1 = y
                drops[d].remaining -= 1
                left += y * drops[d].left * 1.6
                right += y * drops[d].right * 1.6
            }
            buffer[2 * f] = softLimit(left * Self.level)
            buffer[2 * f + 1] = softLimit(right * Self.level)
        }
    }
}
