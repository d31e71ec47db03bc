internal import CVigilPluginABI

/// What the host hands a ``NativeKeepAlive`` instance.
public struct NativePluginContext: Sendable {
    /// The plugin's name, as in its manifest.
    public let pluginName: String
    /// The host application's name.
    public let hostName: String
    /// A directory the plugin may keep state in (create it 0700 on first use).
    public let stateDirectory: String
    /// The manifest's settings overlaid by `vigil.toml`: strings as they are, numbers and booleans
    /// as text, arrays and tables as JSON.
    public let settings: [String: String]
    /// Reports changes after `start()` returned.
    public let events: NativePluginEvents

    /// Writes a line to the host's log.
    public func log(_ level: NativePlugin.LogLevel, _ message: String) {
        NativePlugin.log(level, message)
    }
}

/// The host's event callbacks; callable from any thread until `stop()` returns.
public struct NativePluginEvents: @unchecked Sendable {
    // The host keeps the table valid from create until destroy (see vigil_plugin.h).
    let table: UnsafePointer<vigil_keepalive_events>?

    /// What the plugin keeps alive was lost; it is trying to get it back.
    public func interrupted(reason: String) {
        guard let table, let call = table.pointee.interrupted else { return }
        reason.withCString { call(table.pointee.host_data, $0) }
    }

    /// Fully working again.
    public func resumed() {
        guard let table, let call = table.pointee.resumed else { return }
        call(table.pointee.host_data)
    }

    /// Gave up; stays stopped until started again.
    public func resumeFailed(reason: String) {
        guard let table, let call = table.pointee.resume_failed else { return }
        reason.withCString { call(table.pointee.host_data, $0) }
    }

    /// What `details()` reports changed.
    public func detailsChanged() {
        guard let table, let call = table.pointee.details_changed else { return }
        call(table.pointee.host_data)
    }
}
