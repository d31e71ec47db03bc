import Logging
import Synchronization
import Testing

@testable import VigilSoundscape

/// A clock that moves only when the test says: sleepers wake when ``advance(by:)`` passes their
/// deadline, or are cancelled.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct State {
        var now = Duration.zero
        var nextID = 0
        var sleepers: [Int: (deadline: Duration, continuation: CheckedContinuation<Void, any Error>)] = [:]
    }
    private let state = Mutex(State())

    var now: Instant { Instant(offset: state.withLock { $0.now }) }
    var minimumResolution: Duration { .zero }
    /// How many sleepers wait now.
    var sleeping: Int { state.withLock { $0.sleepers.count } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = state.withLock { state -> Bool in
                    if deadline.offset <= state.now || Task.isCancelled { return true }
                    state.sleepers[id] = (deadline.offset, continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves the clock on by `duration` and wakes every sleeper whose deadline it passed.
    func advance(by duration: Duration) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now += duration
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for key in due.keys { state.sleepers[key] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in woken { continuation.resume() }
    }
}

/// The sleep timer on an injected clock: hours of timer in virtual time, no wall-clock sleep.
@Suite("Soundscape sleep timer (virtual time)")
struct SleepTimerClockTests {
    static func controller(_ clock: ManualClock) -> SoundscapeController {
        var logger = Logger(label: "sleep-timer-tests", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = .critical
        return SoundscapeController(
            soundscapes: Soundscape.generated, analyses: [:],
            preferences: SoundscapePreferences(soundscape: Soundscape.defaultID, volume: 0.3, paused: false),
            mixer: SoundscapeMixer(), logger: logger, onPreferences: { _ in }, onChange: {},
            clock: TimerClock(clock))
    }

    /// Waits until `condition` holds (the timer's child runs on the pool), for at most 20 s of
    /// real time: a bound on the wait, not what is tested.
    static func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(20))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return condition()
    }

    @Test("a 30-minute timer runs out at 30 minutes of the injected clock, not before")
    func runsOutOnTime() async throws {
        let clock = ManualClock()
        let controller = Self.controller(clock)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await controller.runSleepTimers() }
            try? controller.setSleepTimer(minutes: 30)
            #expect(controller.current.sleepTimerRemaining == 1800)
            #expect(await Self.eventually { clock.sleeping == 1 })
            clock.advance(by: .seconds(29 * 60))
            #expect(controller.current.sleepTimerRemaining == 60)
            // Before its end nothing can set the timer off (the end is checked against the clock).
            #expect(!controller.current.asleep)
            clock.advance(by: .seconds(60))
            #expect(await Self.eventually { controller.current.asleep })
            #expect(controller.current.playback == .paused)
            #expect(controller.current.sleepTimerRemaining == nil)
            group.cancelAll()
        }
    }

    @Test("setting the timer again moves its end; the earlier wait running out changes nothing; 0 turns it off")
    func resetAndOff() async throws {
        let clock = ManualClock()
        let controller = Self.controller(clock)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await controller.runSleepTimers() }
            try? controller.setSleepTimer(minutes: 10)
            #expect(await Self.eventually { clock.sleeping == 1 })
            clock.advance(by: .seconds(5 * 60))
            try? controller.setSleepTimer(minutes: 10)  // now ends at 15 min
            #expect(await Self.eventually { clock.sleeping == 2 })
            clock.advance(by: .seconds(6 * 60))  // 11 min: the first wait ran out
            #expect(await Self.eventually { clock.sleeping == 1 })
            #expect(!controller.current.asleep)
            #expect(controller.current.sleepTimerRemaining == 240)
            clock.advance(by: .seconds(4 * 60))
            #expect(await Self.eventually { controller.current.asleep })

            controller.play()
            try? controller.setSleepTimer(minutes: 1)
            try? controller.setSleepTimer(minutes: 0)
            clock.advance(by: .seconds(120))
            #expect(await Self.eventually { clock.sleeping == 0 })
            #expect(!controller.current.asleep)
            #expect(controller.current.sleepTimerRemaining == nil)
            group.cancelAll()
        }
    }

    @Test("the timers end with the plugin: cancelling runSleepTimers() ends every wait")
    func cancellation() async {
        let clock = ManualClock()
        let controller = Self.controller(clock)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await controller.runSleepTimers() }
            try? controller.setSleepTimer(minutes: 5)
            #expect(await Self.eventually { clock.sleeping == 1 })
            group.cancelAll()
        }
        #expect(clock.sleeping == 0)
        #expect(!controller.current.asleep)
    }
}
