import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSilentEngine

@Suite("silent-engine: code and signed settings schema agree")
struct SilentEngineSchemaTests {
    static func agreement() throws -> SchemaAgreement {
        SchemaAgreement(
            plugin: "silent-engine", schema: try ShippedManifest.schema("silent-engine"),
            companions: [
                "retry_initial_ms": ["retry_max_ms": .integer(600_000)],
                "retry_max_ms": ["retry_initial_ms": .integer(10)],
            ],
            read: { try SilentEngineSettings($0) })
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
