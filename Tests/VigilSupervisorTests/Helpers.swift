import Clocks
import Foundation
import Logging
import Synchronization
import Testing
import VigilBase
import VigilTestSupport

@testable import VigilSupervisor
@testable import VigilSupervisorEngine

/// Records supervisor events with their time: monotonic seconds, or a ``VirtualClock``'s.
final class EventLog: Sendable {
    struct Entry: Sendable {
        var time: Double
        var event: SupervisorEvent
    }
    private let entries = Mutex<[Entry]>([])
    private let now: @Sendable () -> Double

    init(now: @escaping @Sendable () -> Double = { MonotonicClock.seconds() }) {
        self.now = now
    }

    var handler: @Sendable (SupervisorEvent) -> Void {
        { [self] event in entries.withLock { $0.append(Entry(time: now(), event: event)) } }
    }

    var all: [Entry] { entries.withLock { $0 } }

    func times(of worker: String, where match: (SupervisorEvent.Kind) -> Bool) -> [Double] {
        all.filter { $0.event.worker.name == worker && match($0.event.kind) }.map(\.time)
    }

    func count(_ match: (SupervisorEvent.Kind) -> Bool) -> Int {
        all.filter { match($0.event.kind) }.count
    }
}

extension Supervisor {
    /// A supervisor of `workers` with the test environment and logger, reporting to `events`.
    static func forTests(
        _ workers: [WorkerSpec], configuration: SupervisorConfiguration = SupervisorConfiguration(),
        runtimeDirectory: String? = nil, clock: any Clock<Duration> = SuspendingClock(), events: EventLog? = nil
    ) throws -> Supervisor {
        try Supervisor(
            workers: workers, configuration: configuration, environment: testEnvironment,
            runtimeDirectory: runtimeDirectory, clock: clock, logger: testLogger(), onEvent: { events?.handler($0) })
    }
}

/// Virtual time for the supervisor: swift-clocks' `TestClock`, moved only by ``advance(by:)``.
///
/// `TestClock.now` is written under the clock's lock but read without it, so another thread (the
/// supervisor's) reads the time through this wrapper's own lock, which only the test moves.
final class VirtualClock: Clock, Sendable {
    typealias Duration = Swift.Duration
    typealias Instant = TestClock<Duration>.Instant

    private let clock = TestClock()
    private let current: Mutex<Instant>
    private let origin: Instant

    init() {
        origin = clock.now
        current = Mutex(clock.now)
    }

    var now: Instant { current.withLock { $0 } }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await clock.sleep(until: deadline, tolerance: tolerance)
    }

    /// Seconds since this clock was made.
    var seconds: Double {
        let (s, atto) = origin.duration(to: now).components
        return Double(s) + Double(atto) / 1e18
    }

    /// Moves the time by `duration`, then lets `supervisor` act on every deadline due by then.
    func advance(by duration: Duration, _ supervisor: Supervisor) async {
        await clock.advance(by: duration)
        let moved = clock.now
        current.withLock { $0 = moved }
        await supervisor.synchronize()
    }
}

extension WorkerSpec {
    /// A worker that runs `script` with `/bin/sh -c`.
    static func shell(
        _ name: String, _ script: String, restart: RestartPolicy = .onFailure, readiness: ReadinessType = .simple,
        watchdogSeconds: Double? = nil
    ) -> WorkerSpec {
        WorkerSpec(
            name: name, command: "/bin/sh", arguments: ["-c", script], restart: restart, readiness: readiness,
            watchdogSeconds: watchdogSeconds)
    }
}

/// The notify socket a supervisor with `runtimeDirectory` made for its first worker.
func firstWorkerNotifySocket(in runtimeDirectory: String) throws -> String {
    let runtime = try #require(
        try FileManager.default.contentsOfDirectory(atPath: runtimeDirectory).first { $0.hasPrefix("supervisor.") })
    return "\(runtimeDirectory)/\(runtime)/0.notify"
}

func testLogger(_ label: String = "vigil.supervisor.test") -> Logger {
    var logger = Logger(label: label)
    logger.logLevel = .critical
    return logger
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes; returns whether it held.
func eventually(timeout: Double = 10, _ condition: () -> Bool) async -> Bool {
    await RuntimeFixtures.waitUntil(timeout: timeout, interval: .milliseconds(20), condition)
}

/// Whether a process exists and is not a zombie.
func processIsLive(_ pid: Int32) -> Bool {
    guard let stat = ProcessTree.stat(of: pid) else { return false }
    return stat.state != "Z" && stat.state != "X"
}

/// Open descriptors of this process.
func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Zombie children of this process.
func zombieChildren() -> [Int32] {
    let me = getpid()
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap(Int32.init).filter { pid in
        guard let stat = ProcessTree.stat(of: pid) else { return false }
        return stat.parent == me && stat.state == "Z"
    }
}

/// The environment workers get in tests: this process's, which the tests never modify.
let testEnvironment = ProcessInfo.processInfo.environment
