import FoundationEssentials
import Logging
import VigilAudio
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Lowers the other apps' streams stream by stream, as Mumble does, and puts them back.
///
/// - Before it lowers anything it writes a ``DuckJournal`` (original volumes and
///   module-stream-restore's entries for those streams), so a process killed mid-prompt is
///   repaired by the next one (``restore(_:mixer:exact:rampSteps:rampMicroseconds:logger:)``).
/// - Lowering and restoring ramp in `rampSteps` steps.
/// - A stream that starts during the prompt is lowered at once (journalled first).
/// - On restore, only a stream whose volume is still the one Vigil set goes back: a change
///   someone made meanwhile wins. module-stream-restore's entries are then put back to what
///   they were, unless someone changed them.
/// - Vigil's own keep-alive streams (`vigil.stream` set, or an `application.name` containing
///   "Vigil keep-alive") and the prompt itself are never touched: the keep-alive is silent, so
///   lowering it would change nothing audible, and never touching it means it never stops and
///   no volume of it is saved.
///
/// Used from one thread (the announcer's), like the ``PulseMixer`` it drives.
final class ClientDucker {
    private let mixer: PulseMixer
    private let directory: String
    private let logger: Logger
    private let rampMicroseconds: UInt64
    private(set) var journal: DuckJournal
    /// The volume Vigil last set on each stream.
    private var lastSet: [UInt32: [UInt32]] = [:]
    private var restoreEntriesRead = false
    private(set) var ducked: [DuckedStream] = []

    init(
        mixer: PulseMixer, directory: String, level: Double, rampMilliseconds: Int, server: String?, cookie: UInt32,
        logger: Logger
    ) {
        self.mixer = mixer
        self.directory = directory
        self.logger = logger
        let steps = rampMilliseconds <= 0 ? 1 : max(2, min(DuckJournal.maxRampSteps, rampMilliseconds / 5))
        self.rampMicroseconds = UInt64(max(0, rampMilliseconds)) * 1000 / UInt64(steps)
        self.journal = DuckJournal(
            server: server, serverCookie: cookie, pid: getpid(), level: level, rampSteps: steps, streams: [],
            restoreEntries: nil, absentRestoreIDs: [])
    }

    /// True for Vigil's own streams, which ducking never touches.
    static func isOurs(_ input: PulseMixer.SinkInput) -> Bool {
        input.properties["vigil.stream"] != nil || (input.applicationName?.contains("Vigil keep-alive") ?? false)
    }

    private func shouldDuck(_ input: PulseMixer.SinkInput) -> Bool {
        !Self.isOurs(input) && input.volumeWritable && !input.volume.isEmpty
            && input.volume.allSatisfy { $0 <= DuckJournal.maxVolume }
            && !journal.streams.contains { $0.index == input.index }
    }

    /// Lowers every other stream playing now (ramped); returns them.
    func begin() throws(AnnounceError) -> [DuckedStream] {
        let inputs: [PulseMixer.SinkInput]
        do {
            try mixer.subscribeToSinkInputs()
            _ = mixer.takeChanges()
            inputs = try mixer.sinkInputs().filter(shouldDuck)
        } catch {
            throw AnnounceError(code: .soundServer, message: "cannot list the other apps' streams: \(error.message)")
        }
        if inputs.isEmpty { return [] }
        return try add(inputs, ramp: true)
    }

    /// Lowers streams that started since the last call (at once); returns them.
    func handleChanges() -> [DuckedStream] {
        var fresh: [PulseMixer.SinkInput] = []
        for change in mixer.takeChanges() {
            guard case .new(let index) = change else { continue }
            do {
                if let input = try mixer.sinkInput(index), shouldDuck(input) { fresh.append(input) }
            } catch {
                logger.warning(
                    "Cannot inspect a stream that started during the prompt", metadata: ["announce.error": "\(error)"])
            }
        }
        guard !fresh.isEmpty else { return [] }
        do {
            return try add(fresh, ramp: false)
        } catch {
            logger.warning(
                "A stream that started during the prompt was not lowered", metadata: ["announce.error": "\(error)"])
            return []
        }
    }

