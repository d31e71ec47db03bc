import Testing
import VigilPlugin

@testable import VigilAnnounce

@Suite("[announce] settings")
struct AnnounceSettingsTests {
    @Test("an absent table gives the defaults: duck at 0.3, 20 ms ramp, auto ducking, role event")
    func defaults() throws {
        let settings = try AnnounceSettings(table: nil)
        #expect(settings.policy == .duck(level: 0.3))
        #expect(settings.rampMilliseconds == 20)
        #expect(settings.ducking == .auto)
        #expect(settings.role == "event")
    }

    @Test("every key is read")
    func allKeys() throws {
        let settings = try AnnounceSettings(table: [
            "policy": .string("duck"), "duck_level": .double(0.2), "ramp_ms": .integer(0), "ducking": .string("client"),
            "role": .string("a11y"), "voice": .string("de"), "words_per_minute": .integer(200),
            "sink": .string("speakers"), "pulse_server": .string("unix:/tmp/x"),
            "players": .array([.string("mpv"), .string("vlc.instance2")]),
        ])
        #expect(settings.players == ["mpv", "vlc.instance2"])
        #expect(try AnnounceSettings(table: ["policy": .string("pause-spoken")]).policy == .pauseSpoken)
        #expect(settings.policy == .duck(level: 0.2))
        #expect(settings.rampMilliseconds == 0)
        #expect(settings.ducking == .client)
        #expect(settings.role == "a11y")
        #expect(settings.voice == "de")
        #expect(settings.wordsPerMinute == 200)
        #expect(settings.sink == "speakers")
        #expect(settings.pulseServer == "unix:/tmp/x")
        #expect(try AnnounceSettings(table: ["policy": .string("mix")]).policy == .mix)
    }

    @Test(
        "bad values are refused with the key and the fix",
        arguments: [
            (["policy": SettingValue.string("shout")], "policy"),
            (["duck_level": .double(1.5)], "duck_level"),
            (["duck_level": .string("low")], "duck_level"),
            (["ramp_ms": .integer(5000)], "ramp_ms"),
            (["ducking": .string("server")], "ducking"),
            (["role": .string("music; rm")], "role"),
            (["words_per_minute": .integer(10)], "words_per_minute"),
            (["volume": .integer(1)], "volume"),
            (["players": .array([.string("1player")])], "players"),
            (["players": .string("mpv")], "players"),
        ])
    func refused(table: [String: SettingValue], key: String) {
        do {
            _ = try AnnounceSettings(table: table)
            Issue.record("accepted \(table)")
        } catch {
            #expect(error.code == .invalidSettings)
            // Read by the plugins' one reader: the key, the problem and the table to fix.
            #expect(error.message.hasPrefix("setting `\(key)`: "), "\(error.message)")
            #expect(error.message.hasSuffix("fix it in the [announce] table of vigil.toml"), "\(error.message)")
            #expect((error.cause?.error as? PluginError)?.code == .invalidSetting)
        }
    }

    @Test("module-role-ducking's trigger role is the first whose group ducks music")
    func triggerRole() {
        #expect(AnnounceEngine.triggerRole(ofRoleDuckingArgument: "") == "phone")
        #expect(
            AnnounceEngine.triggerRole(ofRoleDuckingArgument: "trigger_roles=event,phone ducking_roles=music,video")
                == "event")
        #expect(
            AnnounceEngine.triggerRole(ofRoleDuckingArgument: "trigger_roles=phone/event ducking_roles=video/music")
                == "event")
        #expect(AnnounceEngine.triggerRole(ofRoleDuckingArgument: "trigger_roles=phone ducking_roles=video") == nil)
    }
}
