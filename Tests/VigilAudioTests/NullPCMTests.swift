import Foundation
import Testing
import VigilTestSupport

@testable import VigilAudio

/// The writer loop on the clock-less ALSA `null` PCM: it must pace itself, stop promptly and
/// release everything.
@Suite("Playback on the null PCM")
struct NullPCMTests {
    /// A stream of zeros on the `null` PCM, started.
    func startedOnNull(bufferMilliseconds: Int) async throws -> PlaybackStream {
        let stream = PlaybackStream(
            configuration: PlaybackConfiguration(device: "null", bufferMilliseconds: bufferMilliseconds),
            source: ZeroSource(), logger: quietLogger)
        try await stream.start()
        return stream
    }

    @Test("paces itself by the wall clock instead of spinning")
    func pacing() async throws {
        let stream = try await startedOnNull(bufferMilliseconds: 400)
        let tid = try #require(stream.status.writerThreadID)
        let cpuBefore = try #require(ProcSelf.threadCPUNanoseconds(tid))
        let framesBefore = stream.status.framesWritten
        let started = Date()
        try await Task.sleep(nanoseconds: 1_200_000_000)
        let cpuAfter = try #require(ProcSelf.threadCPUNanoseconds(tid))
        let elapsed = Date().timeIntervalSince(started)
        let written = stream.status.framesWritten - framesBefore
        await stream.stop()

        // A spinning writer would burn ~1.2 s of CPU and write millions of frames.
        #expect(cpuAfter - cpuBefore < 50_000_000, "writer used \(cpuAfter - cpuBefore) ns of CPU in \(elapsed) s")
        // Paced by the wall clock: it writes what 48 kHz would consume in that time, ± one buffer.
        let expected = elapsed * 48_000
        #expect(abs(Double(written) - expected) <= 48_000 * 0.5, "wrote \(written) frames in \(elapsed) s")
        #expect(stream.status.state == .stopped)
    }

    @Test("reports the buffer it got and counts frames")
    func statusAfterStart() async throws {
        let stream = try await startedOnNull(bufferMilliseconds: 1000)
        let status = stream.status
        await stream.stop()
        #expect(status.state == .running)
        #expect(status.device == "null")
        #expect(status.backend == .alsa)
        #expect(status.bufferMilliseconds == 1000)
        #expect(status.periodFrames == status.bufferFrames / 4)
        #expect(status.framesWritten >= UInt64(status.bufferFrames))
    }

    @Test("stop() returns promptly, twice, and start() twice opens one stream")
    func stopIsPromptAndIdempotent() async throws {
        let stream = try await startedOnNull(bufferMilliseconds: 10_000)
        let tid = try #require(stream.status.writerThreadID)
        try await stream.start()
        #expect(stream.status.writerThreadID == tid)
        let begin = Date()
        await stream.stop()
        let took = Date().timeIntervalSince(begin)
        await stream.stop()
        #expect(took < 0.5, "stop took \(took) s with a 10 s buffer")
        // The writer thread is gone once it has exited (it may still be on its way out) (descriptor and thread leaks over many reopens are checked
        // in a separate process by the restart test, where nothing else runs).
        #expect(
            await RuntimeFixtures.waitUntil(timeout: 5) {
                !FileManager.default.fileExists(atPath: "/proc/self/task/\(tid)")
            })
        #expect(stream.status.writerThreadID == nil)
        #expect(stream.status.state == .stopped)
    }

    @Test("an unknown device fails start() with the ALSA error and a remedy")
    func unknownDevice() async throws {
        let stream = PlaybackStream(
            configuration: PlaybackConfiguration(device: "no_such_pcm_vigil"), source: ZeroSource(), logger: quietLogger
        )
        let error = await #expect(throws: AudioError.self) { try await stream.start() }
        #expect(error?.code == .openFailed)
        #expect(error?.function == "snd_pcm_open")
        #expect(error?.errno == ENOENT)
        #expect(error?.message.contains("aplay -L") == true)
        #expect(stream.status.state == .stopped)
    }

    @Test("configuration values out of range are refused before anything opens")
    func invalidConfiguration() async throws {
        for configuration in [
            PlaybackConfiguration(device: "null", bufferMilliseconds: 50),
            PlaybackConfiguration(device: "null", healthCheckSeconds: 0),
            PlaybackConfiguration(device: "null", retryInitialMilliseconds: 500, retryMaxMilliseconds: 100),
            PlaybackConfiguration(device: "null", retryBudget: -1),
            PlaybackConfiguration(device: ""),
        ] {
            let stream = PlaybackStream(configuration: configuration, source: ZeroSource(), logger: quietLogger)
            let error = await #expect(throws: AudioError.self) { try await stream.start() }
            #expect(error?.code == .invalidConfiguration)
        }
    }
}
