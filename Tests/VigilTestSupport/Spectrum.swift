import Foundation

/// Power spectra and band levels of a mono signal, for checking that generated sound has the
/// spectrum its name promises (Welch's method: Hann-windowed, half-overlapping segments).
public struct Spectrum: Sendable {
    /// Mean power per FFT bin, bins 0…size/2.
    public let power: [Double]
    /// The sample rate.
    public let sampleRate: Double
    /// The FFT size.
    public let size: Int

    /// Averages the spectra of `size`-sample segments of `signal` (size a power of two).
    public init(_ signal: [Float], sampleRate: Double = 48_000, size: Int = 8192) {
        self.sampleRate = sampleRate
        self.size = size
        let window = (0..<size).map { 0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(size)) }
        var sum = [Double](repeating: 0, count: size / 2 + 1)
        var segments = 0
        var start = 0
        while start + size <= signal.count {
            var re = (0..<size).map { Double(signal[start + $0]) * window[$0] }
            var im = [Double](repeating: 0, count: size)
            Self.fft(&re, &im)
            for k in 0...(size / 2) { sum[k] += re[k] * re[k] + im[k] * im[k] }
            segments += 1
            start += size / 2
        }
        power = sum.map { $0 / Double(max(segments, 1)) }
    }

    /// The total power between `low` and `high` Hz.
    public func bandPower(_ low: Double, _ high: Double) -> Double {
        let binWidth = sampleRate / Double(size)
        let first = max(1, Int((low / binWidth).rounded(.up)))
        let last = min(size / 2, Int((high / binWidth).rounded(.down)))
        guard first <= last else { return 0 }
        return power[first...last].reduce(0, +)
    }

    /// The level in dB of each octave band starting at `from` Hz (`count` bands), as power
    /// *density* (per Hz), so white noise is flat, pink falls 3 dB and brown 6 dB per octave.
    public func octaveDensities(from: Double, count: Int) -> [Double] {
        (0..<count).map { i in
            let low = from * pow(2, Double(i))
            return 10 * log10(bandPower(low, 2 * low) / low)
        }
    }

    /// The least-squares slope of `levels` (dB) per step.
    public static func slope(_ levels: [Double]) -> Double {
        let n = Double(levels.count)
        let xs = (0..<levels.count).map(Double.init)
        let mx = xs.reduce(0, +) / n, my = levels.reduce(0, +) / n
        let sxy = zip(xs, levels).map { ($0 - mx) * ($1 - my) }.reduce(0, +)
        let sxx = xs.map { ($0 - mx) * ($0 - mx) }.reduce(0, +)
        return sxy / sxx
    }

    /// The spectral centroid in Hz.
    public var centroid: Double {
        let binWidth = sampleRate / Double(size)
        let total = power.reduce(0, +)
        return power.enumerated().map { Double($0.offset) * binWidth * $0.element }.reduce(0, +) / total
    }

    /// In-place iterative radix-2 FFT.
    public static func fft(_ re: inout [Double], _ im: inout [Double]) {
        let n = re.count
        var j = 0
        for i in 1..<n {
            var bit = n >> 1
            while j & bit != 0 {
                j ^= bit
                bit >>= 1
            }
            j |= bit
            if i < j {
                re.swapAt(i, j)
                im.swapAt(i, j)
            }
        }
        var length = 2
        while length <= n {
            let angle = -2 * Double.pi / Double(length)
            let wr = cos(angle), wi = sin(angle)
            var start = 0
            while start < n {
                var cr = 1.0, ci = 0.0
                for k in 0..<(length / 2) {
                    let a = start + k, b = a + length / 2
                    let tr = re[b] * cr - im[b] * ci
                    let ti = re[b] * ci + im[b] * cr
                    re[b] = re[a] - tr
                    im[b] = im[a] - ti
                    re[a] += tr
                    im[a] += ti
                    let ncr = cr * wr - ci * wi
                    ci = cr * wi + ci * wr
                    cr = ncr
                }
                start += length
            }
            length <<= 1
        }
    }
}

/// The RMS envelope of a mono signal in windows of `window` samples, and the share of its
/// (mean-removed) modulation power in a frequency band: for checking slow swells such as waves.
public struct Envelope: Sendable {
    /// RMS per window.
    public let values: [Double]
    /// Windows per second.
    public let rate: Double

    public init(_ signal: [Float], sampleRate: Double = 48_000, window: Int = 2400) {
        var values: [Double] = []
        var i = 0
        while i + window <= signal.count {
            var sum = 0.0
            for k in i..<(i + window) { sum += Double(signal[k]) * Double(signal[k]) }
            values.append((sum / Double(window)).squareRoot())
            i += window
        }
        self.values = values
        rate = sampleRate / Double(window)
    }

    /// Power of the envelope's modulation per frequency (DFT of the mean-removed envelope), as
    /// (frequency, power) pairs from 1/length up to `maxFrequency`.
    public func modulation(upTo maxFrequency: Double) -> [(frequency: Double, power: Double)] {
        let n = values.count
        let mean = values.reduce(0, +) / Double(n)
        let centred = values.map { $0 - mean }
        var out: [(Double, Double)] = []
        var k = 1
        while Double(k) * rate / Double(n) <= maxFrequency {
            var re = 0.0, im = 0.0
            for (t, v) in centred.enumerated() {
                let phase = 2 * Double.pi * Double(k) * Double(t) / Double(n)
                re += v * cos(phase)
                im -= v * sin(phase)
            }
            out.append((Double(k) * rate / Double(n), re * re + im * im))
            k += 1
        }
        return out
    }

    /// The ratio of the 90th to the 10th percentile of the envelope, in dB (how deep the swells are).
    public var depth: Double {
        let sorted = values.sorted()
        let low = sorted[sorted.count / 10], high = sorted[sorted.count * 9 / 10]
        return 20 * log10(high / max(low, 1e-12))
    }
}
