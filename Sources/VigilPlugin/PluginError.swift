@_exported public import VigilBase

/// An error a plugin reports to the host: what went wrong and how to fix it.
public typealias PluginError = CodedError<PluginErrorCode>

/// The kind of a ``PluginError``, stable for scripts and tests.
public enum PluginErrorCode: String, ErrorCode {
    /// A setting has the wrong type or an out-of-range value.
    case invalidSetting = "invalid-setting"
    /// No implementation is registered for a manifest's `entry`.
    case unknownEntry = "unknown-entry"
    /// The plugin could not start.
    case startFailed = "start-failed"
    /// The plugin lost what it keeps alive and could not get it back (it gave up).
    case resumeFailed = "resume-failed"
}

extension PluginError {
    /// A setting is wrong; the message names the key and where to fix it.
    public static func invalidSetting(plugin: String, key: String, reason: String) -> PluginError {
        PluginError(
            code: .invalidSetting, plugin: plugin,
            message: "setting `\(key)`: \(reason) — fix it in the [\(plugin)] table of vigil.toml")
    }

    /// A manifest names an `entry` that this build of Vigil does not provide.
    public static func unknownEntry(plugin: String, entry: String, known: [String]) -> PluginError {
        PluginError(
            code: .unknownEntry, plugin: plugin,
            message: "its manifest's entry \"\(entry)\" is not a plugin implementation this host provides "
                + "(known: \(known.sorted().joined(separator: ", "))) — register it with the host or update Vigil")
    }

    /// The plugin could not start; `reason` says why and what to do.
    public static func startFailed(plugin: String, reason: String) -> PluginError {
        PluginError(code: .startFailed, plugin: plugin, message: "could not start: \(reason)")
    }
}
