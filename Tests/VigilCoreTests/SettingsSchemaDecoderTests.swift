import Testing
import VigilCore
import VigilPlugin
import VigilTestSupport

/// The v2 manifest's settings schema, as the host decodes it; a v1 manifest still reads.
@Suite struct SettingsSchemaDecoderTests {
    static func manifest(schema: String = "vigil.plugin-manifest/v2", settings: String) -> String {
        """
        {"schema": "\(schema)", "name": "p", "version": "1.0.0", "entry": "p", "settings": \(settings)}
        """
    }

    func decode(_ text: String) throws(CoreError) -> PluginManifest {
        try ManifestDecoder.decode(Array(text.utf8), plugin: "p")
    }

    func failure(_ settings: String) -> String {
        do {
            _ = try decode(Self.manifest(settings: settings))
            return "decoded"
        } catch {
            #expect(error.code == .malformedManifest)
            return error.message
        }
    }

    @Test("a v2 schema decodes: types, bounds, choices, nested fields; its defaults are the settings")
    func decodes() throws {
        let m = try decode(
            Self.manifest(
                settings: """
                    {"mode": {"type": "string", "description": "what", "choices": ["a", "b"], "default": "a"},
                     "n": {"type": "number", "description": "n", "min": 0, "max": 1, "exclusive_min": true},
                     "w": {"type": "array", "description": "w", "default": [],
                           "items": {"type": "table", "fields": {"name": {"type": "string", "required": true}}}}}
                    """))
        let schema = try #require(m.settingsSchema)
        #expect(m.settings == ["mode": .string("a"), "w": .array([])])
        #expect(schema.settings["mode"]?.choices == ["a", "b"])
        #expect(schema.settings["n"]?.minimum == 0 && schema.settings["n"]?.exclusiveMinimum == true)
        #expect(schema.settings["w"]?.items?.setting.fields?.settings["name"]?.required == true)
        #expect(schema.validate(["w": .array([.table([:])])]).map(\.key) == ["w[0].name"])
    }

    @Test("a v1 manifest still reads: its settings are defaults and it has no schema")
    func v1StillReads() throws {
        let m = try decode(Self.manifest(schema: "vigil.plugin-manifest/v1", settings: #"{"mode": "a"}"#))
        #expect(m.settingsSchema == nil)
        #expect(m.settings == ["mode": .string("a")])
    }

    @Test(
        "a bad spec is refused at its JSON path",
        arguments: [
            (#"{"a": {"type": "float", "description": "d"}}"#, "$.settings.a.type", "unknown setting type"),
            (#"{"a": {"type": "string"}}"#, "$.settings.a", "\"description\" is missing"),
            (#"{"a": {"type": "integer", "description": "d", "min": 5, "max": 1}}"#, "$.settings.a.max", "below"),
            (#"{"a": {"type": "integer", "description": "d", "min": 1.5}}"#, "$.settings.a.min", "whole number"),
            (#"{"a": {"type": "string", "description": "d", "min": 1}}"#, "$.settings.a.min", "does not apply"),
            (
                #"{"a": {"type": "integer", "description": "d", "max": 3, "default": 4}}"#, "$.settings.a.default",
                "does not fit its own spec"
            ),
            (
                #"{"a": {"type": "string", "description": "d", "choices": ["x"], "default": "y"}}"#,
                "$.settings.a.default", "does not fit"
            ),
            (#"{"a": {"type": "string", "description": "d", "required": true}}"#, "$.settings.a.required", "only"),
            (#"{"a": {"type": "string", "description": "d", "colour": 1}}"#, "$.settings.a.colour", "unknown field"),
            (#"{"a": 3}"#, "$.settings.a", "expected an object"),
            (
                #"{"a": {"type": "string", "description": "d", "choices": ["x"], "or_keys_of": "b"}}"#, "$.settings.a",
                "not a table setting beside it"
            ),
            (#"{"a": {"type": "string", "description": "d", "or_keys_of": "b"}}"#, "$.settings.a.or_keys_of", "needs"),
        ])
    func badSpecs(_ example: (String, String, String)) {
        let message = failure(example.0)
        #expect(message.contains("at \(example.1):"), "\(message)")
        #expect(message.contains(example.2), "\(message)")
    }

    @Test("every first-party manifest carries a schema with a description and a default for each top-level key")
    func firstPartyManifestsCarrySchemas() throws {
        for name in ["silent-engine", "soundscape", "supervisor"] {
            let m = try ShippedManifest.manifest(name)
            let schema = try #require(m.settingsSchema, "\(name)")
            for (key, setting) in schema.settings {
                #expect(!setting.description.isEmpty, "\(name).\(key)")
                #expect(setting.defaultValue != nil, "\(name).\(key)")
            }
        }
    }
}
