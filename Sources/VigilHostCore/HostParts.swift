import Synchronization
package import VigilCore

/// The hooks and settings of a host's optional parts, in its ``VigilHost/Options``: what `Vigil`
/// adds to the host core (the announcer's `[announce]` table and its crash recovery, logind's
/// system bus), each under a key of its own. The host core runs the hooks and reads no value.
package struct HostParts: Sendable {
    /// Read from the host's `vigil.toml` once it loaded, before the host is made (`[announce]`).
    package var readConfiguration: [@Sendable (HostConfiguration, inout VigilHost.Options) throws(VigilError) -> Void] =
        []
    /// The `vigil.toml` tables those hooks read, which only a restart applies: a reload that
    /// changes one is refused (`announce`).
    package var restartOnlyTables: [String] = []
    /// Run by every `keepAlive()`, before the plugins start (the announcer restores what a killed
    /// process left lowered).
    package var beforeStart: [@Sendable (VigilHost) async -> Void] = []
    /// The parts' settings by key.
    private var values: [String: any Sendable] = [:]

    package init() {}

    /// The setting under `key`, if set.
    package subscript<Value: Sendable>(_ key: String, as _: Value.Type) -> Value? {
        get { values[key] as? Value }
        set { values[key] = newValue }
    }
}

/// The parts a host made (as `Vigil`'s announcer), each once, on first use.
package final class MadeParts: Sendable {
    private let parts = Mutex<[String: any Sendable]>([:])

    package init() {}

    /// The part under `key`, made by `make` the first time.
    package func part<Part: Sendable>(_ key: String, make: () -> Part) -> Part {
        parts.withLock { parts in
            if let made = parts[key] as? Part { return made }
            let made = make()
            parts[key] = made
            return made
        }
    }
}
