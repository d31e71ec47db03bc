#if canImport(Glibc)
import Glibc
#endif

/// EBU R128 / ITU-R BS.1770-4 integrated loudness and true peak of 48 kHz stereo audio, fed
/// block by block (memory does not grow with the length: one value per 100 ms is kept).
public struct LoudnessMeter: Sendable {
    private struct Biquad: Sendable {
        let b0, b1, b2, a1, a2: Double
        var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0

        init(_ b0: Double, _ b1: Double, _ b2: Double, _ a1: Double, _ a2: Double) {
            (self.b0, self.b1, self.b2, self.a1, self.a2) = (b0, b1, b2, a1, a2)
        }

        mutating func run(_ x: Double) -> Double {
            let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
            (x2, x1, y2, y1) = (x1, x, y1, y)
            return y
        }
    }

    // The K-weighting filters for 48 kHz (BS.1770-4, table 1 and 2).
    private var shelf = [
        Biquad(1.53512485958697, -2.69169618940638, 1.19839281085285, -1.69065929318241, 0.73248077421585),
        Biquad(1.53512485958697, -2.69169618940638, 1.19839281085285, -1.69065929318241, 0.73248077421585),
    ]
    private var highPass = [
        Biquad(1, -2, 1, -1.99004745483398, 0.99007225036621),
        Biquad(1, -2, 1, -1.99004745483398, 0.99007225036621),
    ]
    /// Mean-square energy (both channels summed) of each 100 ms step.
    private var steps: [Double] = []
    private var stepEnergy = 0.0
    private var stepFrames = 0
    private static let stepLength = 4800
    // True peak: the last 16 samples of each channel for 4× sinc interpolation.
    private var history: [[Float]] = [[Float](repeating: 0, count: 16), [Float](repeating: 0, count: 16)]
    private var historyIndex = 0
    private var peak: Float = 0
    private static let kernel: [[Float]] = (1...3).map { phase in
        let fraction = Double(phase) / 4
        return (0..<16).map { i in
            let x = Double(i - 7) - fraction
            let sinc = x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x)
            let window = 0.5 + 0.5 * cos(Double.pi * x / 8.5)
            return Float(sinc * window)
        }
    }

    public init() {}

    /// Measures interleaved stereo samples.
    public mutating func add(_ samples: UnsafeBufferPointer<Float>) {
        let frames = samples.count / 2
        for f in 0..<frames {
            var energy = 0.0
            for c in 0..<2 {
                let x = samples[2 * f + c]
                let z = highPass[c].run(shelf[c].run(Double(x)))
                energy += z * z
                history[c][historyIndex] = x
                peak = max(peak, abs(x))
            }
            historyIndex = (historyIndex + 1) & 15
            // Interpolate between the samples 8 and 7 back (the kernel is centred).
            for c in 0..<2 {
                for k in Self.kernel {
                    var y: Float = 0
                    for i in 0..<16 { y += k[i] * history[c][(historyIndex + i) & 15] }
                    peak = max(peak, abs(y))
                }
            }
            stepEnergy += energy
            stepFrames += 1
            if stepFrames == Self.stepLength {
                steps.append(stepEnergy / Double(Self.stepLength))
                stepEnergy = 0
                stepFrames = 0
            }
        }
    }

    /// Measures interleaved stereo samples.
    public mutating func add(_ samples: [Float]) {
        samples.withUnsafeBufferPointer { add($0) }
    }

    /// Integrated loudness in LUFS (gated), or `-.infinity` for silence or under 400 ms.
    public var integratedLoudness: Double {
        guard steps.count >= 4 else { return -.infinity }
        var blocks: [Double] = []
        for i in 3..<steps.count { blocks.append((steps[i - 3] + steps[i - 2] + steps[i - 1] + steps[i]) / 4) }
        func lufs(_ power: Double) -> Double { -0.691 + 10 * log10(power) }
        let absolute = blocks.filter { $0 > 0 && lufs($0) > -70 }
        guard !absolute.isEmpty else { return -.infinity }
        let relativeGate = lufs(absolute.reduce(0, +) / Double(absolute.count)) - 10
        let gated = absolute.filter { lufs($0) > relativeGate }
        return lufs(gated.reduce(0, +) / Double(gated.count))
    }

    /// The true peak (4× oversampled) in dBTP.
    public var truePeak: Double { peak > 0 ? 20 * log10(Double(peak)) : -.infinity }
}
