import Testing
import VigilPlugin
import VigilTestSupport

/// The one settings reader every plugin (and `[announce]`) uses: typed getters, range checks,
/// and errors that name the key with its path inside nested tables.
@Suite struct PluginSettingsTests {
    @Test func typedGettersCheckRangesAndNameTheKey() throws {
        let settings = PluginSettings(
            pluginName: "p", values: ["n": .integer(5), "x": .double(0.5), "s": .string(""), "w": .integer(-3)])
        #expect(try settings.integer("n", in: 0...10) == 5)
        #expect(try settings.integer("absent", in: 0...10) == nil)
        #expect(try settings.number("n", in: 0...10) == 5, "an integer is a number")
        #expect(try settings.number("x", default: 1, in: 0...1) == 0.5)
        #expect(
            settingRefusal { _ = try settings.integer("w", in: 0...10) }
                == "setting `w`: -3 is out of range; use a value from 0 to 10 — fix it in the [p] table of vigil.toml")
        #expect(
            settingRefusal { _ = try settings.nonEmptyString("s") }?.hasPrefix("setting `s`: expected a non-empty")
                == true
        )
        #expect(
            settingRefusal { _ = try settings.integer("x") }?.contains("expected an integer, found number 0.5") == true)
        #expect(
            settingRefusal { try settings.refuseUnknownKeys(known: ["n", "x", "s"]) }?.hasPrefix(
                "setting `w`: unknown setting; known: n, s, x") == true)
    }

    @Test func nestedTablesNameTheirPath() throws {
        let settings = PluginSettings(pluginName: "p", values: [:])
        let worker = settings.nested(["retries": .integer(99), "name": .integer(1)], at: "workers[2]")
        #expect(
            settingRefusal { _ = try worker.integer("retries", default: 0, in: 0...3) }?.hasPrefix(
                "setting `workers[2].retries`: 99 is out of range") == true)
        #expect(
            settingRefusal { _ = try worker.string("name") }?.hasPrefix("setting `workers[2].name`: expected a string")
                == true)
        let deeper = worker.nested([:], at: "env")
        #expect(deeper.qualified("HOME") == "workers[2].env.HOME")
    }
}
