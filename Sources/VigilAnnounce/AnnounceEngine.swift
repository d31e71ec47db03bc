import FoundationEssentials
import Logging
import Synchronization
import VigilAudio
import VigilBase
import VigilDBus
import VigilSoundFile
import VigilSpeech

#if canImport(Glibc)
import Glibc
#endif

/// The work of one announcer, confined to its thread (hence `@unchecked Sendable`).
final class AnnounceEngine: @unchecked Sendable {
    private let settings: AnnounceSettings
    private let directory: String
    private let logger: Logger
    private var mixer: PulseMixer?

    init(settings: AnnounceSettings, directory: String, logger: Logger) {
        self.settings = settings
        self.directory = directory
        self.logger = logger
    }

    private func connectedMixer() throws(AnnounceError) -> PulseMixer {
        let mixer =
            self.mixer ?? PulseMixer(server: settings.pulseServer, applicationName: "Vigil announcer", logger: logger)
        self.mixer = mixer
        do {
            try mixer.connect()
        } catch {
            throw AnnounceError(code: .soundServer, message: "cannot reach the sound server: \(error.message)")
        }
        return mixer
    }

    /// Holds the cross-process announce lock while `body` runs (see ``AnnounceLock``).
    private func locked<T>(_ body: (AnnounceLock) throws(AnnounceError) -> T) throws(AnnounceError) -> T {
        try DuckJournal.makeStateDirectory(directory)
        let lock = try AnnounceLock.acquire(in: directory, budgetSeconds: AnnounceLock.setupSeconds)
        defer { lock.release() }
        return try body(lock)
    }

    func recover(emit: @Sendable (AnnouncementEvent) -> Void) -> Result<RecoveryReport?, AnnounceError> {
        let result = Result { () throws(AnnounceError) -> RecoveryReport? in
            try locked { _ throws(AnnounceError) -> RecoveryReport? in try recoverLocked(emit: emit) }
        }
        if case .failure(let error) = result {
            logger.error(
                "Cannot restore volumes left lowered by an earlier announcement",
                metadata: ["announce.error": "\(error)"])
        }
        return result
    }

    private func recoverLocked(emit: @Sendable (AnnouncementEvent) -> Void) throws(AnnounceError) -> RecoveryReport? {
        guard let journal = try DuckJournal.read(from: directory) else { return nil }
        let mixer = try connectedMixer()
        logger.notice(
            "Restoring volumes an earlier announcement left lowered",
            metadata: ["announce.pid": "\(journal.pid)", "announce.streams": "\(journal.streams.count)"])
        let report = try ClientDucker.restore(
            journal, directory: directory, mixer: mixer, exact: nil, rampMicroseconds: 0, logger: logger)
        emit(.recovered(report))
        return report
    }

    func perform(
        id: UInt64, _ announcement: Announcement, calledAt: UInt64, paused: [String],
        cancelled: @escaping @Sendable () -> Bool, emit: @escaping @Sendable (AnnouncementEvent) -> Void
    ) -> Result<AnnouncementReport, AnnounceError> {
        let result = Result { () throws(AnnounceError) -> AnnouncementReport in
            try locked { lock throws(AnnounceError) -> AnnouncementReport in
                try performLocked(
                    id: id, announcement, calledAt: calledAt, paused: paused, lock: lock, cancelled: cancelled,
                    emit: emit)
            }
        }
        switch result {
        case .success(let report):
            emit(.finished(report))
        case .failure(let error):
            logger.error("Announcement failed", metadata: ["announce.id": "\(id)", "announce.error": "\(error)"])
            emit(.failed(id: id, error: error))
        }
        return result
    }

