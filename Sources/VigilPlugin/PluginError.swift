/// An error a plugin reports to the host: what went wrong and how to fix it.
public struct PluginError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure, stable for scripts and tests.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Storage: String, Hashable, Sendable {
            case invalidSetting = "invalid-setting"
            case unknownEntry = "unknown-entry"
            case startFailed = "start-failed"
        }
        private let storage: Storage

        /// A setting has the wrong type or an out-of-range value.
        public static let invalidSetting = Code(storage: .invalidSetting)
        /// No implementation is registered for a manifest's `entry`.
        public static let unknownEntry = Code(storage: .unknownEntry)
        /// The plugin could not start.
        public static let startFailed = Code(storage: .startFailed)

        public var description: String { storage.rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// The full message: the cause and the remedy.
    public let message: String

    /// Creates an error with a message that states the cause and the remedy.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// A setting is wrong; the message names the plugin, the key and where to fix it.
    public static func invalidSetting(plugin: String, key: String, reason: String) -> PluginError {
        PluginError(
            code: .invalidSetting,
            message: "[\(plugin)] setting `\(key)`: \(reason) — fix it in the [\(plugin)] table of vigil.toml")
    }

    /// A manifest names an `entry` that this build of Vigil does not provide.
    public static func unknownEntry(plugin: String, entry: String, known: [String]) -> PluginError {
        PluginError(
            code: .unknownEntry,
            message:
                "[\(plugin)] its manifest's entry \"\(entry)\" is not a plugin implementation this host provides "
                + "(known: \(known.sorted().joined(separator: ", "))) — register it with the host or update Vigil")
    }

    /// The plugin could not start; `reason` says why and what to do.
    public static func startFailed(plugin: String, reason: String) -> PluginError {
        PluginError(code: .startFailed, message: "[\(plugin)] could not start: \(reason)")
    }
}
