import FoundationEssentials
import Logging
import Synchronization
import VigilAudio
import VigilBase
public import VigilPlugin
import VigilSoundFile

#if canImport(Glibc)
import Glibc
#endif

/// The soundscape plugin: an audible ambient soundscape (ocean waves by default) that keeps the
/// host's audio output awake, with volume presets, hot swap, a sleep timer, saved preferences,
/// an MPRIS player and a control channel for `vigil soundscape`.
public enum SoundscapePlugin {
    /// The implementation for manifest entry `"soundscape"`.
    public static let implementation = PluginImplementation(entry: "soundscape") { context in
        try SoundscapeKeeper(context: context)
    }
}

/// One soundscape instance: one ``PlaybackStream`` fed by a ``SoundscapeMixer`` while started.
final class SoundscapeKeeper: KeepAlivePlugin {
    private struct Running {
        var stream: PlaybackStream
        var controller: SoundscapeController
        var writer: PreferenceWriter
        var mpris: MPRISServer?
        var channel: ControlChannel?
        var unavailableFiles: [String: String]
        var preferencesWarning: String?
    }

    let context: PluginContext
    let settings: SoundscapeSettings
    let environment: [String: String]
    private let running = Mutex<Running?>(nil)
    private let store: PreferenceStore

    init(context: PluginContext) throws {
        self.context = context
        self.settings = try SoundscapeSettings(context.settings)
        // The host's injected environment, never the process's (the control socket's location).
        self.environment = context.environment.variables
        // A save that starts failing (a full disk) or works again shows in `vigil status` at once.
        let reporter = context.reporter
        self.store = PreferenceStore(directory: context.stateDirectory, logger: context.logger) {
            reporter.report(.detailsChanged)
        }
    }

