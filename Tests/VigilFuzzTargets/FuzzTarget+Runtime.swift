import Foundation
import Logging
import VigilAnnounce
import VigilSoundscape
import VigilSupervisorEngine

extension FuzzTarget {
    static func notify(_ bytes: [UInt8]) {
        // What the supervisor's reader hands on: at most 4096 bytes, up to the first NUL.
        let datagram = bytes.prefix(4096).prefix { $0 != 0 }
        _ = NotifyMessage(String(decoding: datagram, as: UTF8.self))
    }

    static func preferences(_ bytes: [UInt8]) {
        let defaults = SoundscapePreferences(soundscape: "ocean-waves", volume: 0.3, paused: false)
        let (preferences, _) = PreferenceStore.interpret(
            Data(bytes), path: "/fuzz/preferences.json", defaults: defaults,
            known: Set(Soundscape.generated.map(\.id)))
        precondition(
            preferences.volume.isFinite && (0...1).contains(preferences.volume),
            "a preference file set the volume to \(preferences.volume)")
        precondition(
            Soundscape.generated.contains { $0.id == preferences.soundscape },
            "a preference file selected the unknown soundscape \(preferences.soundscape)")
    }

    static func duckJournal(_ bytes: [UInt8]) {
        guard let journal = try? DuckJournal.decode(bytes, path: "/fuzz/duck-journal.json") else { return }
        // What recovery derives from each stream before it compares volumes.
        for stream in journal.streams { _ = journal.volumesSet(for: stream) }
    }

    static func control(_ bytes: [UInt8]) {
        // What the channel reads: one line of at most 4096 bytes.
        let line = Array(bytes.prefix(ControlChannel.maxRequestSize).prefix { $0 != UInt8(ascii: "\n") })
        let controller = SoundscapeController(
            soundscapes: Soundscape.generated,
            preferences: SoundscapePreferences(soundscape: "ocean-waves", volume: 0.3, paused: false),
            logger: quietLogger)
        guard let answer = ControlChannel.answer(line, controller: controller) else {
            preconditionFailure("the control channel had no answer to \(line.count) bytes")
        }
        precondition(
            (try? JSONDecoder().decode(ControlResponse.self, from: Data(answer.dropLast()))) != nil,
            "the control channel answered with something its client cannot read")
        let volume = controller.current.volume
        precondition(volume.isFinite && (0...1).contains(volume), "a control request set the volume to \(volume)")
    }

    /// Logs nothing: a fuzz run feeds millions of inputs.
    static let quietLogger = Logger(label: "vigil.fuzz") { _ in SwiftLogNoOpLogHandler() }
}
