/// Measurements of interleaved stereo S16 audio, for checking what reached a sink's monitor.
public struct AudioAnalysis: Sendable {
    /// The left channel's samples.
    public let left: [Int16]
    /// The sample rate.
    public let sampleRate: Double

    /// Analyses interleaved stereo `samples` at `sampleRate`, skipping `trimSeconds` at each end
    /// (stream start-up and capture shutdown).
    public init(interleaved samples: [Int16], sampleRate: Double = 48_000, trimSeconds: Double = 0) {
        var left = stride(from: 0, to: samples.count - 1, by: 2).map { samples[$0] }
        let trim = Int(trimSeconds * sampleRate)
        if left.count > 2 * trim { left = Array(left[trim..<(left.count - trim)]) } else { left = [] }
        self.left = left
        self.sampleRate = sampleRate
    }

    /// The largest absolute sample value.
    public var peak: Int { left.map { abs(Int($0)) }.max() ?? 0 }

    /// The RMS level as a fraction of full scale (32768).
    public var rms: Double {
        guard !left.isEmpty else { return 0 }
        let sum = left.reduce(0.0) { $0 + Double($1) * Double($1) }
        return (sum / Double(left.count)).squareRoot() / 32768
    }

    /// The start (a sample index) of each `windowSeconds` window whose peak exceeds `threshold`.
    public func audibleWindows(windowSeconds: Double = 0.01, threshold: Int) -> [Int] {
        let window = max(1, Int(windowSeconds * sampleRate))
        return stride(from: 0, to: left.count - window + 1, by: window).filter { start in
            left[start..<(start + window)].contains { abs(Int($0)) > threshold }
        }
    }

    /// Seconds from the start of the first audible 10 ms window to the end of the last (0 if none).
    public func audibleSpan(threshold: Int) -> Double {
        let windows = audibleWindows(threshold: threshold)
        guard let first = windows.first, let last = windows.last else { return 0 }
        return Double(last - first) / sampleRate + 0.01
    }

    /// The frequency of the dominant tone, estimated from rising zero crossings.
    public var zeroCrossingFrequency: Double {
        guard left.count > 1 else { return 0 }
        var crossings: [Int] = []
        for i in 1..<left.count where left[i - 1] < 0 && left[i] >= 0 { crossings.append(i) }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
        return Double(crossings.count - 1) * sampleRate / Double(last - first)
    }
}
