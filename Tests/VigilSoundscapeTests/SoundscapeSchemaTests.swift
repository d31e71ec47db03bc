import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSoundscape

@Suite("soundscape: code and signed settings schema agree")
struct SoundscapeSchemaTests {
    let agreement: SchemaAgreement

    init() throws {
        agreement = SchemaAgreement(
            plugin: "soundscape", schema: try ShippedManifest.schema("soundscape"),
            companions: SchemaAgreement.playbackCompanions, read: { try SoundscapeSettings($0) })
    }

    @Test("the code reads exactly the schema's keys, the user files' table too, with the schema's defaults")
    func keysAndDefaults() throws { try agreement.expectSameKeysAndDefaults() }

    @Test("the code and the schema accept and refuse the same values of every key")
    func sameVerdicts() { agreement.expectSameVerdicts(minimumProbes: 50) }
}