    private func add(_ inputs: [PulseMixer.SinkInput], ramp: Bool) throws(AnnounceError) -> [DuckedStream] {
        var added: [DuckJournal.Stream] = []
        for input in inputs {
            var original = input.volume
            // An app that (re)started during the duck got the lowered volume module-stream-restore
            // saved for its key: its real volume is the one journalled for that key.
            if let id = input.restoreID,
                let earlier = journal.streams.first(where: {
                    $0.restoreID == id && journal.volumesSet(for: $0).contains { Self.close($0, input.volume) }
                })
            {
                original = earlier.original
            }
            let stream = DuckJournal.Stream(
                index: input.index, restoreID: input.restoreID, application: input.applicationName,
                role: input.mediaRole, original: original, ducked: PulseMixer.scaled(original, by: journal.level))
            added.append(stream)
        }
        // module-stream-restore's entries for new keys, read before anything is lowered.
        let newIDs = Set(added.compactMap(\.restoreID)).subtracting(journal.streams.compactMap(\.restoreID))
        if !newIDs.isEmpty || !restoreEntriesRead {
            do {
                if let entries = try mixer.restoreEntries() {
                    var kept = journal.restoreEntries ?? []
                    for id in newIDs.sorted() {
                        if let entry = entries.first(where: { $0.name == id }) {
                            kept.append(entry)
                        } else {
                            journal.absentRestoreIDs.append(id)
                        }
                    }
                    journal.restoreEntries = kept
                }
            } catch {
                throw AnnounceError(
                    code: .soundServer, message: "cannot read module-stream-restore's entries: \(error.message)")
            }
            restoreEntriesRead = true
        }
        journal.streams += added
        try journal.write(to: directory)

        let steps = ramp ? journal.rampSteps : 1
        for k in 1...steps {
            for stream in added {
                let factor = k == steps ? journal.level : 1 + (journal.level - 1) * Double(k) / Double(steps)
                let volume = k == steps ? stream.ducked : PulseMixer.scaled(stream.original, by: factor)
                do {
                    if try mixer.setVolume(volume, of: stream.index) { lastSet[stream.index] = volume }
                } catch {
                    throw AnnounceError(code: .soundServer, message: "cannot lower a stream: \(error.message)")
                }
            }
            if k < steps { mixer.pump(microseconds: rampMicroseconds) }
        }
        let result = added.filter { lastSet[$0.index] != nil }.map {
            DuckedStream(
                index: $0.index, application: $0.application, role: $0.role, originalVolume: $0.original,
                duckedVolume: $0.ducked)
        }
        ducked += result
        return result
    }

    /// Puts everything back (ramped) and removes the journal.
    func end() throws(AnnounceError) -> RecoveryReport {
        guard !journal.streams.isEmpty else {
            return RecoveryReport(pid: journal.pid, restored: [], keptUserChange: [], restoreEntries: [])
        }
        return try Self.restore(
            journal, directory: directory, mixer: mixer, exact: lastSet, rampMicroseconds: rampMicroseconds,
            logger: logger)
    }

    /// Waits (up to the mixer's request timeout) until no client of process `pid` is connected
    /// to the server; a process that still runs is not waited for.
    static func waitUntilGone(_ pid: Int32, mixer: PulseMixer) throws(AudioError) {
        let deadline = MonotonicClock.nanoseconds() &+ mixer.timeoutMicroseconds * 1000
        while try mixer.clientProcessIDs().contains(pid) {
            if kill(pid, 0) == 0 || MonotonicClock.nanoseconds() > deadline { return }
            mixer.pump(microseconds: 20_000)
        }
    }

    /// Two volumes equal within rounding (pipewire-pulse converts through floats).
    static func close(_ a: [UInt32], _ b: [UInt32]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { abs(Int($0) - Int($1)) <= 100 }
    }

