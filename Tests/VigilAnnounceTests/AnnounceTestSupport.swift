import Foundation
import Logging
import Synchronization
import VigilAnnounce
import VigilAudio
import VigilTestSupport

/// A logger that drops everything (tests never bootstrap logging).
let quietLogger = Logger(label: "vigil.test") { _ in SwiftLogNoOpLogHandler() }

/// Collects an announcer's events so a test can wait for one.
final class AnnouncementWatcher: Sendable {
    private final class Store: Sendable {
        let events = Mutex<[AnnouncementEvent]>([])
    }
    private let store = Store()
    private let task: Task<Void, Never>

    init(_ announcer: Announcer) {
        let stream = announcer.events
        let store = self.store
        task = Task {
            for await event in stream { store.events.withLock { $0.append(event) } }
        }
    }

    deinit { task.cancel() }

    var all: [AnnouncementEvent] { store.events.withLock { $0 } }

    /// Waits up to `timeout` seconds for an event `match` accepts; returns what it returned.
    func wait<T>(timeout: Double = 10, _ match: (AnnouncementEvent) -> T?) async -> T? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            for event in all { if let value = match(event) { return value } }
            try? await Task.sleep(nanoseconds: 10_000_000)
        } while Date() < deadline
        return nil
    }

    /// Waits for the `started` event of any prompt.
    func started(timeout: Double = 10) async -> [DuckedStream]? {
        await wait(timeout: timeout) { if case .started(_, _, let ducked, _) = $0 { ducked } else { nil } }
    }
}

/// An announcer on `server` with its state in `directory`.
func makeAnnouncer(
    _ server: some SoundServerFixture, directory: String, settings: AnnounceSettings = AnnounceSettings()
) -> Announcer {
    var settings = settings
    settings.pulseServer = server.address
    return Announcer(settings: settings, stateDirectory: directory + "/announce", logger: quietLogger)
}

/// A silent keep-alive stream (2 s buffer, like the silent engine's) started on `server`.
func startKeepAlive(_ server: some SoundServerFixture) async throws -> PlaybackStream {
    let keepAlive = PlaybackStream(
        configuration: PlaybackConfiguration(
            device: "pulse", pulseServer: server.address, bufferMilliseconds: 2000,
            applicationName: "announce-tests (Vigil keep-alive)"),
        source: ZeroSource(), logger: quietLogger)
    try await keepAlive.start()
    return keepAlive
}

/// Starts `announcement` in a task and waits for its first sample.
func startAnnouncement(
    _ announcer: Announcer, _ announcement: Announcement, watcher: AnnouncementWatcher
) async throws -> (Task<AnnouncementReport, any Error>, [DuckedStream]) {
    let task = Task { () async throws -> AnnouncementReport in try await announcer.announce(announcement) }
    guard let ducked = await watcher.started(timeout: 15) else {
        task.cancel()
        throw FixtureError("the announcement did not start; events: \(watcher.all)")
    }
    return (task, ducked)
}

/// The RMS level of `seconds` of the sink's monitor, as a fraction of full scale.
func level(_ server: some SoundServerFixture, seconds: Double = 0.8) async throws -> Double {
    AudioAnalysis(interleaved: try await server.captureMonitor(seconds: seconds), trimSeconds: 0.1).rms
}

extension Array where Element == UInt32 {
    /// Within `tolerance` of `other`, channel by channel.
    func isClose(to other: [UInt32], tolerance: Int = 100) -> Bool {
        count == other.count && zip(self, other).allSatisfy { abs(Int($0) - Int($1)) <= tolerance }
    }
}
