import Testing

@testable import VigilSilentEngine

@Suite("silent-engine signals")
struct SilentSignalTests {
    /// Renders `frames` stereo frames from `signal`, in chunks of `chunk` frames.
    static func render(_ signal: inout SilentSignal, frames: Int, chunk: Int = 700) -> [Int16] {
        var out: [Int16] = []
        var left = frames
        while left > 0 {
            let n = min(chunk, left)
            var buffer = [Int16](repeating: 99, count: n * 2)
            buffer.withUnsafeMutableBufferPointer { signal.render(into: $0) }
            out += buffer
            left -= n
        }
        return out
    }

    @Test("zero is digital silence")
    func zero() {
        var signal = SilentSignal(mode: .zero)
        #expect(Self.render(&signal, frames: 5000).allSatisfy { $0 == 0 })
    }

    @Test("only zero mode says it is silent (the PulseAudio backend then sends gaps, not samples)")
    func silence() {
        for mode in SilentSignal.Mode.allCases {
            #expect(SilentSignal(mode: mode).isSilent == (mode == .zero), "\(mode)")
        }
    }

    @Test("fluctuate puts ±1 in both channels every 1/rate s with alternating sign, across chunk borders")
    func fluctuate() {
        var signal = SilentSignal(mode: .fluctuate, fluctuateRate: 50)
        let samples = Self.render(&signal, frames: 48_000)
        let left = stride(from: 0, to: samples.count, by: 2).map { samples[$0] }
        let right = stride(from: 1, to: samples.count, by: 2).map { samples[$0] }
        #expect(left == right)
        let pulses = left.enumerated().filter { $0.element != 0 }
        #expect(pulses.map(\.offset) == Array(stride(from: 0, to: 48_000, by: 960)))
        #expect(pulses.map(\.element) == (0..<50).map { $0 % 2 == 0 ? 1 : -1 })
    }

    @Test("sine has the exact samples of amplitude·32767·sin(2πfn/48000), continuous across chunks")
    func sine() {
        var signal = SilentSignal(mode: .sine, sineFrequency: 30, sineAmplitude: 0.01)
        let samples = Self.render(&signal, frames: 9600)
        for n in [0, 1, 400, 401, 699, 700, 1600, 4000, 9599] {
            let expected = Int16((0.01 * 32767 * sin(2 * Double.pi * 30 * Double(n) / 48_000)).rounded())
            #expect(samples[2 * n] == expected, "frame \(n)")
            #expect(samples[2 * n + 1] == expected, "frame \(n)")
        }
        // Quarter period of 30 Hz is frame 400: the peak, 1 % of full scale.
        #expect(samples[800] == 328)
        #expect(samples.map { abs(Int($0)) }.max() == 328)
    }

    @Test("noise stays within ±level, is centred and deterministic")
    func noise() {
        var a = SilentSignal(mode: .noise, noiseLevel: 0.001)
        var b = SilentSignal(mode: .noise, noiseLevel: 0.001)
        let samples = Self.render(&a, frames: 48_000)
        #expect(samples == Self.render(&b, frames: 48_000))
        #expect(samples.allSatisfy { abs(Int($0)) <= 33 })
        #expect(Set(samples).count > 40)
        let mean = samples.reduce(0.0) { $0 + Double($1) } / Double(samples.count)
        #expect(abs(mean) < 0.5)
    }
}

#if canImport(Glibc)
import Glibc
#endif
