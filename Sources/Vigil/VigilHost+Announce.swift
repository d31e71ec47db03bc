import FoundationEssentials
import Logging
public import VigilAnnounce
import VigilCore
import VigilHostCore
import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

extension VigilHost {
    /// Plays the host's announcements (``announce(_:)``): made with the host (on first use for a
    /// host the host core's initialisers made), from its ``Options/announce``.
    public nonisolated var announcer: Announcer {
        madeParts.part("announcer") { Self.makeAnnouncer(options: options, logger: logger) }
    }

    /// Plays one prompt over the keep-alive — spoken text or the host's own audio — with its
    /// policy (or `[announce] policy`): other apps are ducked, paused or left alone, and put back
    /// after. Returns once the prompt has played; prompts queue and never overlap.
    ///
    /// - Throws: ``AnnounceError`` with a code, the cause and the remedy; whatever was lowered is
    ///   put back first.
    @discardableResult
    public func announce(_ announcement: Announcement) async throws(AnnounceError) -> AnnouncementReport {
        try await announcer.announce(announcement)
    }

    /// A new stream of announcement events (started, which streams were ducked, finished, failed).
    public nonisolated var announcements: AsyncStream<AnnouncementEvent> { announcer.events }

    /// Restores volumes a killed process left lowered (its journal), before plugins start.
    func recoverAnnouncements() async {
        guard announcer.hasPendingJournal else { return }
        // A failure is logged by the announcer, and retried by the next announcement.
        _ = try? await announcer.recoverPending()
    }

    /// The announcer of a host with `options`: the sound server and the session bus are those of
    /// the host's environment (unless `[announce]` names a server), its state in the host's state
    /// directory.
    nonisolated static func makeAnnouncer(options: Options, logger: Logger) -> Announcer {
        let environment = options.environment
        let settings = options.announce.filled(from: environment)
        let base = environment.vigilStateDirectory ?? environment.temporaryDirectory + "/vigil-\(getuid())"
        return Announcer(
            settings: settings, stateDirectory: base + "/announce", logger: logger, metrics: options.metrics)
    }
}