    /// Restores what `journal` lowered: streams the server reports now and whose volume is still
    /// one Vigil may have set (any ramp step, or `exact`: the last one this process set) go back
    /// to their original volume — never more (``DuckJournal/decode(_:path:)`` bounds it) — then
    /// module-stream-restore's entries that hold a volume of Vigil's go back to what they were.
    /// The journal is removed from `directory` only once every stream is verified back (or
    /// changed by someone else, or gone); otherwise it stays for the next start.
    ///
    /// A journal another process left is restored only once that process's connection is gone
    /// from the server: a killed client's last requests (a lowered volume) are still handled
    /// until then, and would land after the restore.
    static func restore(
        _ journal: DuckJournal, directory: String, mixer: PulseMixer, exact: [UInt32: [UInt32]]?,
        rampMicroseconds: UInt64, logger: Logger
    ) throws(AnnounceError) -> RecoveryReport {
        var restored: [UInt32] = []
        var kept: [UInt32] = []
        var entriesPutBack: [String] = []
        var notBack: [UInt32] = []
        do {
            // A connection lost during the prompt is made again to put things back.
            try mixer.connect()
            let info = try mixer.serverInfo()
            let sameRun = info.cookie == journal.serverCookie
            if sameRun, journal.pid != getpid() { try waitUntilGone(journal.pid, mixer: mixer) }
            let current = try mixer.sinkInputs()
            var targets: [(index: UInt32, original: [UInt32])] = []
            var claimed = Set<UInt32>()
            for stream in journal.streams {
                // Every volume Vigil may have set: a request that timed out may still have been
                // applied, so the last one this process knows of is not enough.
                let ours = journal.volumesSet(for: stream) + (exact?[stream.index].map { [$0] } ?? [])
                if sameRun, let input = current.first(where: { $0.index == stream.index }) {
                    claimed.insert(input.index)
                    if close(input.volume, stream.original) {
                        continue
                    } else if ours.contains(where: { close($0, input.volume) }) {
                        targets.append((input.index, stream.original))
                    } else {
                        kept.append(input.index)
                    }
                    continue
                }
                // Gone (or the server restarted): an app that came back under the same
                // module-stream-restore key with Vigil's lowered volume is put back too.
                guard let id = stream.restoreID else { continue }
                let steps = journal.volumesSet(for: stream)
                if let input = current.first(where: { candidate in
                    candidate.restoreID == id && !claimed.contains(candidate.index) && !isOurs(candidate)
                        && !journal.streams.contains { sameRun && $0.index == candidate.index }
                        && steps.contains { close($0, candidate.volume) }
                }) {
                    claimed.insert(input.index)
                    targets.append((input.index, stream.original))
                }
            }
            let rampSteps = max(1, journal.rampSteps)
            for k in 1...rampSteps {
                let factor = journal.level + (1 - journal.level) * Double(k) / Double(rampSteps)
                for target in targets {
                    let volume = k == rampSteps ? target.original : PulseMixer.scaled(target.original, by: factor)
                    if try mixer.setVolume(volume, of: target.index), k == rampSteps { restored.append(target.index) }
                }
                if k < rampSteps { mixer.pump(microseconds: rampMicroseconds) }
            }
            // Verified, not assumed: every target the server still has must now be at its
            // original volume before the journal may go.
            let after = try mixer.sinkInputs()
            for target in targets {
                guard let input = after.first(where: { $0.index == target.index }) else { continue }
                if !close(input.volume, target.original) { notBack.append(target.index) }
            }

            if let before = journal.restoreEntries, let now = try mixer.restoreEntries() {
                var write: [PulseMixer.RestoreEntry] = []
                var delete: [String] = []
                for id in Set(journal.streams.compactMap(\.restoreID)).sorted() {
                    guard let entry = now.first(where: { $0.name == id }) else { continue }
                    let streams = journal.streams.filter { $0.restoreID == id }
                    let vigils = streams.flatMap { journal.volumesSet(for: $0) + [$0.original] }
                    guard entry.volume.isEmpty || vigils.contains(where: { close($0, entry.volume) }) else { continue }
                    if let original = before.first(where: { $0.name == id }) {
                        if original != entry {
                            write.append(original)
                            entriesPutBack.append(id)
                        }
                    } else if journal.absentRestoreIDs.contains(id) {
                        delete.append(id)
                        entriesPutBack.append(id)
                    }
                }
                try mixer.writeRestoreEntries(write)
                try mixer.deleteRestoreEntries(delete)
            }
        } catch {
            throw AnnounceError(
                code: .soundServer,
                message:
                    "cannot put the lowered volumes back: \(error.message) — the journal \(DuckJournal.path(in: directory)) "
                    + "is kept, and the next announcement or host start restores from it")
        }
        guard notBack.isEmpty else {
            throw AnnounceError(
                code: .soundServer,
                message: "stream(s) \(notBack.map(String.init).joined(separator: ", ")) did not come back to their "
                    + "volume (something lowered them again meanwhile) — the journal \(DuckJournal.path(in: directory)) "
                    + "is kept, and the next announcement or host start restores from it")
        }
        try DuckJournal.remove(from: directory)
        if !kept.isEmpty {
            logger.info(
                "Left streams whose volume was changed during the prompt", metadata: ["announce.kept": "\(kept)"])
        }
        return RecoveryReport(
            pid: journal.pid, restored: restored, keptUserChange: kept, restoreEntries: entriesPutBack)
    }
}
