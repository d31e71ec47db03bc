import Synchronization
import VigilAudio

#if canImport(Glibc)
import Glibc
#endif

/// What the soundscape stream plays: the current voice (crossfaded from the previous one on a
/// swap), times the volume, ramped so no change clicks or zips, times the sleep-timer fade.
///
/// Controls are set from any thread; the audio writer thread reads them once per request and
/// renders. Silence (volume 0, paused, corked, asleep) is rendered as exact zeros, without
/// running the voice.
final class SoundscapeMixer: @unchecked Sendable {
    struct Controls: Sendable {
        /// The volume 0…1 (linear gain over the −27 LUFS reference level).
        var volume: Double = 0.3
        /// Paused or stopped by the user: silent, stream kept.
        var paused = false
        /// The sound server asked the stream to cork: silent, stream kept.
        var corked = false
        /// The sleep timer's end, in frames rendered; the last 30 s fade out. `nil` when off.
        var sleepEndFrame: UInt64?
    }

    private final class VoiceBox: @unchecked Sendable {
        let voice: any Voice
        init(_ voice: any Voice) { self.voice = voice }
    }

    private struct Shared {
        var controls = Controls()
        var pending: VoiceBox?
        var framesRendered: UInt64 = 0
    }

    private let shared = Mutex(Shared())

    // Writer thread only.
    private var current: (any Voice)?
    private var outgoing: (any Voice)?
    private var crossfadeFrame = 0
    private var gain: Float = 0
    private var frames: UInt64 = 0
    private var scratchIn = [Float](repeating: 0, count: chunk * 2)
    private var scratchOut = [Float](repeating: 0, count: chunk * 2)

    static let sampleRate = 48_000
    private static let chunk = 4096
    /// Equal-power crossfade on a swap: 400 ms.
    static let crossfadeFrames = 19_200
    /// The longest volume ramp: 0 → 1 in 50 ms.
    private static let rampStep: Float = 1 / 2_400
    /// The sleep timer's fade: 30 s.
    static let sleepFadeFrames: UInt64 = 30 * 48_000

    /// The controls now in force.
    var controls: Controls { shared.withLock { $0.controls } }

    /// Frames rendered so far (the stream's clock, ahead of what is heard by the buffer).
    var framesRendered: UInt64 { shared.withLock { $0.framesRendered } }

    /// Changes the controls; the writer applies them at its next request.
    func update(_ body: (inout Controls) -> Void) {
        shared.withLock { body(&$0.controls) }
    }

    /// Swaps in `voice`: crossfaded from the current one (or faded in by the volume ramp).
    func play(_ voice: any Voice) {
        shared.withLock { $0.pending = VoiceBox(voice) }
    }

    /// The source to hand a ``PlaybackStream``.
    var source: Source { Source(mixer: self) }

    /// A ``SampleSource`` that renders this mixer.
    struct Source: SampleSource {
        let mixer: SoundscapeMixer
        func render(into buffer: UnsafeMutableBufferPointer<Int16>) { mixer.render(into: buffer) }
    }

    func render(into buffer: UnsafeMutableBufferPointer<Int16>) {
        let (controls, pending) = shared.withLock { s -> (Controls, VoiceBox?) in
            defer { s.pending = nil }
            return (s.controls, s.pending)
        }
        if let pending {
            if let current {
                outgoing = current
                crossfadeFrame = 0
            }
            current = pending.voice
        }
        let silent = controls.paused || controls.corked || controls.volume <= 0
        let target: Float = silent ? 0 : Float(min(1, controls.volume))
        var offset = 0
        let total = buffer.count / 2
        while offset < total {
            let n = min(Self.chunk, total - offset)
            renderChunk(into: buffer, offset: offset, frames: n, target: target, sleepEnd: controls.sleepEndFrame)
            offset += n
            frames += UInt64(n)
        }
        let rendered = frames
        shared.withLock { $0.framesRendered = rendered }
    }

    /// `x` clamped to ±32767 and truncated to a sample.
    @inline(__always)
    private static func sample(_ x: Float) -> Int16 { Int16(max(-32767, min(32767, x))) }

    private func sleepFactor(at frame: UInt64, end: UInt64?) -> Float {
        guard let end else { return 1 }
        if frame >= end { return 0 }
        let left = end - frame
        return left >= Self.sleepFadeFrames ? 1 : Float(left) / Float(Self.sleepFadeFrames)
    }

    private func renderChunk(
        into buffer: UnsafeMutableBufferPointer<Int16>, offset: Int, frames n: Int, target: Float, sleepEnd: UInt64?
    ) {
        let startFactor = sleepFactor(at: frames, end: sleepEnd)
        let endFactor = sleepFactor(at: frames + UInt64(n), end: sleepEnd)
        guard let current, gain > 0 || target > 0, startFactor > 0 || endFactor > 0 else {
            // Exact silence; a pending crossfade is moot.
            outgoing = nil
            gain = gain > 0 ? gain : 0
            for i in (2 * offset)..<(2 * (offset + n)) { buffer[i] = 0 }
            return
        }
        scratchOut.withUnsafeMutableBufferPointer { out in
            let out = UnsafeMutableBufferPointer(rebasing: out[0..<(2 * n)])
            current.render(into: out)
            if let outgoing {
                scratchIn.withUnsafeMutableBufferPointer { inBuffer in
                    let old = UnsafeMutableBufferPointer(rebasing: inBuffer[0..<(2 * n)])
                    outgoing.render(into: old)
                    for f in 0..<n {
                        let t = Float(min(crossfadeFrame + f, Self.crossfadeFrames)) / Float(Self.crossfadeFrames)
                        let rise = sinf(Float.pi / 2 * t), fall = cosf(Float.pi / 2 * t)
                        out[2 * f] = out[2 * f] * rise + old[2 * f] * fall
                        out[2 * f + 1] = out[2 * f + 1] * rise + old[2 * f + 1] * fall
                    }
                }
                crossfadeFrame += n
                if crossfadeFrame >= Self.crossfadeFrames { self.outgoing = nil }
            }
            guard let source = out.baseAddress, let destination = buffer.baseAddress?.advanced(by: 2 * offset)
            else { return }
            var g = gain
            let factorStep = (endFactor - startFactor) / Float(n)
            if g == target && factorStep == 0 {
                // Steady (no ramp, no fade): one factor for the whole chunk.
                let k = g * startFactor * 32767
                for i in 0..<(2 * n) { destination[i] = Self.sample(source[i] * k) }
                return
            }
            for f in 0..<n {
                let delta = target - g
                g += max(-Self.rampStep, min(Self.rampStep, delta))
                let k = g * (startFactor + factorStep * Float(f)) * 32767
                destination[2 * f] = Self.sample(source[2 * f] * k)
                destination[2 * f + 1] = Self.sample(source[2 * f + 1] * k)
            }
            gain = g
        }
    }
}
