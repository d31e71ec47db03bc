import FoundationEssentials
import Logging
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// What the user chose, kept across restarts: the soundscape, the volume and whether it is paused.
public struct SoundscapePreferences: Sendable, Hashable, Codable {
    public var soundscape: String
    public var volume: Double
    public var paused: Bool

    public init(soundscape: String, volume: Double, paused: Bool) {
        self.soundscape = soundscape
        self.volume = volume
        self.paused = paused
    }
}

/// Reads and writes `preferences.json` in the plugin's state directory.
///
/// Writes are atomic (temporary file, fsync, rename): a write that fails (a full disk, a
/// directory that cannot be written) leaves the old file as it was. A file that cannot be
/// understood is reported and replaced by the defaults, never a crash; a write failure is
/// reported once per episode (a warning, and ``writeError`` until a write succeeds again), the
/// recovery too, and playing goes on with the preferences kept in memory.
package final class PreferenceStore: Sendable {
    let path: String
    private let directory: String
    private let logger: Logger
    private let writeFailureReported = Mutex(false)
    private let lastWriteError = Mutex<String?>(nil)

    private struct File: Codable {
        var schema: String
        var soundscape: String
        var volume: Double
        var paused: Bool
    }

    static let schema = "vigil.soundscape-preferences/v1"

    private let onWriteErrorChange: @Sendable () -> Void

    /// - Parameter onWriteErrorChange: called when ``writeError`` appears or clears (from the
    ///   saving thread), so the host can publish the fault and its recovery.
    init(directory: String, logger: Logger, onWriteErrorChange: @escaping @Sendable () -> Void = {}) {
        self.directory = directory
        self.path = directory + "/preferences.json"
        self.logger = logger
        self.onWriteErrorChange = onWriteErrorChange
    }

    /// What went wrong with the last write, if it failed.
    var writeError: String? { lastWriteError.withLock { $0 } }

    /// The saved preferences, or `defaults` when there are none; when the file is damaged or names
    /// an unknown soundscape, `defaults` (or the parts that are good) plus a warning saying why.
    func load(defaults: SoundscapePreferences, known: Set<String>) -> (SoundscapePreferences, warning: String?) {
        // StateFile, not FileManager: the StrictModes checks every state file gets (a regular
        // file of this user in a directory only this user can change), bounded, and no Foundation
        // read (it leaks a buffer for an empty file).
        let bytes: [UInt8]?
        do {
            bytes = try StateFile.readIfPresent(path, cap: Self.maxFileBytes, what: "the soundscape preferences file")
        } catch {
            return (defaults, "cannot read \(path) (\(error.message)); using the defaults")
        }
        guard let bytes else { return (defaults, nil) }
        return Self.interpret(Data(bytes), path: path, defaults: defaults, known: known)
    }

    /// The largest preference file read (a real one is under 200 bytes).
    static let maxFileBytes = 64 * 1024

    /// What the bytes of a preference file at `path` say, as ``load(defaults:known:)`` returns it.
    package static func interpret(
        _ data: Data, path: String, defaults: SoundscapePreferences, known: Set<String>
    ) -> (SoundscapePreferences, warning: String?) {
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch {
            return (
                defaults,
                "\(path) is damaged (\(Self.reason(error))); using the defaults — it is rewritten on the next change"
            )
        }
        guard file.schema == Self.schema else {
            return (defaults, "\(path) has schema \"\(file.schema)\", not \"\(Self.schema)\"; using the defaults")
        }
        guard file.volume.isFinite, (0...1).contains(file.volume) else {
            return (defaults, "\(path) has volume \(file.volume), outside 0…1; using the defaults")
        }
        var result = SoundscapePreferences(soundscape: file.soundscape, volume: file.volume, paused: file.paused)
        if !known.contains(file.soundscape) {
            result.soundscape = defaults.soundscape
            return (
                result,
                "\(path) names the soundscape \"\(file.soundscape)\", which is not configured; playing \"\(defaults.soundscape)\""
            )
        }
        return (result, nil)
    }

    /// Says that the newest preferences were never saved (the host is stopping while writes fail).
    func reportLost() {
        logger.warning(
            "The newest soundscape preferences could not be saved before stopping; the next start uses the last saved ones",
            metadata: ["soundscape.error": "\(writeError ?? "unknown")"])
    }

    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted: "not JSON"
        case DecodingError.keyNotFound(let key, _): "no \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context):
            "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type"
        default: "unreadable"
        }
    }

    /// Saves `preferences`; returns whether they reached the disk. The first failure after a
    /// success is logged as a warning and kept for ``writeError``; the next success clears it and
    /// is logged. Blocking (fsync): call it off the cooperative pool.
    @discardableResult
    func save(_ preferences: SoundscapePreferences) -> Bool {
        let file = File(
            schema: Self.schema, soundscape: preferences.soundscape, volume: preferences.volume,
            paused: preferences.paused)
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let bytes = Array(try encoder.encode(file)) + [UInt8(ascii: "\n")]
            try StateFile.write(bytes, to: path, what: "the soundscape preferences file")
            lastWriteError.withLock { $0 = nil }
            let recovered = writeFailureReported.withLock { reported -> Bool in
                defer { reported = false }
                return reported
            }
            if recovered {
                logger.notice("Soundscape preferences are saved again", metadata: ["soundscape.file": "\(path)"])
                onWriteErrorChange()
            }
            return true
        } catch {
            let message = "cannot save the soundscape preferences to \(path): \(error)"
            lastWriteError.withLock { $0 = message }
            let first = writeFailureReported.withLock { reported -> Bool in
                defer { reported = true }
                return !reported
            }
            if first {
                logger.warning(
                    "Soundscape preferences are not saved; playing goes on and they last until the host stops",
                    metadata: ["soundscape.error": "\(message)"])
                onWriteErrorChange()
            } else {
                logger.debug("Soundscape preferences still not saved", metadata: ["soundscape.error": "\(message)"])
            }
            return false
        }
    }
}