    /// Opens the stream (a failure is the start failure), reports ready, then runs the sleep
    /// timers and the MPRIS player as children until cancelled, and closes everything.
    func run() async throws {
        let opened = try await open()
        let metrics = SoundscapeMetrics(factory: context.metrics, plugin: context.pluginName)
        context.reporter.ready()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await opened.controller.runSleepTimers() }
            // The current state first, then each change, until cancelled.
            group.addTask { for await state in opened.controller.changes() { metrics.record(state) } }
            if let mpris = opened.mpris { group.addTask { await mpris.run() } }
            group.addTask { await PluginLifetime.untilCancelled() }
            await group.waitForAll()
        }
        metrics.stopped()
        await PluginLifetime.uncancelled { await self.close() }
    }

    private func open() async throws -> Running {
        let logger = context.logger
        // Measure user files (decoding each once, bounded memory) on a thread of our own.
        let files = settings.files
        let measured: [(String, String, Result<FileAnalysis, SoundFileError>)] = await offThread {
            files.map { file in
                (
                    file.name, file.path,
                    Result { () throws(SoundFileError) in try FileAnalysis.measure(path: file.path) }
                )
            }
        }
        var soundscapes = Soundscape.generated
        var analyses: [String: FileAnalysis] = [:]
        var unavailable: [String: String] = [:]
        for (name, path, result) in measured {
            switch result {
            case .success(let analysis):
                soundscapes.append(Soundscape(id: name, title: name, kind: .file, path: path))
                analyses[name] = analysis
            case .failure(let error):
                unavailable[name] = error.description
                logger.warning(
                    "Soundscape file left out",
                    metadata: ["soundscape.file": "\(name)", "soundscape.error": "\(error)"])
            }
        }
        let defaults = SoundscapePreferences(
            soundscape: soundscapes.contains { $0.id == settings.soundscape }
                ? settings.soundscape : Soundscape.defaultID,
            volume: settings.volume, paused: false)
        let (preferences, warning) = store.load(defaults: defaults, known: Set(soundscapes.map(\.id)))
        if let warning { logger.warning("Soundscape preferences: \(warning)") }

        let writer = PreferenceWriter(store: store)
        let mixer = SoundscapeMixer()
        let reporter = context.reporter
        // Every change (through the control channel, MPRIS or the host app) refreshes `vigil status`.
        let controller = SoundscapeController(
            soundscapes: soundscapes, analyses: analyses, preferences: preferences, mixer: mixer, logger: logger,
            onPreferences: { writer.save($0) }, onChange: { reporter.report(.detailsChanged) })
        if warning != nil { writer.save(preferences) }
        do {
            try controller.startPlaying()
        } catch {
            await writer.close()
            throw PluginError.startFailed(plugin: context.pluginName, reason: error.message)
        }

        let stream = PlaybackStream(
            configuration: settings.playbackConfiguration(hostName: context.hostName, environment: context.environment),
            source: mixer.source,
            logger: logger,
            onEvent: { event in
                switch event {
                case .interrupted(let error): reporter.report(.interrupted(reason: error.message))
                case .resumed: reporter.report(.resumed)
                case .resumeFailed(let error): reporter.report(.resumeFailed(reason: error.message))
                }
            },
            onServerRequest: { request in
                // A cork request (a phone call under module-role-cork): fade to silence, keep the
                // stream (and the keep-alive) running, and report the interruption.
                switch request {
                case .cork:
                    controller.setCorked(true)
                    reporter.report(
                        .interrupted(reason: "the sound server asked the soundscape to be quiet (a phone call?)"))
                case .uncork:
                    controller.setCorked(false)
                    reporter.report(.resumed)
                }
            })
        do {
            try await stream.start()
        } catch {
            controller.finish()
            await writer.close()
            throw PluginError.startFailed(plugin: context.pluginName, reason: error.message)
        }
        if settings.sleepTimerMinutes > 0 { try? controller.setSleepTimer(minutes: settings.sleepTimerMinutes) }
        SoundscapeController.register(controller)
        // Published beside the keep-alive (a child of run()), and again after the session bus
        // restarts; each change shows in `vigil status`.
        let mpris =
            settings.mpris
            ? MPRISServer(
                controller: controller, hostName: context.hostName, environment: environment, logger: logger,
                onChange: { reporter.report(.detailsChanged) })
            : nil
        var channel: ControlChannel?
        if settings.controlSocket {
            do {
                channel = try ControlChannel.start(
                    path: ControlChannel.socketPath(
                        runtimeHome: context.environment.runtimeHome, plugin: context.pluginName,
                        stateDirectory: context.stateDirectory), controller: controller,
                    logger: logger)
            } catch {
                logger.warning("No soundscape control channel: \(error.message)")
            }
        }
        let opened = Running(
            stream: stream, controller: controller, writer: writer, mpris: mpris, channel: channel,
            unavailableFiles: unavailable, preferencesWarning: warning)
        running.withLock { $0 = opened }
        return opened
    }

    private func close() async {
        guard
            let r = running.withLock({ current -> Running? in
                defer { current = nil }
                return current
            })
        else { return }
        if SoundscapeController.running === r.controller { SoundscapeController.register(nil) }
        r.channel?.stop()
        await r.stream.stop()
        r.controller.finish()
        await r.writer.close()
    }

    /// `0.30` for 0.3: the volume with two decimals, in the standard library alone.
    static func twoDecimals(_ value: Double) -> String {
        let hundredths = Int((max(0, value) * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    func details() async -> [String: String] {
        guard let r = running.withLock({ $0 }) else {
            return [
                "state": "stopped", "soundscape": settings.soundscape, "device": settings.playback.device ?? "auto",
            ]
        }
        let state = r.controller.current
        let status = r.stream.status
        var details: [String: String] = [
            "state": status.state.rawValue,
            "soundscape": state.soundscape,
            "volume": Self.twoDecimals(state.volume),
            "playback": state.playback.rawValue.lowercased(),
            "device": status.device ?? settings.playback.device ?? "auto",
            "buffer_ms": "\(status.bufferMilliseconds)",
            "underruns": "\(status.underruns)",
            "interruptions": "\(status.interruptions)",
        ]
        if let preset = state.preset { details["preset"] = preset.rawValue }
        if let backend = status.backend { details["backend"] = backend.rawValue }
        if state.interrupted { details["interrupted"] = "the sound server asked for quiet" }
        if let remaining = state.sleepTimerRemaining { details["sleep_timer_s"] = "\(Int(remaining.rounded()))" }
        switch r.mpris?.current {
        case .published(let name): details["mpris"] = name
        case .off(let reason, retrying: true): details["mpris_error"] = reason + "; reconnecting"
        case .connecting, .off, nil: break
        }
        if let channel = r.channel { details["control_socket"] = channel.path }
        if !r.unavailableFiles.isEmpty {
            details["files_unavailable"] = r.unavailableFiles.keys.sorted().joined(separator: ", ")
        }
        if let warning = r.preferencesWarning { details["preferences_warning"] = warning }
        if let error = store.writeError { details["preferences_error"] = error }
        if let error = status.lastError, status.state != .running { details["last_error"] = error.message }
        return details
    }
}

/// Runs blocking `body` on a new thread of its own and returns its result.
func offThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        KernelThread.start(name: "vigil-soundscape") { continuation.resume(returning: body()) }
    }
}
