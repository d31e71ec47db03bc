public import CoreMetrics
import FoundationEssentials
public import Logging
import Synchronization
import VigilBase
import VigilDBus
import VigilMetrics

/// Plays announcements — spoken text or audio — over the keep-alive, ducking or pausing the
/// other apps as the policy says, and puts everything back after.
///
/// - Prompts queue: one plays at a time, in call order, also across processes (an exclusive
///   lock in the state directory), so two announcers never duck on top of each other.
/// - Ducking uses the server's role ducking when present (PulseAudio's `module-role-ducking`:
///   the prompt gets its trigger role), else Vigil lowers the other streams itself
///   (``ClientDucker``), journalling their volumes first; a journal left by a killed process is
///   restored before the next prompt (and by ``recoverPending()``, which a host calls at start).
/// - All blocking work (libpulse, espeak-ng, the journal) runs on the announcer's own thread.
public actor Announcer {
    /// The settings (`[announce]`).
    public nonisolated let settings: AnnounceSettings
    /// Where the journal and the lock live (`…/vigil/announce`).
    public nonisolated let stateDirectory: String

    private let logger: Logger
    /// Started on first use, so a host that never announces has no extra thread.
    private var worker: DedicatedThread?
    private let engine: AnnounceEngine
    private let subscribers = Subscribers()
    private var nextID: UInt64 = 0
    /// One announcement at a time through ``announce(_:)`` (pausing players is part of a turn).
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private let metrics: any MetricsFactory

    /// Creates an announcer; nothing connects until the first announcement.
    /// - Parameters:
    ///   - stateDirectory: the directory for the duck journal and the lock
    ///     (for a host: `$XDG_STATE_HOME/vigil/announce`).
    ///   - metrics: where the announcements are counted by outcome, and their durations
    ///     (docs/metrics.md; a host's `Options.metrics`).
    public init(
        settings: AnnounceSettings, stateDirectory: String, logger: Logger,
        metrics: any MetricsFactory = NOOPMetricsHandler.instance
    ) {
        self.settings = settings
        self.stateDirectory = stateDirectory
        self.logger = logger
        self.metrics = metrics
        self.engine = AnnounceEngine(settings: settings, directory: stateDirectory, logger: logger)
        for outcome in [MetricsCatalog.announcementPlayed] + AnnounceErrorCode.allCases.map(\.rawValue) {
            Counter(label: MetricsCatalog.announcements.name, dimensions: [("outcome", outcome)], factory: metrics)
                .increment(by: 0)
        }
    }

    deinit { worker?.close() }

    private var thread: DedicatedThread {
        if let worker { return worker }
        let started = DedicatedThread(name: "vigil-announce")
        worker = started
        return started
    }

    /// A new stream of announcement events, starting now.
    public nonisolated var events: AsyncStream<AnnouncementEvent> { subscribers.subscribe() }

    /// True when a journal of lowered volumes was left behind (by a killed process).
    public nonisolated var hasPendingJournal: Bool {
        FileManager.default.fileExists(atPath: DuckJournal.path(in: stateDirectory))
    }

    /// Plays `announcement` and returns once it has played and everything is put back.
    /// Cancelling the calling task stops a prompt that is playing at once.
    /// - Throws: ``AnnounceError`` (``AnnounceError/Code/cancelled`` when the task was cancelled);
    ///   whatever was lowered is put back first (or, if the server went away, left in the journal
    ///   for the next start).
    public func announce(_ announcement: Announcement) async throws(AnnounceError) -> AnnouncementReport {
        let calledAt = MonotonicClock.nanoseconds()
        do throws(AnnounceError) {
            let report = try await play(announcement, calledAt: calledAt)
            record(MetricsCatalog.announcementPlayed, since: calledAt)
            return report
        } catch {
            record(error.code.rawValue, since: calledAt)
            throw error
        }
    }

    /// Counts one announcement that ended with `outcome`, and how long it took since `calledAt`.
    private func record(_ outcome: String, since calledAt: UInt64) {
        Counter(label: MetricsCatalog.announcements.name, dimensions: [("outcome", outcome)], factory: metrics)
            .increment()
        CoreMetrics.Timer(label: MetricsCatalog.announcementDuration.name, dimensions: [], factory: metrics)
            .recordNanoseconds(Int64(MonotonicClock.nanoseconds() - calledAt))
    }

    /// ``announce(_:)`` without its metrics.
    private func play(_ announcement: Announcement, calledAt: UInt64) async throws(AnnounceError)
        -> AnnouncementReport
    {
        nextID += 1
        let id = nextID
        await takeTurn()
        defer { endTurn() }
        let policy = announcement.policy ?? settings.policy
        var pauser: SpokenAudioPauser?
        var paused: [String] = []
        if policy == .pauseSpoken {
            do throws(AnnounceError) {
                let connected = try await SpokenAudioPauser.connect(
                    bus: settings.sessionBus, players: settings.players, logger: logger)
                pauser = connected
                paused = try await connected.pausePlaying()
            } catch {
                emitter(.failed(id: id, error: error))
                throw error
            }
        }
        let engine = self.engine
        let emit = self.emitter
        let pausedNames = paused
        let cancelled = CancellationFlag()
        let result = await withTaskCancellationHandler {
            await thread.run({
                engine.perform(
                    id: id, announcement, calledAt: calledAt, paused: pausedNames, cancelled: { cancelled.isSet },
                    emit: emit)
            })
        } onCancel: {
            cancelled.set()
        }
        if let pauser {
            _ = await pauser.resume(paused)
            await pauser.connection.close()
        }
        guard let result else { throw AnnounceError(code: .cancelled, message: "the announcer was closed") }
        switch result {
        case .success(let report): return report
        case .failure(let error): throw error
        }
    }

    private func takeTurn() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func endTurn() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }

    /// Restores the volumes a killed process left lowered (its journal), if any.
    @discardableResult
    public func recoverPending() async throws(AnnounceError) -> RecoveryReport? {
        let engine = self.engine
        let emit = self.emitter
        guard let result = await thread.run({ engine.recover(emit: emit) }) else {
            throw AnnounceError(code: .cancelled, message: "the announcer was closed")
        }
        return try result.get()
    }

    /// Ends the announcer's thread after the queued prompts.
    public func close() {
        worker?.close()
        worker = nil
        subscribers.finishAll()
    }

    private nonisolated var emitter: @Sendable (AnnouncementEvent) -> Void {
        { [subscribers] event in subscribers.yield(event) }
    }
}

/// The event streams handed out by ``Announcer/events``.
final class Subscribers: Sendable {
    private struct State {
        var next: UInt64 = 0
        var continuations: [UInt64: AsyncStream<AnnouncementEvent>.Continuation] = [:]
    }
    private let state = Mutex(State())

    func subscribe() -> AsyncStream<AnnouncementEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: AnnouncementEvent.self, bufferingPolicy: .bufferingNewest(256))
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            state.continuations[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    func yield(_ event: AnnouncementEvent) {
        for continuation in state.withLock({ Array($0.continuations.values) }) { continuation.yield(event) }
    }

    func finishAll() {
        let all = state.withLock { state in
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in all { continuation.finish() }
    }
}

/// Set when the task that called ``Announcer/announce(_:)`` is cancelled; the prompt polls it.
final class CancellationFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