    private func performLocked(
        id: UInt64, _ announcement: Announcement, calledAt: UInt64, paused: [String], lock: AnnounceLock,
        cancelled: @escaping @Sendable () -> Bool, emit: @escaping @Sendable (AnnouncementEvent) -> Void
    ) throws(AnnounceError) -> AnnouncementReport {
        let audio: PromptAudio
        switch announcement.content {
        case .audio(let given):
            do { try given.validate() } catch { throw AnnounceError(code: .invalidPrompt, message: error.message) }
            audio = given
        case .file(let path):
            audio = try Self.decode(path)
        case .speech(let text):
            do {
                audio = try SpeechSynthesizer.synthesize(
                    text, voice: SpeechSynthesizer.Voice(name: settings.voice, wordsPerMinute: settings.wordsPerMinute))
            } catch {
                throw AnnounceError(
                    code: error.code == .unavailable || error.code == .synthesisFailed ? .speechFailed : .invalidPrompt,
                    message: error.message)
            }
        }
        // Now that the prompt's length is known, tell waiters how long this turn may take.
        lock.declare(budgetSeconds: audio.duration + AnnounceLock.setupSeconds)
        let mixer = try connectedMixer()
        _ = try recoverLocked(emit: emit)
        let policy = announcement.policy ?? settings.policy

        var method = DuckMethod.none
        var role = settings.role
        var ducker: ClientDucker?
        var ducked: [DuckedStream] = []
        let duckStart = MonotonicClock.nanoseconds()
        if case .duck(let level) = policy {
            if settings.ducking == .auto, let trigger = try serverDuckingRole(mixer) {
                method = .server(role: trigger)
                role = trigger
            } else {
                let info: PulseMixer.ServerInfo
                do { info = try mixer.serverInfo() } catch {
                    throw AnnounceError(
                        code: .soundServer, message: "the sound server did not answer: \(error.message)")
                }
                let client = ClientDucker(
                    mixer: mixer, directory: directory, level: level, rampMilliseconds: settings.rampMilliseconds,
                    server: settings.pulseServer, cookie: info.cookie, logger: logger)
                ducker = client
                method = .client
                do {
                    ducked = try client.begin()
                } catch {
                    // Put back whatever was lowered before the failure (or leave the journal).
                    _ = try? client.end()
                    throw error
                }
            }
        }
        let duckMilliseconds = Double(MonotonicClock.nanoseconds() - duckStart) / 1e6

        let properties = [
            "media.role": role, "media.name": "Vigil announcement", "application.name": "Vigil announcer",
            "vigil.stream": "announcement",
        ]
        let playback: PulseMixer.Playback
        do {
            playback = try mixer.play(
                audio, properties: properties, sink: settings.sink,
                started: { at in
                    let latency = Double(at &- calledAt) / 1e6
                    emit(.started(id: id, method: method, ducked: ducked, firstSampleMilliseconds: latency))
                },
                tick: {
                    guard let ducker else { return }
                    for stream in ducker.handleChanges() { emit(.duckedLate(id: id, stream: stream)) }
                },
                cancelled: cancelled)
        } catch {
            let restoreError: AnnounceError?
            do { _ = try ducker?.end(); restoreError = nil } catch { restoreError = error }
            if cancelled() {
                throw AnnounceError(
                    code: .cancelled,
                    message: "the announcement was cancelled while it played"
                        + (restoreError.map { "; \($0.message)" } ?? "; the lowered volumes are put back"))
            }
            throw AnnounceError(
                code: .soundServer,
                message: "the prompt did not play: \(error.message)" + (restoreError.map { "; \($0.message)" } ?? ""))
        }
        if let ducker { _ = ducker.handleChanges() }
        let restoreStart = MonotonicClock.nanoseconds()
        let recovery = try ducker?.end()
        let restoreMilliseconds = Double(MonotonicClock.nanoseconds() - restoreStart) / 1e6
        let allDucked = ducker?.ducked ?? []
        let restored = recovery?.restored ?? []
        let kept = recovery?.keptUserChange ?? []
        let gone = allDucked.map(\.index).filter { !restored.contains($0) && !kept.contains($0) }
        return AnnouncementReport(
            id: id, policy: policy, method: method, ducked: allDucked, restored: restored, keptUserChange: kept,
            gone: gone,
            pausedPlayers: paused, firstSampleMilliseconds: Double(playback.startedAt &- calledAt) / 1e6,
            duckMilliseconds: duckMilliseconds, restoreMilliseconds: restoreMilliseconds, promptSeconds: audio.duration,
            underflows: playback.underflows)
    }

