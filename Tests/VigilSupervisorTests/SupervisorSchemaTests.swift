import Testing
import VigilPlugin
import VigilSupervisorSettings
import VigilTestSupport

@Suite("supervisor: code and signed settings schema agree")
struct SupervisorSchemaTests {
    let agreement: SchemaAgreement

    init() throws {
        agreement = SchemaAgreement(
            plugin: "supervisor", schema: try ShippedManifest.schema("supervisor"),
            base: ["workers": .array([.table(["name": .string("signer"), "command": .string("/bin/true")])])],
            companions: [
                "backoff_initial_ms": ["backoff_max_ms": .integer(86_400_000)],
                "backoff_max_ms": ["backoff_initial_ms": .integer(0)],
            ],
            samples: ["workers[].working_directory": .string("/"), "workers[].env.*": .string("value")],
            read: { try SupervisorSettings($0) })
    }

    @Test("the code reads exactly the schema's keys, each worker's too, with the schema's defaults")
    func keysAndDefaults() throws {
        #expect(agreement.schemaKeys.contains("workers[].args"))
        try agreement.expectSameKeysAndDefaults()
    }

    @Test("the code and the schema accept and refuse the same values of every key")
    func sameVerdicts() { agreement.expectSameVerdicts(minimumProbes: 60) }
}
