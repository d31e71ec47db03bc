import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSilentEngine

@Suite("silent-engine: code and signed settings schema agree")
struct SilentEngineSchemaTests {
    let agreement: SchemaAgreement

    init() throws {
        agreement = SchemaAgreement(
            plugin: "silent-engine", schema: try ShippedManifest.schema("silent-engine"),
            companions: SchemaAgreement.playbackCompanions, read: { try SilentEngineSettings($0) })
    }

    @Test("the code reads exactly the schema's keys, with the schema's defaults")
    func keysAndDefaults() throws { try agreement.expectSameKeysAndDefaults() }

    @Test("the code and the schema accept and refuse the same values of every key")
    func sameVerdicts() { agreement.expectSameVerdicts(minimumProbes: 50) }
}
