import Foundation
import Logging
import Synchronization
import Testing
import VigilTestSupport

@testable import VigilSoundscape

@Suite("soundscape preferences: atomic, corrupt → defaults, read-only reported once")
struct PreferencesTests {
    let defaults = SoundscapePreferences(soundscape: "ocean-waves", volume: 0.3, paused: false)
    let known: Set<String> = ["ocean-waves", "rain", "brown-noise", "pink-noise"]

    @Test("saved preferences come back; nothing saved gives the defaults without a warning")
    func roundTrip() throws {
        let dir = try TestDirectory("vigil-prefs")
        defer { dir.remove() }
        let store = PreferenceStore(directory: dir.url("state"), logger: Logger(label: "test"))
        let (initial, warning) = store.load(defaults: defaults, known: known)
        #expect(initial == defaults)
        #expect(warning == nil)
        let chosen = SoundscapePreferences(soundscape: "rain", volume: 0.5, paused: true)
        store.save(chosen)
        #expect(store.load(defaults: defaults, known: known).0 == chosen)
        #expect(try dir.mode("state/preferences.json") == 0o600)
        #expect(try dir.mode("state") == 0o700)
        // Only the file itself: no temporary file left beside it.
        #expect(try dir.list("state") == ["preferences.json"])
    }

    @Test(
        "a damaged file falls back to the defaults with a warning saying why",
        arguments: [
            ("{not json", "not JSON"),
            (
                #"{"schema":"vigil.soundscape-preferences/v1","soundscape":"rain","volume":"loud","paused":false}"#,
                "wrong type"
            ),
            (
                #"{"schema":"vigil.soundscape-preferences/v1","soundscape":"rain","volume":7,"paused":false}"#,
                "outside 0…1"
            ),
            (#"{"schema":"other/v9","soundscape":"rain","volume":0.5,"paused":false}"#, "schema"),
            (#"{"schema":"vigil.soundscape-preferences/v1","volume":0.5,"paused":false}"#, "no \"soundscape\""),
        ])
    func corrupt(text: String, reason: String) throws {
        let dir = try TestDirectory("vigil-prefs")
        defer { dir.remove() }
        try dir.write("preferences.json", text)
        let store = PreferenceStore(directory: dir.path, logger: Logger(label: "test"))
        let (loaded, warning) = store.load(defaults: defaults, known: known)
        #expect(loaded == defaults)
        #expect(warning?.contains(reason) == true, "\(warning ?? "no warning")")
    }

    @Test("an unknown soundscape keeps the volume, plays the default, and says so")
    func unknownSoundscape() throws {
        let dir = try TestDirectory("vigil-prefs")
        defer { dir.remove() }
        try dir.write(
            "preferences.json",
            #"{"schema":"vigil.soundscape-preferences/v1","soundscape":"forest","volume":0.1,"paused":true}"#)
        let (loaded, warning) = PreferenceStore(directory: dir.path, logger: Logger(label: "test"))
            .load(defaults: defaults, known: known)
        #expect(loaded == SoundscapePreferences(soundscape: "ocean-waves", volume: 0.1, paused: true))
        #expect(warning?.contains("forest") == true)
    }

    @Test("a state directory that cannot be written is reported once; later saves fail quietly, the error is kept")
    func unwritable() throws {
        let dir = try TestDirectory("vigil-prefs")
        defer { dir.remove() }
        let handler = RecordingLogHandler()
        let logger = Logger(label: "test") { _ in handler }
        // Tests run as root, which directory modes do not stop: a regular file where the directory
        // should be makes every write fail the same way a read-only directory does.
        let blocker = try dir.write("state", "not a directory")
        let store = PreferenceStore(directory: blocker + "/soundscape", logger: logger)
        for volume in [0.1, 0.5, 0.75] {
            store.save(SoundscapePreferences(soundscape: "rain", volume: volume, paused: false))
        }
        #expect(store.writeError?.contains("cannot save the soundscape preferences") == true)
        #expect(handler.warnings.filter { $0.contains("not saved") }.count == 1, "\(handler.warnings)")
        // It still answers: loading gives the defaults.
        #expect(store.load(defaults: defaults, known: known).0 == defaults)
    }
}

@Suite("soundscape preferences on a full disk: the old file stays, the fault is reported, the choice is saved later")
struct PreferencesFullDiskTests {
    let chosenBefore = SoundscapePreferences(soundscape: "rain", volume: 0.4, paused: false)
    let chosenWhileFull = SoundscapePreferences(soundscape: "pink-noise", volume: 0.55, paused: true)

    @Test(
        "a write on a full tmpfs keeps the old file and reports; once freed the choice reaches the disk unasked",
        .enabled(if: FullDisk.isAvailable, "needs root to mount a tmpfs"))
    func fullTmpfs() async throws {
        let disk = try FullDisk()
        defer { disk.unmount() }
        let handler = RecordingLogHandler(minimumLevel: .notice)
        // Each change of the write error is announced (the plugin then republishes its status).
        let changes = Mutex(0)
        let store = PreferenceStore(
            directory: disk.path + "/soundscape", logger: Logger(label: "test") { _ in handler }
        ) { changes.withLock { $0 += 1 } }
        let writer = PreferenceWriter(store: store, retryInterval: .milliseconds(100))
        #expect(store.save(chosenBefore))
        let saved = try Array(Data(contentsOf: URL(fileURLWithPath: store.path)))

        try disk.fill()
        writer.save(chosenWhileFull)
        // The announcement comes last, after the error is kept and logged.
        #expect(await RuntimeFixtures.waitUntil(timeout: 10) { changes.withLock { $0 } == 1 })
        #expect(store.writeError?.contains("No space left on device") == true, "\(store.writeError ?? "")")
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: store.path))) == saved)
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.path + "/soundscape") == ["preferences.json"])
        #expect(handler.warnings.filter { $0.contains("not saved") }.count == 1, "\(handler.warnings)")

        disk.free()
        let loaded = { store.load(defaults: chosenBefore, known: ["rain", "pink-noise"]).0 }
        #expect(await RuntimeFixtures.waitUntil(timeout: 10) { changes.withLock { $0 } == 2 })
        #expect(loaded() == chosenWhileFull)
        #expect(store.writeError == nil)
        #expect(handler.warnings.contains { $0.contains("saved again") }, "\(handler.warnings)")

        // A second episode is reported again.
        try disk.fill()
        writer.save(chosenBefore)
        #expect(await RuntimeFixtures.waitUntil(timeout: 10) { changes.withLock { $0 } == 3 })
        #expect(handler.warnings.filter { $0.contains("not saved") }.count == 2, "\(handler.warnings)")
        disk.free()
        await writer.close()
        #expect(loaded() == chosenBefore)
    }
}

