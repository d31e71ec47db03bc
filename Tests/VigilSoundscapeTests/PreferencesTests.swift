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
