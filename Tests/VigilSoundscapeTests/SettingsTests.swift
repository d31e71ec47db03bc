import Foundation
import Testing
import VigilAudio
import VigilPlugin
import VigilTestSupport

@testable import VigilSoundscape

@Suite("soundscape settings and manifest")
struct SettingsTests {
    static func settings(_ overrides: [String: SettingValue]) throws -> SoundscapeSettings {
        try SoundscapeSettings(
            PluginSettings(pluginName: "soundscape", defaults: manifestDefaults, overrides: overrides))
    }

    @Test("the signed manifest's settings are the ones the tests use, and give ocean-waves at Med")
    func manifestDefaultsMatch() throws {
        #expect(try ShippedManifest.settings("soundscape") == manifestDefaults)
        let defaults = try Self.settings([:])
        #expect(defaults.soundscape == "ocean-waves")
        #expect(defaults.volume == 0.3)
        #expect(defaults.mediaRole == "music")
        #expect(
            defaults.playbackConfiguration(hostName: "h", environment: HostEnvironment(variables: [:])).streamProperties
                == ["media.role": "music"])
    }

    @Test("presets, an explicit volume and user files are read; bad values are refused naming the key")
    func values() throws {
        #expect(try Self.settings(["preset": .string("low")]).volume == 0.1)
        #expect(try Self.settings(["preset": .string("max"), "volume": .double(0.2)]).volume == 0.2)
        let withFiles = try Self.settings([
            "files": .table(["forest": .string("/srv/forest.ogg")]), "soundscape": .string("forest"),
        ])
        #expect(withFiles.files.map(\.name) == ["forest"])
        #expect(withFiles.soundscape == "forest")
        let bad: [([String: SettingValue], String)] = [
            (["preset": .string("loud")], "preset"),
            (["volume": .double(1.5)], "volume"),
            (["soundscape": .string("waves")], "soundscape"),
            (["files": .table(["Forest": .string("/a.ogg")])], "files.Forest"),
            (["files": .table(["rain": .string("/a.ogg")])], "files.rain"),
            (["files": .table(["forest": .string("relative.ogg")])], "files.forest"),
            (["sleep_timer_min": .integer(5000)], "sleep_timer_min"),
            (["media_role": .string("phone")], "media_role"),
        ]
        for (overrides, key) in bad {
            do {
                _ = try Self.settings(overrides)
                Issue.record("\(overrides) accepted")
            } catch {
                #expect("\(error)".contains(key), "\(error)")
            }
        }
    }

    @Test("MPRIS names: bus-name elements are sanitised, track ids are object paths outside /org/mpris")
    func names() {
        #expect(MPRISServer.nameElement(for: "my-signer") == "my-signer")
        #expect(MPRISServer.nameElement(for: "9lives app.v2") == "_9lives_app_v2")
        #expect(MPRISServer.nameElement(for: "") == "host")
        #expect(MPRISServer.trackID("ocean-waves") == "/org/vigil/soundscape/track/ocean_waves")
        for soundscape in Soundscape.generated {
            let path = MPRISServer.trackID(soundscape.id)
            #expect(!path.hasPrefix("/org/mpris"))
            #expect(path.split(separator: "/").allSatisfy { $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } })
        }
    }
}
