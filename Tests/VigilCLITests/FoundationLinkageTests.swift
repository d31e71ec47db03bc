import Testing
import VigilTestSupport

/// The `vigil` executable uses FoundationEssentials only: nothing of full Foundation,
/// FoundationInternationalization (ICU) or CoreFoundation, whose code, data and start-up
/// constructor would otherwise be part of every `vigil up` (issue 16, memory).
@Suite("vigil without full Foundation")
struct FoundationLinkageTests {
    @Test(
        "vigil needs no symbol of libFoundation or libFoundationInternationalization, but does of FoundationEssentials")
    func needsNoFullFoundationSymbol() async throws {
        let cli = VigilExecutable.path
        let needed = try await ELFLinkage.dynamicSymbols(cli, defined: false)
        // The check sees what vigil does use: FoundationEssentials (JSON, Data, Date) must show up.
        let essentials = try #require(
            try await ELFLinkage.resolvedLibrary(cli, prefix: "libFoundationEssentials.so"),
            "vigil does not load libFoundationEssentials.so: is this a dynamically linked build?")
        let fromEssentials = needed.intersection(try await ELFLinkage.dynamicSymbols(essentials, defined: true))
        #expect(
            !fromEssentials.isEmpty, "no symbol of \(essentials) found among vigil's \(needed.count) undefined ones")
        for library in ["libFoundation.so", "libFoundationInternationalization.so"] {
            // TOMLKit imports Foundation for Date and Calendar (FoundationEssentials' types), so the
            // library may still be named; what matters is that nothing in it is called.
            guard let path = try await ELFLinkage.resolvedLibrary(cli, prefix: library) else { continue }
            let used = needed.intersection(try await ELFLinkage.dynamicSymbols(path, defined: true))
            #expect(used.isEmpty, "vigil calls \(used.count) symbols of \(library): \(used.sorted().prefix(10))")
        }
    }
}
