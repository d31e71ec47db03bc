import Foundation
import Logging
import Testing
import VigilSoundFile
import VigilTestSupport

@testable import VigilSoundscape

/// A voice playing a constant value on both channels.
final class ConstantVoice: Voice {
    let value: Float
    init(_ value: Float) { self.value = value }
    func render(into buffer: UnsafeMutableBufferPointer<Float>) { buffer.update(repeating: value) }
}

/// Renders `frames` frames of the mixer (as the writer thread would, in requests of `request` frames).
/// A mixer at `volume` playing `voice` (fading in from silence).
func playing(_ voice: some Voice, volume: Double) -> SoundscapeMixer {
    let mixer = SoundscapeMixer()
    mixer.update { $0.volume = volume }
    mixer.play(voice)
    return mixer
}

func mix(_ mixer: SoundscapeMixer, frames: Int, request: Int = 4800) -> [Int16] {
    var out = [Int16](repeating: 0, count: frames * 2)
    var offset = 0
    while offset < frames {
        let n = min(request, frames - offset)
        out.withUnsafeMutableBufferPointer {
            mixer.render(into: UnsafeMutableBufferPointer(rebasing: $0[(2 * offset)..<(2 * (offset + n))]))
        }
        offset += n
    }
    return out
}

@Suite("soundscape mixer: ramps, crossfades, silence, sleep timer")
struct MixerTests {
    @Test("volume changes ramp within 50 ms with no step larger than the ramp allows")
    func volumeRamp() {
        let mixer = playing(ConstantVoice(0.5), volume: 0.3)
        let start = mix(mixer, frames: 4800)
        // Faded in from silence, reaching 0.3 × 0.5 within 50 ms (2400 frames).
        #expect(start[0] < 100)
        #expect(abs(Int(start[2 * 2400]) - Int(0.15 * 32767)) <= 2)
        mixer.update { $0.volume = 1 }
        let up = mix(mixer, frames: 4800)
        #expect(abs(Int(up[2 * 2400]) - Int(0.5 * 32767)) <= 2, "not at full volume 50 ms later")
        let steps = zip(up.dropFirst(2), up).map { abs(Int($0) - Int($1)) }
        #expect(steps.max()! <= 8, "a step of \(steps.max()!) (zipper noise)")
    }

    @Test("Off, pause and cork are exact digital silence; the voice resumes afterwards")
    func silence() {
        let mixer = playing(ConstantVoice(0.5), volume: 0)
        #expect(mix(mixer, frames: 9600).allSatisfy { $0 == 0 })
        mixer.update { $0.volume = 0.5 }
        #expect(mix(mixer, frames: 4800).last! == Int16(0.25 * 32767))
        for silence: (inout SoundscapeMixer.Controls) -> Void in [{ $0.paused = true }, { $0.corked = true }] {
            mixer.update(silence)
            let faded = mix(mixer, frames: 9600)
            #expect(faded.suffix(9600).allSatisfy { $0 == 0 })
            #expect(faded[0] > 0, "cut rather than faded")
            mixer.update {
                $0.paused = false
                $0.corked = false
            }
            #expect(mix(mixer, frames: 4800).last! == Int16(0.25 * 32767))
        }
    }

    @Test("a swap crossfades over 400 ms with equal power, with no gap")
    func crossfade() {
        let mixer = playing(ConstantVoice(0.4), volume: 1)
        _ = mix(mixer, frames: 4800)
        mixer.play(ConstantVoice(-0.4))
        let swap = mix(mixer, frames: 24_000).enumerated().filter { $0.offset % 2 == 0 }.map {
            Double($0.element) / 32767
        }
        // Start: all old; end: all new; in the middle both at cos/sin(π/4) (equal power).
        #expect(abs(swap[0] - 0.4) < 0.01)
        #expect(abs(swap[19_200] + 0.4) < 0.01)
        #expect(abs(swap[9_600] - 0.4 * (cos(Double.pi / 4) - sin(Double.pi / 4))) < 0.01)
        let steps = zip(swap.dropFirst(), swap).map { abs($0 - $1) }
        #expect(steps.max()! < 0.001)
    }

    @Test("the sleep timer fades out over its last 30 s, then silence")
    func sleepTimer() {
        let mixer = playing(ConstantVoice(0.5), volume: 1)
        _ = mix(mixer, frames: 4800)
        let end = mixer.framesRendered + 40 * 48_000
        mixer.update { $0.sleepEndFrame = end }
        let out = mix(mixer, frames: 45 * 48_000, request: 48_000).enumerated().filter { $0.offset % 2 == 0 }.map(
            \.element)
        #expect(out[5 * 48_000] == Int16(0.5 * 32767))  // before the fade
        #expect(abs(Int(out[25 * 48_000]) - Int(0.25 * 32767)) < 200)  // half-way through the fade
        #expect(out[(40 * 48_000)...].allSatisfy { $0 == 0 })
    }
}

@Suite("soundscape files: levelled, looped without a click")
struct FileVoiceTests {
    @Test("a looped sine shows no discontinuity at the loop point above its own sample-to-sample change")
    func seamlessLoop() throws {
        let dir = try TestDirectory("vigil-loop")
        defer { dir.remove() }
        // 1.2345 s of 440 Hz: the loop point falls mid-cycle, so a plain loop would click.
        let path = dir.url("tone.flac")
        let writer = try SoundFileWriter(path: path, format: .flac, sampleRate: 44_100, channels: 1)
        let frames = Int(1.2345 * 44_100)
        try writer.write((0..<frames).map { Float(0.3 * sin(2 * Double.pi * 440 * Double($0) / 44_100)) })
        try writer.finish()
        let analysis = try FileAnalysis.measure(path: path)
        #expect(abs(analysis.frames - Int(1.2345 * 48_000)) <= 2)
        let voice = try FileVoice(path: path, analysis: analysis, logger: Logger(label: "test"))
        let out = left(render(voice, seconds: 5))  // four loop points
        let own = 0.3 * Double(analysis.gain) * 2 * sin(Double.pi * 440 / 48_000)
        let worst = zip(out.dropFirst(), out).map { Double(abs($0 - $1)) }.max()!
        #expect(worst <= own * 1.5, "largest step \(worst), the tone's own \(own)")
        // No gap: the level never collapses (a gap or a cancelling crossfade would).
        let envelope = Envelope(out, window: 480)
        #expect(envelope.values.min()! > 0.3 * Double(analysis.gain) * 0.5)
        // Levelled: 0.3 sine is about −13.5 LUFS; the gain brings it to −27 (or lower for the peak ceiling).
        var meter = LoudnessMeter()
        meter.add(render(try FileVoice(path: path, analysis: analysis, logger: Logger(label: "test")), seconds: 5))
        #expect(meter.integratedLoudness <= -26)
        #expect(meter.truePeak <= -6)
    }
}
