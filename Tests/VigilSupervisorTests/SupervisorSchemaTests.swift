import Testing
import VigilPlugin
import VigilSupervisorSettings
import VigilTestSupport

@Suite("supervisor: code and signed settings schema agree")
struct SupervisorSchemaTests {
    static func agreement() throws -> SchemaAgreement {
        SchemaAgreement(
            plugin: "supervisor", schema: try ShippedManifest.schema("supervisor"),
            base: ["workers": .array([.table(["name": .string("signer"), "command": .string("/bin/true")])])],
            companions: [
                "backoff_initial_ms": ["backoff_max_ms": .integer(86_400_000)],
                "backoff_max_ms": ["backoff_initial_ms": .integer(0)],
            ],
            samples: ["workers[].working_directory": .string("/"), "workers[].env.*": .string("value")],
            read: { try SupervisorSettings($0) })
    }

    @Test("the code reads exactly the schema's keys, the workers' too, with the schema's defaults")
    func keysAndDefaults() throws {
        let agreement = try Self.agreement()
        #expect(try agreement.keysRead() == agreement.schemaKeys)
        #expect(agreement.schemaKeys.contains("workers[].args"))
        let compared = try agreement.defaultsCompared()
        #expect(compared.withSchemaDefaults == compared.withCodeDefaults)
    }

    @Test("the code and the schema accept and refuse the same values of every key")
    func sameVerdicts() throws {
        let (disagreements, probes) = try Self.agreement().disagreements()
        #expect(probes > 60)
        #expect(disagreements.isEmpty, "\(disagreements)")
    }
}
