import Logging
import Synchronization
import VigilSoundFile

#if canImport(Glibc)
import Glibc
#endif

/// The controls of a running soundscape: what the host app, the CLI (through the control
/// channel) and MPRIS call. Every method is synchronous and quick, safe from any thread: it
/// changes the state, hands the audio change to the mixer (which ramps or crossfades it) and
/// tells the subscribers.
///
/// Get the one running in this process with ``SoundscapeController/running``.
public final class SoundscapeController: Sendable {
    private struct State {
        var soundscape: String
        var volume: Double
        var paused: Bool
        var stopped = false
        var asleep = false
        var corked = false
        /// When the sleep timer runs out, on ``clock``.
        var sleepEnd: Duration?
        var subscribers: [Int: AsyncStream<SoundscapeState>.Continuation] = [:]
        var nextSubscriber = 0
    }

    private let state: Mutex<State>
    let mixer: SoundscapeMixer
    /// Every soundscape that can be played, in the order Next cycles through them.
    public let soundscapes: [Soundscape]
    private let analyses: [String: FileAnalysis]
    private let logger: Logger
    private let onPreferences: @Sendable (SoundscapePreferences) -> Void
    private let onChange: @Sendable () -> Void

    private static let registry = Mutex<SoundscapeController?>(nil)
    /// Each sleep timer's end, for ``runSleepTimers()``.
    private let sleepDeadlines: AsyncStream<Duration>.Continuation
    private let sleepDeadlineStream: AsyncStream<Duration>
    /// The sleep timer's time source (injected by tests).
    let clock: TimerClock

    /// The soundscape plugin running in this process, if any.
    public static var running: SoundscapeController? { registry.withLock { $0 } }

    static func register(_ controller: SoundscapeController?) { registry.withLock { $0 = controller } }

    init(
        soundscapes: [Soundscape], analyses: [String: FileAnalysis], preferences: SoundscapePreferences,
        mixer: SoundscapeMixer,
        logger: Logger, onPreferences: @escaping @Sendable (SoundscapePreferences) -> Void,
        onChange: @escaping @Sendable () -> Void, clock: TimerClock = .continuous
    ) {
        self.clock = clock
        self.soundscapes = soundscapes
        self.analyses = analyses
        self.mixer = mixer
        self.logger = logger
        self.onPreferences = onPreferences
        self.onChange = onChange
        (sleepDeadlineStream, sleepDeadlines) = AsyncStream.makeStream()
        state = Mutex(State(soundscape: preferences.soundscape, volume: preferences.volume, paused: preferences.paused))
        mixer.update {
            $0.volume = preferences.volume
            $0.paused = preferences.paused
        }
    }

    /// A controller of `soundscapes` (generated ones only) with no stream and nothing saved: what
    /// the control channel's requests are checked against outside a running host.
    package convenience init(soundscapes: [Soundscape], preferences: SoundscapePreferences, logger: Logger) {
        self.init(
            soundscapes: soundscapes, analyses: [:], preferences: preferences, mixer: SoundscapeMixer(), logger: logger,
            onPreferences: { _ in }, onChange: {})
    }

    /// The current state.
    public var current: SoundscapeState { state.withLock { snapshot($0) } }

