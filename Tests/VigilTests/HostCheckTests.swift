import Testing
import VigilHostCheck

@testable import Vigil
@testable import VigilHostCore

/// Vigil's registry and the checker's list of built-in plugins (VigilHostCheckTests tests the
/// checker itself).
@Suite("HostCheck and the registry")
struct HostCheckRegistryTests {
    @Test("the checker's built-in entries (what the plugins' tool knows) are the registry's built-in implementations")
    func builtinEntriesAreTheRegistrys() {
        #expect(PluginRegistry.builtin.entries == BuiltinEntries.all.sorted())
    }
}
