import Logging
import Synchronization
import VigilAudio
public import VigilPlugin

/// The silent-engine plugin: keeps the audio sink awake with an inaudible stream that mixes with
/// other programs, costs almost nothing and heals itself.
public enum SilentEnginePlugin {
    /// The implementation for manifest entry `"silent-engine"`.
    public static let implementation = PluginImplementation(entry: "silent-engine") { context in
        try SilentEngine(context: context)
    }
}

/// One silent-engine instance: one ``PlaybackStream`` while started.
final class SilentEngine: KeepAlivePlugin {
    let context: PluginContext
    let settings: SilentEngineSettings
    private let stream = Mutex<PlaybackStream?>(nil)

    init(context: PluginContext) throws {
        self.context = context
        self.settings = try SilentEngineSettings(context.settings)
    }

    /// Opens the stream (a failure is the start failure), reports ready, plays until cancelled,
    /// then closes the stream.
    func run() async throws {
        let reporter = context.reporter
        let metrics = StreamMetrics(factory: context.metrics, plugin: context.pluginName)
        var logger = context.logger
        logger[metadataKey: "audio.mode"] = "\(settings.mode.rawValue)"
        let playback = PlaybackStream(
            configuration: settings.playbackConfiguration(hostName: context.hostName, environment: context.environment),
            source: settings.signal,
            logger: logger
        ) { event in
            switch event {
            case .interrupted(let error):
                metrics.interrupted(error)
                reporter.report(.interrupted(reason: error.message))
            case .resumed:
                metrics.resumed()
                reporter.report(.resumed)
            case .resumeFailed(let error):
                metrics.up(false)
                reporter.report(.resumeFailed(reason: error.message))
            }
        } onObservation: {
            metrics.observed($0)
        }
        do {
            try await playback.start()
        } catch {
            throw PluginError.startFailed(plugin: context.pluginName, reason: error.message)
        }
        stream.withLock { $0 = playback }
        metrics.up(true)
        reporter.ready()
        await PluginLifetime.untilCancelled()
        stream.withLock { $0 = nil }
        metrics.up(false)
        await PluginLifetime.uncancelled { await playback.stop() }
    }

    func details() async -> [String: String] {
        var details: [String: String] = ["mode": settings.mode.rawValue]
        switch settings.mode {
        case .zero: break
        case .fluctuate: details["fluctuate_rate_hz"] = "\(settings.fluctuateRate)"
        case .sine:
            details["sine_frequency_hz"] = "\(settings.sineFrequency)"
            details["sine_amplitude"] = "\(settings.sineAmplitude)"
        case .noise: details["noise_level"] = "\(settings.noiseLevel)"
        }
        guard let status = stream.withLock({ $0?.status }) else {
            details["state"] = "stopped"
            details["device"] = settings.playback.device ?? "auto"
            return details
        }
        details["state"] = status.state.rawValue
        details["device"] = status.device ?? settings.playback.device ?? "auto"
        if let backend = status.backend { details["backend"] = backend.rawValue }
        details["buffer_ms"] = "\(status.bufferMilliseconds)"
        details["frames_written"] = "\(status.framesWritten)"
        details["interruptions"] = "\(status.interruptions)"
        details["underruns"] = "\(status.underruns)"
        if let error = status.lastError, status.state != .running { details["last_error"] = error.message }
        return details
    }
}
