import Testing
import VigilPlugin

/// The plugin contract's settings as a plugin sees them: the manifest's defaults overlaid by
/// vigil.toml, the typed getters' refusals, and the errors a plugin reports to the host.
@Suite("Plugin settings: merging, refusals, errors")
struct SettingsMergeTests {
    /// The message of the `invalid-setting` error `body` throws, nil when it throws none.
    static func refusal(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as PluginError {
            #expect(error.code == .invalidSetting)
            #expect(error.plugin == "p")
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test("overrides win over defaults, and nested tables merge key by key rather than replacing each other")
    func overridesMergeIntoDefaults() throws {
        let settings = PluginSettings(
            pluginName: "p",
            defaults: [
                "volume": .double(0.5), "mode": .string("quiet"),
                "env": .table(["HOME": .string("/home/a"), "LANG": .string("C")]),
            ],
            overrides: ["volume": .double(0.8), "env": .table(["LANG": .string("en_US.UTF-8")])])
        #expect(try settings.number("volume", in: 0...1) == 0.8)
        #expect(try settings.string("mode") == "quiet")
        #expect(try settings.table("env") == ["HOME": .string("/home/a"), "LANG": .string("en_US.UTF-8")])
        // A table given where the default is a scalar replaces it (and is then refused by its getter).
        let replaced = PluginSettings(
            pluginName: "p", defaults: ["mode": .string("quiet")], overrides: ["mode": .table([:])])
        #expect(
            Self.refusal { _ = try replaced.string("mode") }
                == "setting `mode`: expected a string, found table {} — fix it in the [p] table of vigil.toml")
    }

    @Test("every getter names the type it expected and the value it found")
    func mismatchesNameBothTypes() {
        let settings = PluginSettings(
            pluginName: "p",
            values: ["flag": .string("yes"), "list": .integer(3), "table": .array([.bool(true)]), "n": .bool(false)])
        #expect(
            Self.refusal { _ = try settings.bool("flag", default: false) }?.contains(
                "expected true or false, found string \"yes\"") == true)
        #expect(Self.refusal { _ = try settings.array("list") }?.contains("expected an array, found integer 3") == true)
        #expect(
            Self.refusal { _ = try settings.table("table") }?.contains("expected a table, found array [true]") == true)
        #expect(Self.refusal { _ = try settings.number("n") }?.hasPrefix("setting `n`: expected") == true)
        #expect(Self.refusal { _ = try settings.bool("absent", default: true) } == nil)
    }

    @Test("a choice outside its list and an unknown key are refused with what is allowed")
    func choicesAndUnknownKeys() throws {
        let settings = PluginSettings(pluginName: "p", values: ["mode": .string("loud"), "zeta": .integer(1)])
        #expect(
            Self.refusal { _ = try settings.choice("mode", default: "quiet", from: ["quiet", "calm"]) }
                == "setting `mode`: \"loud\" is not one of \"quiet\", \"calm\" — fix it in the [p] table of vigil.toml")
        #expect(try settings.choice("other", default: "quiet", from: ["quiet"]) == "quiet")
        #expect(
            Self.refusal { try settings.refuseUnknownKeys(known: ["mode", "alpha"]) }
                == "setting `zeta`: unknown setting; known: alpha, mode — fix it in the [p] table of vigil.toml")
        let worker = settings.nested(["cmd": .string("x")], at: "workers[0]")
        #expect(
            Self.refusal { try worker.refuseUnknownKeys(known: ["command"], kind: "worker key") }?.hasPrefix(
                "setting `workers[0].cmd`: unknown worker key; known: command") == true)
        try settings.refuseUnknownKeys(known: ["mode", "zeta"])
    }

    @Test("setting values print as vigil.toml spells them; tables in key order")
    func valuesPrintAsWritten() {
        let value = SettingValue.table([
            "b": .array([.integer(1), .double(0.5), .bool(true)]), "a": .string("x"),
        ])
        #expect(value.description == "{a = \"x\", b = [1, 0.5, true]}")
        #expect(
            [SettingValue.string(""), .integer(0), .double(0), .bool(false), .array([]), .table([:])].map(\.kindName)
                == ["string", "integer", "number", "boolean", "array", "table"])
    }

    @Test("the errors a plugin reports carry their code, the plugin and a remedy")
    func pluginErrors() {
        let unknown = PluginError.unknownEntry(plugin: "p", entry: "nope", known: ["zeta", "alpha"])
        #expect(unknown.code == .unknownEntry && unknown.plugin == "p")
        #expect(unknown.message.contains("(known: alpha, zeta)"))
        #expect(unknown.message.contains("register it with the host or update Vigil"))
        let start = PluginError.startFailed(plugin: "p", reason: "no device — plug one in")
        #expect(start.code == .startFailed && start.message == "could not start: no device — plug one in")
        let codes: [PluginErrorCode] = [.invalidSetting, .unknownEntry, .startFailed, .resumeFailed]
        #expect(Set(codes.map(\.rawValue)).count == codes.count, "two codes share a spelling")
    }
}
