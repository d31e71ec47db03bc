import Testing
import VigilAudio
import VigilPlugin

/// The one settings reader every plugin (and `[announce]`) uses: typed getters, range checks,
/// and errors that name the key with its path inside nested tables.
@Suite struct PluginSettingsTests {
    static func reason(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as PluginError {
            #expect(error.code == .invalidSetting && error.plugin == "p")
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test func typedGettersCheckRangesAndNameTheKey() throws {
        let settings = PluginSettings(
            pluginName: "p", values: ["n": .integer(5), "x": .double(0.5), "s": .string(""), "w": .integer(-3)])
        #expect(try settings.integer("n", in: 0...10) == 5)
        #expect(try settings.integer("absent", in: 0...10) == nil)
        #expect(try settings.number("n", in: 0...10) == 5, "an integer is a number")
        #expect(try settings.number("x", default: 1, in: 0...1) == 0.5)
        #expect(
            Self.reason { _ = try settings.integer("w", in: 0...10) }
                == "setting `w`: -3 is out of range; use a value from 0 to 10 — fix it in the [p] table of vigil.toml")
        #expect(
            Self.reason { _ = try settings.nonEmptyString("s") }?.hasPrefix("setting `s`: expected a non-empty") == true
        )
        #expect(
            Self.reason { _ = try settings.integer("x") }?.contains("expected an integer, found number 0.5") == true)
        #expect(
            Self.reason { try settings.refuseUnknownKeys(known: ["n", "x", "s"]) }?.hasPrefix(
                "setting `w`: unknown setting; known: n, s, x") == true)
    }

    @Test func nestedTablesNameTheirPath() throws {
        let settings = PluginSettings(pluginName: "p", values: [:])
        let worker = settings.nested(["retries": .integer(99), "name": .integer(1)], at: "workers[2]")
        #expect(
            Self.reason { _ = try worker.integer("retries", default: 0, in: 0...3) }?.hasPrefix(
                "setting `workers[2].retries`: 99 is out of range") == true)
        #expect(
            Self.reason { _ = try worker.string("name") }?.hasPrefix("setting `workers[2].name`: expected a string")
                == true)
        let deeper = worker.nested([:], at: "env")
        #expect(deeper.qualified("HOME") == "workers[2].env.HOME")
    }

    @Test func playbackKeysAreReadOnceForEveryAudioPlugin() throws {
        let defaults = PlaybackSettings.Defaults(bufferMilliseconds: 1000, retryMaxMilliseconds: 2000)
        let read = try PlaybackSettings(PluginSettings(pluginName: "p", values: [:]), defaults: defaults)
        #expect(read.device == nil && read.pulseServer == nil)
        #expect(read.bufferMilliseconds == 1000 && read.retryMaxMilliseconds == 2000 && read.healthCheckSeconds == 30)
        #expect(
            try PlaybackSettings(PluginSettings(pluginName: "p", values: defaults.values), defaults: defaults) == read,
            "the defaults as values read back as the defaults")
        let order = PluginSettings(
            pluginName: "p", values: ["retry_initial_ms": .integer(5000), "retry_max_ms": .integer(100)])
        #expect(
            Self.reason { _ = try PlaybackSettings(order, defaults: defaults) }?.hasPrefix("setting `retry_max_ms`")
                == true)
        let quote = PluginSettings(pluginName: "p", values: ["pulse_server": .string("a\"b")])
        #expect(
            Self.reason { _ = try PlaybackSettings(quote, defaults: defaults) }?.contains(
                "not a PulseAudio server address") == true)
    }
}