    /// Decodes the sound file at `path` whole, at its own rate and channel count.
    static func decode(_ path: String) throws(AnnounceError) -> PromptAudio {
        func failed(_ error: SoundFileError) -> AnnounceError {
            AnnounceError(code: .invalidPrompt, message: "cannot play \(error.description)")
        }
        let file: SoundFile
        do throws(SoundFileError) { file = try SoundFile(path: path) } catch { throw failed(error) }
        defer { file.close() }
        let info = file.info
        guard (1...8).contains(info.channels), (8000...192_000).contains(info.sampleRate) else {
            throw AnnounceError(
                code: .invalidPrompt,
                message: "\(path): \(info.channels) channels at \(info.sampleRate) Hz cannot be played as a prompt — "
                    + "use 1 to 8 channels at 8000 to 192000 Hz")
        }
        guard info.seconds <= Announcement.maxFileSeconds else {
            throw AnnounceError(
                code: .invalidPrompt,
                message:
                    "\(path) is \(Int(info.seconds)) s long; a prompt may last \(Int(Announcement.maxFileSeconds)) s — shorten it"
            )
        }
        var samples: [Int16] = []
        samples.reserveCapacity(Int(max(0, info.frames)) * info.channels)
        var chunk = [Float](repeating: 0, count: 4096 * info.channels)
        while true {
            let frames: Int
            do throws(SoundFileError) {
                frames = try chunk.withUnsafeMutableBufferPointer { buffer throws(SoundFileError) -> Int in
                    try file.read(into: buffer)
                }
            } catch {
                throw failed(error)
            }
            if frames == 0 { break }
            for value in chunk[0..<(frames * info.channels)] {
                samples.append(Int16((max(-1, min(1, value)) * 32767).rounded()))
            }
            if Double(samples.count / info.channels) > Announcement.maxFileSeconds * Double(info.sampleRate) {
                throw AnnounceError(
                    code: .invalidPrompt,
                    message: "\(path) decodes to more than \(Int(Announcement.maxFileSeconds)) s — shorten it")
            }
        }
        guard !samples.isEmpty else {
            throw AnnounceError(code: .invalidPrompt, message: "\(path) holds no audio — give a file with sound in it")
        }
        return PromptAudio(samples: samples, sampleRate: info.sampleRate, channels: info.channels)
    }

    /// The trigger role of PulseAudio's `module-role-ducking` when it is loaded and ducks music,
    /// else `nil`.
    private func serverDuckingRole(_ mixer: PulseMixer) throws(AnnounceError) -> String? {
        let modules: [PulseMixer.Module]
        do { modules = try mixer.modules() } catch {
            throw AnnounceError(code: .soundServer, message: "cannot list the server's modules: \(error.message)")
        }
        guard let module = modules.first(where: { $0.name == "module-role-ducking" }) else { return nil }
        return Self.triggerRole(ofRoleDuckingArgument: module.argument)
    }

    /// The first trigger role in a `module-role-ducking` argument (default `phone`), when its
    /// group ducks `music` (the default ducking roles are `music,video`).
    static func triggerRole(ofRoleDuckingArgument argument: String) -> String? {
        var values: [String: String] = [:]
        for part in argument.split(separator: " ") {
            guard let eq = part.firstIndex(of: "=") else { continue }
            values[String(part[..<eq])] = String(part[part.index(after: eq)...]).trimmingCharacters(
                in: "\"'")
        }
        let triggers = (values["trigger_roles"] ?? "phone").split(separator: "/", omittingEmptySubsequences: false)
        let ducking = (values["ducking_roles"] ?? "music,video").split(separator: "/", omittingEmptySubsequences: false)
        for (i, group) in triggers.enumerated() {
            let ducked = i < ducking.count ? ducking[i] : ducking.last ?? ""
            guard ducked.split(separator: ",").contains("music"), let role = group.split(separator: ",").first else {
                continue
            }
            return String(role)
        }
        return nil
    }
}
