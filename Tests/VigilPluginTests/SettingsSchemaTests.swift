import Testing
import VigilPlugin

@Suite("The settings validator")
struct SettingsSchemaTests {
    typealias Setting = SettingsSchema.Setting

    static let schema = SettingsSchema([
        "mode": Setting(type: .string, defaultValue: .string("zero"), choices: ["zero", "sine", "noise"]),
        "buffer_ms": Setting(type: .integer, defaultValue: .integer(1000), minimum: 100, maximum: 10_000),
        "level": Setting(type: .number, minimum: 0, maximum: 1, exclusiveMinimum: true),
        "enabled": Setting(type: .boolean, defaultValue: .bool(true)),
        "files": Setting(type: .table, defaultValue: .table([:]), values: Setting(type: .string, nonEmpty: true)),
        "workers": Setting(
            type: .array, defaultValue: .array([]),
            items: Setting(
                type: .table,
                fields: SettingsSchema([
                    "name": Setting(type: .string, nonEmpty: true, required: true),
                    "args": Setting(type: .array, items: Setting(type: .string)),
                    "restart": Setting(type: .string, choices: ["always", "on-failure", "never"]),
                ]))),
    ])

    @Test("valid tables pass; the defaults are the keys that have one")
    func validPasses() {
        #expect(
            Self.schema.validate([
                "mode": .string("sine"), "buffer_ms": .integer(100), "level": .integer(1), "enabled": .bool(false),
                "files": .table(["rain": .string("/x.ogg")]),
                "workers": .array([.table(["name": .string("w"), "args": .array([.string("-v")])])]),
            ]).isEmpty)
        #expect(Set(Self.schema.defaults.keys) == ["mode", "buffer_ms", "enabled", "files", "workers"])
    }

    @Test("each kind of problem, with its key path and a near name where there is one")
    func problems() {
        let problems = Self.schema.validate([
            "mdoe": .string("sine"),
            "buffer_ms": .integer(99),
            "level": .integer(0),
            "enabled": .string("yes"),
            "files": .table(["rain": .integer(3)]),
            "workers": .array([
                .table(["name": .string("w"), "argz": .array([]), "restart": .string("on-fail")]),
                .table(["args": .array([.integer(1)])]),
                .string("w"),
            ]),
        ])
        #expect(
            problems.map(\.description) == [
                "setting `buffer_ms`: 99 is out of range; use an integer from 100 to 10000",
                "setting `enabled`: expected true or false, found string \"yes\"",
                "setting `files.rain`: expected a non-empty string, found integer 3",
                "setting `level`: 0 is out of range; use a number above 0, at most 1",
                "setting `mdoe`: unknown setting; did you mean `mode`? Known: buffer_ms, enabled, files, level, mode, "
                    + "workers",
                "setting `workers[0].argz`: unknown setting; did you mean `args`? Known: args, name, restart",
                "setting `workers[0].restart`: \"on-fail\" is not one of \"always\", \"on-failure\", \"never\"; did you "
                    + "mean \"on-failure\"?",
                "setting `workers[1].args[0]`: expected a string, found integer 1",
                "setting `workers[1].name`: missing; this field is required",
                "setting `workers[2]`: expected a table, found string \"w\"",
            ])
        #expect(problems.first { $0.key == "mdoe" }?.suggestion == "mode")
        #expect(problems.first { $0.key == "workers[0].argz" }?.path == ["workers", "0", "argz"])
    }

    @Test("a choice may also be a key of a table beside it (a user's sound file by name)")
    func choicesFromATable() {
        let schema = SettingsSchema([
            "sound": Setting(type: .string, choices: ["rain", "ocean-waves"], orKeysOf: "files"),
            "files": Setting(type: .table, values: Setting(type: .string)),
        ])
        #expect(schema.validate(["sound": .string("mine"), "files": .table(["mine": .string("/m.ogg")])]).isEmpty)
        #expect(schema.validate(["sound": .string("rain")]).isEmpty)
        #expect(
            schema.validate(["sound": .string("mien"), "files": .table(["mine": .string("/m.ogg")])]).map(\.message)
                == [
                    "\"mien\" is not one of \"rain\", \"ocean-waves\" or a name from files; did you mean \"mine\"?"
                ])
    }

    @Test("a value's text is escaped in the message (no control character reaches a terminal)")
    func escapes() {
        let problems = Self.schema.validate(["mode": .string("sine\u{1B}[2J")])
        #expect(problems.count == 1)
        #expect(!problems[0].message.unicodeScalars.contains { $0.value == 0x1B }, "\(problems[0].message)")
    }

    @Test("did you mean: near names only, the nearest first, transpositions count one")
    func nearNames() {
        #expect(NearName.closest(to: "hots", among: ["host", "trusted_plugins", "supervisor"]) == "host")
        #expect(NearName.closest(to: "supervisr", among: ["host", "supervisor"]) == "supervisor")
        #expect(NearName.closest(to: "presett", among: ["preset", "volume"]) == "preset")
        #expect(NearName.closest(to: "zzz", among: ["host", "supervisor"]) == nil)
        #expect(NearName.closest(to: "ab", among: ["xy"]) == nil)
        #expect(NearName.editDistance(Array("ab"), Array("ba")) == 1)
        #expect(NearName.editDistance(Array("kitten"), Array("sitting")) == 3)
        #expect(NearName.editDistance(Array(""), Array("abc")) == 3)
    }

    @Test("the listing names every key, nested fields under their array, with what each accepts")
    func entries() {
        let keys = Self.schema.entries.map(\.key)
        #expect(keys.contains("workers[].name") && keys.contains("workers[].args") && keys.contains("buffer_ms"))
        #expect(Self.schema.entries.first { $0.key == "workers[].name" }?.accepts == "a non-empty string (required)")
        #expect(Self.schema.entries.first { $0.key == "buffer_ms" }?.accepts == "an integer from 100 to 10000")
    }
}