@Suite("soundscape preferences: the state-file StrictModes rule")
struct PreferencesStrictModesTests {
    @Test("a preferences file others can write, or another user's, is not used", arguments: ["0666", "owner", "link"])
    func exposedFileIsRefused(exposure: String) throws {
        let dir = try TestDirectory("vigil-prefs")
        defer { dir.remove() }
        let defaults = SoundscapePreferences(soundscape: "ocean-waves", volume: 0.3, paused: false)
        let planted = #"{"schema":"vigil.soundscape-preferences/v1","soundscape":"rain","volume":1,"paused":true}"#
        let path = try dir.write("state/preferences.json", planted, mode: 0o600)
        #expect(chmod(dir.url("state"), 0o700) == 0)
        switch exposure {
        case "0666": #expect(chmod(path, 0o666) == 0)
        case "owner": #expect(chown(path, 65534, 65534) == 0)
        default:
            #expect(rename(dir.url("state"), dir.url("real")) == 0)
            #expect(symlink(dir.url("real"), dir.url("state")) == 0)
        }
        let store = PreferenceStore(directory: dir.url("state"), logger: Logger(label: "test"))
        let (loaded, warning) = store.load(defaults: defaults, known: ["ocean-waves", "rain"])
        #expect(loaded == defaults)
        #expect(warning?.contains(dir.path) == true, "\(warning ?? "no warning")")
    }
}
