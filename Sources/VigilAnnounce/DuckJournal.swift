import FoundationEssentials
import VigilAudio
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// What Vigil lowered, written (atomically, fsynced) to the state directory before it lowers
/// anything and removed once everything is back: a process killed mid-prompt leaves it behind,
/// and the next start or announcement restores from it.
package struct DuckJournal: Codable, Sendable, Hashable {
    /// One stream Vigil lowered.
    package struct Stream: Codable, Sendable, Hashable {
        var index: UInt32
        var restoreID: String?
        var application: String?
        var role: String?
        /// Its volume before Vigil touched it.
        var original: [UInt32]
        /// What Vigil lowers it to.
        var ducked: [UInt32]
    }

    var version = 1
    /// The server address used (`nil`: libpulse's default).
    var server: String?
    /// The server run the indexes belong to.
    var serverCookie: UInt32
    /// The process that wrote it.
    var pid: Int32
    var level: Double
    var rampSteps: Int
    package var streams: [Stream]
    /// module-stream-restore's entries for the streams' keys as they were before (`nil`: the
    /// module is not loaded).
    var restoreEntries: [PulseMixer.RestoreEntry]?
    /// Keys of ducked streams that had no entry before.
    var absentRestoreIDs: [String]

    /// Every volume Vigil may have set on `stream`: each ramp step down to the ducked value.
    package func volumesSet(for stream: Stream) -> [[UInt32]] {
        let steps = max(1, rampSteps)
        return (1...steps).map { k in
            PulseMixer.scaled(stream.original, by: 1 + (level - 1) * Double(k) / Double(steps))
        } + [stream.ducked]
    }

    /// The most ramp steps Vigil writes (``ClientDucker``).
    static let maxRampSteps = 10
    /// PulseAudio's channel limit (`PA_CHANNELS_MAX`): no volume has more entries.
    static let maxChannels = 32

    static let fileName = "duck-journal.json"
    static let maxSize = 1 << 20

    static func path(in directory: String) -> String { directory + "/" + fileName }

    /// The loudest volume Vigil puts a stream back to: PulseAudio's `PA_VOLUME_UI_MAX` (153 %,
    /// +11 dB, the top of pavucontrol's slider). A stream above it is never lowered (so never
    /// journalled), and a journal that says otherwise is refused.
    static let maxVolume: UInt32 = 99_957

    /// An ``AnnounceError`` for a failed state-file check or I/O on the journal, its lock or
    /// their directory: `.stateUnsafe` for a refusal of StrictModes, else `.journal`;
    /// `consequence` ends the message.
    static func failure(_ error: CoreError, consequence: String? = nil) -> AnnounceError {
        AnnounceError(
            code: error.code == .stateUnsafe ? .stateUnsafe : .journal,
            message: error.message + (consequence.map { "; \($0)" } ?? ""), cause: error.cause ?? ErrorCause(error))
    }

    /// Creates the announcer's state directory (0700) if it is missing and checks it and the
    /// directories above it (``StateFile``); `consequence` ends the error's message.
    static func makeStateDirectory(_ directory: String, consequence: String? = nil) throws(AnnounceError) {
        do {
            try StateFile.prepareDirectory(directory, holding: "the duck journal")
        } catch {
            throw failure(error, consequence: consequence)
        }
    }

    /// Writes the journal to `directory` (created 0700 if missing): atomically, the file and the
    /// directory fsynced, so it is on disk before the first volume is lowered.
    func write(to directory: String) throws(AnnounceError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(self) } catch {
            throw AnnounceError(code: .journal, message: "cannot encode the duck journal: \(error)")
        }
        do {
            try StateFile.write(Array(data), to: Self.path(in: directory), what: "the duck journal")
        } catch {
            throw Self.failure(error, consequence: "nothing was lowered")
        }
    }

    /// The journal left in `directory`, or `nil`; the file and its directories pass the
    /// ``StateFile`` checks first.
    static func read(from directory: String) throws(AnnounceError) -> DuckJournal? {
        let path = path(in: directory)
        let bytes: [UInt8]?
        do {
            bytes = try StateFile.readIfPresent(path, cap: maxSize, what: "the duck journal")
        } catch {
            throw failure(
                error,
                consequence: "restore the volumes by hand (`pactl list sink-inputs`) and delete \(path)")
        }
        guard let bytes else { return nil }
        return try decode(bytes, path: path)
    }

    /// The journal in `bytes`, read from `path`.
    package static func decode(_ bytes: [UInt8], path: String) throws(AnnounceError) -> DuckJournal {
        func damaged(_ why: String) -> AnnounceError {
            AnnounceError(
                code: .journal,
                message: "the duck journal \(path) is damaged (\(why)) — restore the volumes by hand "
                    + "(`pactl set-sink-input-volume`) and delete the file")
        }
        let journal: DuckJournal
        do {
            journal = try JSONDecoder().decode(DuckJournal.self, from: Data(bytes))
        } catch {
            throw damaged("\(error)")
        }
        // Values Vigil never writes: recovery would loop over them (ramp steps) or send them to
        // the sound server (levels, volumes), so they are refused here.
        guard (1...maxRampSteps).contains(journal.rampSteps) else {
            throw damaged("\(journal.rampSteps) ramp steps, not 1–\(maxRampSteps)")
        }
        guard journal.level.isFinite, (0...1).contains(journal.level) else {
            throw damaged("duck level \(journal.level), not 0–1")
        }
        for stream in journal.streams {
            for volume in [stream.original, stream.ducked] where volume.isEmpty || volume.count > maxChannels {
                throw damaged("stream \(stream.index) has a volume of \(volume.count) channels, not 1–\(maxChannels)")
            }
            // A restore may only undo what Vigil did: never louder than 153 %, and the lowered
            // volume must be the original one times the level (what Vigil writes).
            if let loud = stream.original.first(where: { $0 > maxVolume }) {
                throw damaged(
                    "stream \(stream.index) would go back to volume \(loud), above \(maxVolume) (153 %), which Vigil "
                        + "never lowers")
            }
            guard stream.ducked.count == stream.original.count,
                ClientDucker.close(stream.ducked, PulseMixer.scaled(stream.original, by: journal.level))
            else {
                throw damaged(
                    "stream \(stream.index)'s lowered volume \(stream.ducked) is not its volume \(stream.original) "
                        + "times the level \(journal.level)")
            }
        }
        for entry in journal.restoreEntries ?? [] {
            if let loud = entry.volume.first(where: { $0 > maxVolume }) {
                throw damaged("the saved entry \(entry.name) holds volume \(loud), above \(maxVolume) (153 %)")
            }
        }
        return journal
    }

    /// Removes the journal from `directory` durably (the directory is fsynced), once everything
    /// it records is back.
    static func remove(from directory: String) throws(AnnounceError) {
        do {
            try StateFile.remove(path(in: directory), what: "the duck journal")
        } catch {
            throw failure(error)
        }
    }
}