    private func snapshot(_ s: State) -> SoundscapeState {
        let playback: SoundscapeState.Playback = s.stopped ? .stopped : (s.paused || s.asleep) ? .paused : .playing
        var remaining: Double?
        if let end = s.sleepEnd {
            let left = end - clock.elapsed()
            remaining = max(0, Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
        }
        return SoundscapeState(
            soundscape: s.soundscape, title: title(of: s.soundscape), volume: s.volume,
            preset: VolumePreset(volume: s.volume),
            playback: playback, interrupted: s.corked, asleep: s.asleep, sleepTimerRemaining: remaining)
    }

    private func title(of id: String) -> String { soundscapes.first { $0.id == id }?.title ?? id }

    /// Every change of state from now on (the current state first); ends when the plugin stops.
    public func changes() -> AsyncStream<SoundscapeState> {
        let (stream, continuation) = AsyncStream<SoundscapeState>.makeStream(bufferingPolicy: .bufferingNewest(8))
        let id = state.withLock { s -> Int in
            defer { s.nextSubscriber += 1 }
            s.subscribers[s.nextSubscriber] = continuation
            continuation.yield(snapshot(s))
            return s.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every ``changes()`` stream.
    func finish() {
        let subscribers = state.withLock { s -> [AsyncStream<SoundscapeState>.Continuation] in
            defer {
                s.subscribers.removeAll()
            }
            return Array(s.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
        sleepDeadlines.finish()
    }

    /// Applies `body` to the state, then tells subscribers and the plugin (whose status follows)
    /// and (when `persist`) saves the preferences.
    private func change(persist: Bool = true, _ body: (inout State) throws(SoundscapeError) -> Void)
        throws(SoundscapeError)
    {
        let (snapshot, preferences, subscribers) = try state.withLock { s throws(SoundscapeError) in
            try body(&s)
            let preferences = SoundscapePreferences(
                soundscape: s.soundscape, volume: s.volume, paused: s.paused || s.stopped)
            return (self.snapshot(s), preferences, Array(s.subscribers.values))
        }
        for continuation in subscribers { continuation.yield(snapshot) }
        onChange()
        if persist { onPreferences(preferences) }
    }

    /// The voice for `id`, or `nil` when it cannot be made.
    func makeVoice(_ id: String) throws(SoundscapeError) -> any Voice {
        let seed = UInt64.random(in: 1...UInt64.max)
        if let voice = makeGeneratedVoice(id, seed: seed) { return voice }
        guard let soundscape = soundscapes.first(where: { $0.id == id }), let path = soundscape.path,
            let analysis = analyses[id]
        else {
            throw SoundscapeError(code: .unknownSoundscape, message: unknownMessage(id))
        }
        do {
            return try FileVoice(path: path, analysis: analysis, logger: logger)
        } catch {
            throw SoundscapeError(code: .fileUnavailable, message: "cannot play \(id): \(error)")
        }
    }

    private func unknownMessage(_ id: String) -> String {
        "no soundscape \"\(id)\"; choose one of \(soundscapes.map(\.id).joined(separator: ", "))"
    }

    /// Starts the saved soundscape on the mixer (at plugin start).
    func startPlaying() throws(SoundscapeError) {
        let id = state.withLock { $0.soundscape }
        mixer.play(try makeVoice(id))
    }

    /// Switches to soundscape `id`, crossfading (400 ms, equal power) without touching the stream.
    public func select(_ id: String) throws(SoundscapeError) {
        guard soundscapes.contains(where: { $0.id == id }) else {
            throw SoundscapeError(code: .unknownSoundscape, message: unknownMessage(id))
        }
        let voice = try makeVoice(id)
        try change { s throws(SoundscapeError) in
            s.soundscape = id
            mixer.play(voice)
        }
    }

    /// The next (`+1`) or previous (`-1`) soundscape, cycling.
    public func skip(_ step: Int) throws(SoundscapeError) {
        let id = state.withLock { $0.soundscape }
        let index = soundscapes.firstIndex { $0.id == id } ?? 0
        let next = ((index + step) % soundscapes.count + soundscapes.count) % soundscapes.count
        try select(soundscapes[next].id)
    }

    /// Sets the volume 0…1 (ramped over at most 50 ms). 0 keeps the stream running, silent.
    public func setVolume(_ volume: Double) throws(SoundscapeError) {
        guard volume.isFinite, (0...1).contains(volume) else {
            throw SoundscapeError(code: .invalidVolume, message: "volume \(volume) is outside 0…1")
        }
        try change { s in
            s.volume = volume
            mixer.update { $0.volume = volume }
        }
    }

    /// Sets the volume to a preset's.
    public func setPreset(_ preset: VolumePreset) {
        try? setVolume(preset.volume)
    }

    /// Plays (also after a pause, a stop or the sleep timer).
    public func play() {
        try? change { s in
            s.paused = false
            s.stopped = false
            s.asleep = false
            s.sleepEnd = nil
            mixer.update {
                $0.paused = false
                $0.sleepEndFrame = nil
            }
        }
    }

    /// Fades to silence; the stream (and the keep-alive) keeps running.
    public func pause() {
        try? change { s in
            if s.stopped { return }
            s.paused = true
            mixer.update { $0.paused = true }
        }
    }

    /// Pauses when playing, plays otherwise.
    public func playPause() {
        if current.playback == .playing { pause() } else { play() }
    }

    /// Like pause, reported as Stopped (MPRIS `Stop`); the stream keeps running.
    public func stop() {
        try? change { s in
            s.stopped = true
            s.paused = false
            mixer.update { $0.paused = true }
        }
    }

    /// Sets the sleep timer: plays `minutes` more, the last 30 s fading out, then stays silent
    /// (the stream keeps running) until Play. `nil` or 0 clears it.
    public func setSleepTimer(minutes: Double?) throws(SoundscapeError) {
        let minutes = minutes ?? 0
        guard minutes.isFinite, (0...1440).contains(minutes) else {
            throw SoundscapeError(
                code: .invalidSleepTimer, message: "sleep timer of \(minutes) min; use 0 (off) to 1440")
        }
        try change(persist: false) { s in
            if minutes == 0 {
                s.sleepEnd = nil
                mixer.update { $0.sleepEndFrame = nil }
                return
            }
            s.asleep = false
            let end = clock.elapsed() + .milliseconds(Int64(minutes * 60_000))
            s.sleepEnd = end
            sleepDeadlines.yield(end)
            let frames = UInt64(minutes * 60 * Double(SoundscapeMixer.sampleRate))
            let start = mixer.framesRendered
            mixer.update { $0.sleepEndFrame = start + frames }
        }
    }

    /// Ends each sleep timer when it runs out: a child of the plugin's `run()` until it is
    /// cancelled. A timer set again or off makes an earlier wait's end a no-op
    /// (``sleepTimerEnded()`` checks the current deadline).
    func runSleepTimers() async {
        await withDiscardingTaskGroup { group in
            for await end in sleepDeadlineStream {
                group.addTask { [weak self] in
                    guard let clock = self?.clock else { return }
                    try? await clock.sleep(end)
                    if !Task.isCancelled { self?.sleepTimerEnded() }
                }
            }
        }
    }

    /// When the sleep timer ends, if one is set.
    var sleepDeadline: Duration? { state.withLock { $0.sleepEnd } }

    /// The sleep timer ran out: silent (the mixer already faded) and reported as paused.
    func sleepTimerEnded() {
        try? change(persist: false) { s in
            guard let end = s.sleepEnd, clock.elapsed() >= end else { return }
            s.sleepEnd = nil
            s.asleep = true
            mixer.update {
                $0.paused = true
                $0.sleepEndFrame = nil
            }
        }
    }

    /// The sound server asked the stream to cork (`true`) or lifted the request (`false`).
    func setCorked(_ corked: Bool) {
        try? change(persist: false) { s in
            s.corked = corked
            mixer.update { $0.corked = corked }
        }
    }
}
