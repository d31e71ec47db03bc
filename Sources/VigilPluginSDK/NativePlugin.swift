internal import CVigilPluginABI
internal import CVigilPluginSDK
import Synchronization

/// Registration and logging for a Swift plugin.
public enum NativePlugin {
    /// Log levels of the host's log.
    public enum LogLevel: Int32, Sendable {
        case debug = 0, info = 1, warning = 2, error = 3
    }

    fileprivate struct Registration {
        var id: String
        var make: (NativePluginContext) throws -> any NativeKeepAlive
    }

    fileprivate struct State: @unchecked Sendable {
        var registration: Registration?
        // Valid between the host's init and deinit.
        var host: UnsafePointer<vigil_host>?
    }

    fileprivate static let state = Mutex(State())

    /// Registers the plugin; call it from `vigil_swift_plugin`. `id` must be the manifest's name.
    ///
    /// This runs only once the host has mapped the library. The host checks the plugin id before
    /// mapping from the library's Vigil note, which the plugin's module emits next to this call:
    ///
    ///     @section(".note.vigil") @used
    ///     let vigilPluginNote: (UInt32, …) = (0x6, …)
    ///
    /// `vigil plugin verify` prints the exact declaration for a library without one
    /// (docs/native-plugins.md).
    public static func export<Plugin: NativeKeepAlive>(id: String, _ type: Plugin.Type) {
        state.withLock { $0.registration = Registration(id: id, make: { try Plugin(context: $0) }) }
    }

    /// Writes `message` to the host's log (dropped outside init…deinit).
    public static func log(_ level: LogLevel, _ message: String) {
        guard let host = state.withLock({ $0.host }), let log = host.pointee.log else { return }
        message.withCString { log(host, level.rawValue, $0) }
    }
}

/// One instance, as the opaque pointer the host holds.
private final class InstanceBox {
    let plugin: any NativeKeepAlive
    init(_ plugin: any NativeKeepAlive) { self.plugin = plugin }
}

private func write(_ text: String, to buffer: UnsafeMutablePointer<CChar>?, size: Int) {
    guard let buffer, size > 0 else { return }
    let bytes = Array(text.utf8.prefix(size - 1))
    for (i, byte) in bytes.enumerated() { buffer[i] = CChar(bitPattern: byte) }
    buffer[bytes.count] = 0
}

@_cdecl("vigil_sdk_init")
func vigilSDKInit(_ host: UnsafePointer<vigil_host>?) -> Bool {
    if NativePlugin.state.withLock({ $0.registration == nil }) { vigil_swift_plugin() }
    guard let id = NativePlugin.state.withLock({ $0.registration?.id }), vigil_sdk_set_plugin_id(id) else {
        return false
    }
    NativePlugin.state.withLock { $0.host = host }
    return true
}

@_cdecl("vigil_sdk_deinit")
func vigilSDKDeinit() {
    NativePlugin.state.withLock { $0.host = nil }
}

@_cdecl("vigil_sdk_create")
func vigilSDKCreate(
    _ config: UnsafePointer<vigil_keepalive_config>?, _ events: UnsafePointer<vigil_keepalive_events>?,
    _ errorBuffer: UnsafeMutablePointer<CChar>?, _ errorSize: Int
) -> UnsafeMutableRawPointer? {
    guard let config, let make = NativePlugin.state.withLock({ $0.registration?.make }) else {
        write(
            "the plugin registered nothing (call NativePlugin.export in vigil_swift_plugin)", to: errorBuffer,
            size: errorSize)
        return nil
    }
    func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
    var settings: [String: String] = [:]
    let c = config.pointee
    for i in 0..<c.setting_count {
        guard let setting = c.settings?[i] else { continue }
        settings[text(setting.key)] = text(setting.value)
    }
    let context = NativePluginContext(
        pluginName: text(c.plugin_name), hostName: text(c.host_name), stateDirectory: text(c.state_directory),
        settings: settings, events: NativePluginEvents(table: events))
    do {
        return Unmanaged.passRetained(InstanceBox(try make(context))).toOpaque()
    } catch {
        write("\(error)", to: errorBuffer, size: errorSize)
        return nil
    }
}

@_cdecl("vigil_sdk_start")
func vigilSDKStart(_ instance: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<CChar>?, _ errorSize: Int)
    -> Bool
{
    guard let instance else { return false }
    do {
        try Unmanaged<InstanceBox>.fromOpaque(instance).takeUnretainedValue().plugin.start()
        return true
    } catch let failure {
        write("\(failure)", to: error, size: errorSize)
        return false
    }
}

@_cdecl("vigil_sdk_stop")
func vigilSDKStop(_ instance: UnsafeMutableRawPointer?) {
    guard let instance else { return }
    Unmanaged<InstanceBox>.fromOpaque(instance).takeUnretainedValue().plugin.stop()
}

@_cdecl("vigil_sdk_details")
func vigilSDKDetails(
    _ instance: UnsafeMutableRawPointer?, _ sink: vigil_detail_sink?, _ context: UnsafeMutableRawPointer?
) {
    guard let instance, let sink else { return }
    for (key, value) in Unmanaged<InstanceBox>.fromOpaque(instance).takeUnretainedValue().plugin.details() {
        key.withCString { k in value.withCString { v in sink(context, k, v) } }
    }
}

@_cdecl("vigil_sdk_destroy")
func vigilSDKDestroy(_ instance: UnsafeMutableRawPointer?) {
    guard let instance else { return }
    Unmanaged<InstanceBox>.fromOpaque(instance).release()
}
