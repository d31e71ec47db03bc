import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSoundscape

@Suite("soundscape: code and signed settings schema agree")
struct SoundscapeSchemaTests {
    static func agreement() throws -> SchemaAgreement {
        SchemaAgreement(
            plugin: "soundscape", schema: try ShippedManifest.schema("soundscape"),
            companions: [
                "retry_initial_ms": ["retry_max_ms": .integer(600_000)],
                "retry_max_ms": ["retry_initial_ms": .integer(10)],
            ],
            read: { try SoundscapeSettings($0) })
    }

    @Test("the code reads exactly the schema's keys, with the schema's defaults")
    func keysAndDefaults() throws {
        let agreement = try Self.agreement()
        #expect(try agreement.keysRead() == agreement.schemaKeys)
        let compared = try agreement.defaultsCompared()
        #expect(compared.withSchemaDefaults == compared.withCodeDefaults)
    }

    @Test("the code and the schema accept and refuse the same values of every key")
    func sameVerdicts() throws {
        let (disagreements, probes) = try Self.agreement().disagreements()
        #expect(probes > 50)
        #expect(disagreements.isEmpty, "\(disagreements)")
    }
}
