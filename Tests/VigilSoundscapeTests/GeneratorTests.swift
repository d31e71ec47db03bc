import Foundation
import Testing
import VigilSoundFile
import VigilTestSupport

@testable import VigilSoundscape

/// Renders `seconds` of `voice` as interleaved stereo.
func render(_ voice: any Voice, seconds: Double) -> [Float] {
    var out = [Float](repeating: 0, count: Int(seconds * 48_000) * 2)
    var offset = 0
    while offset < out.count {
        let n = min(8192, out.count - offset)
        out.withUnsafeMutableBufferPointer {
            voice.render(into: UnsafeMutableBufferPointer(rebasing: $0[offset..<(offset + n)]))
        }
        offset += n
    }
    return out
}

func left(_ interleaved: [Float]) -> [Float] { stride(from: 0, to: interleaved.count, by: 2).map { interleaved[$0] } }

/// Writes the render to a WAV (through VigilSoundFile) and returns `sox FILE -n stats` output.
func soxStats(_ samples: [Float], in dir: TestDirectory, name: String) throws -> String {
    let path = dir.url("\(name).wav")
    let writer = try SoundFileWriter(path: path, format: .wav, sampleRate: 48_000, channels: 2)
    try writer.write(samples)
    try writer.finish()
    // sox prints its statistics on standard error.
    return try ChildProcess.run("/bin/sh", ["-c", "exec /usr/bin/sox \"$0\" -n stats 2>&1", path])
}

/// A `sox stats` field of the overall column ("RMS lev dB", "Pk lev dB", …).
func soxField(_ stats: String, _ name: String) -> Double? {
    for line in stats.split(separator: "\n") where line.hasPrefix(name) {
        return line.split(separator: " ", omittingEmptySubsequences: true).compactMap { Double($0) }.first
    }
    return nil
}

@Suite("soundscape voices sound like their names (20 s renders)", .serialized)
struct GeneratorTests {
    @Test(
        "every voice is levelled to −27 LUFS with true peaks ≤ −6 dBTP, and sox hears the same level",
        arguments: ["ocean-waves", "rain", "brown-noise", "pink-noise"])
    func loudness(id: String) throws {
        let dir = try TestDirectory("vigil-voice")
        defer { dir.remove() }
        let samples = render(makeGeneratedVoice(id, seed: 42)!, seconds: 20)
        var meter = LoudnessMeter()
        meter.add(samples)
        #expect(
            abs(meter.integratedLoudness - Soundscape.targetLoudness) <= 1.0, "\(id): \(meter.integratedLoudness) LUFS")
        #expect(meter.truePeak <= Soundscape.truePeakCeiling, "\(id): \(meter.truePeak) dBTP")
        // Listened to by another program: sox's RMS and peak agree that it is quiet and not clipped.
        let stats = try soxStats(samples, in: dir, name: id)
        let rms = try #require(soxField(stats, "RMS lev dB"), "sox stats: \(stats)")
        let peak = try #require(soxField(stats, "Pk lev dB"))
        #expect((-40.0)...(-15.0) ~= rms, "\(id): sox RMS \(rms) dB")
        #expect(peak <= -6, "\(id): sox peak \(peak) dB")
        // A different seed gives different audio (nothing repeats between runs).
        let other = render(makeGeneratedVoice(id, seed: 43)!, seconds: 0.5)
        #expect(Array(other.prefix(1000)) != Array(samples.prefix(1000)))
    }

    @Test("brown noise falls 6 dB per octave, pink noise 3 dB")
    func noiseSlopes() {
        for (id, expected) in [("brown-noise", -6.0), ("pink-noise", -3.0)] {
            let spectrum = Spectrum(left(render(makeGeneratedVoice(id, seed: 7)!, seconds: 20)))
            let levels = spectrum.octaveDensities(from: 100, count: 6)  // 100 Hz … 6.4 kHz
            let slope = Spectrum.slope(levels)
            #expect(abs(slope - expected) < 1.0, "\(id): \(slope) dB/octave, bands \(levels)")
        }
    }

    @Test("ocean waves swell slowly: the envelope's modulation peaks between 0.05 and 0.2 Hz, several dB deep")
    func oceanEnvelope() {
        let samples = left(render(OceanWavesVoice(seed: 11), seconds: 20))
        let envelope = Envelope(samples)
        let modulation = envelope.modulation(upTo: 2)
        let slow = modulation.filter { $0.frequency >= 0.05 && $0.frequency <= 0.2 }.map(\.power).reduce(0, +)
        let fast = modulation.filter { $0.frequency > 0.2 }.map(\.power).reduce(0, +)
        #expect(slow > fast, "slow \(slow), fast \(fast)")
        let peak = modulation.max { $0.power < $1.power }!
        #expect(peak.frequency >= 0.05 && peak.frequency <= 0.2, "envelope peak at \(peak.frequency) Hz")
        #expect(envelope.depth > 6, "swells only \(envelope.depth) dB deep")
        // Low-frequency weighted like surf, not like hiss.
        let spectrum = Spectrum(samples)
        #expect(spectrum.bandPower(20, 500) > spectrum.bandPower(2000, 20_000))
    }

    @Test("rain is a steady, bright hiss with impulsive drops")
    func rain() {
        let samples = left(render(RainVoice(seed: 5), seconds: 20))
        let envelope = Envelope(samples, window: 48_000)  // 1 s windows
        #expect(envelope.depth < 4, "rain swings \(envelope.depth) dB second to second")
        let spectrum = Spectrum(samples)
        #expect(spectrum.centroid > 1500, "centroid \(spectrum.centroid) Hz")
        // Drops: far heavier tails than Gaussian noise (kurtosis 3) in the band where they ring.
        var highPassed = [Float](repeating: 0, count: samples.count)
        for i in 1..<samples.count { highPassed[i] = samples[i] - samples[i - 1] }
        let n = Double(highPassed.count)
        let m2 = highPassed.reduce(0.0) { $0 + Double($1) * Double($1) } / n
        let m4 = highPassed.reduce(0.0) { $0 + pow(Double($1), 4) } / n
        #expect(m4 / (m2 * m2) > 5, "kurtosis \(m4 / (m2 * m2))")
        // Brown noise, by contrast, is neither bright nor impulsive.
        let brown = Spectrum(left(render(BrownNoiseVoice(seed: 5), seconds: 5)))
        #expect(brown.centroid < 1000)
    }
}
