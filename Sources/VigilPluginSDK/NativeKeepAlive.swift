/// A keep-alive plugin written in Swift and shipped as a shared library.
///
/// Conform a class, then register it from the one C entry point the SDK needs:
///
/// ```swift
/// import VigilPluginSDK
///
/// final class Heartbeat: NativeKeepAlive { … }
///
/// @_cdecl("vigil_swift_plugin")
/// public func vigilSwiftPlugin() {
///     NativePlugin.export(id: "heartbeat-example", Heartbeat.self)
/// }
/// ```
///
/// The SDK supplies the exported `vigil_plugin_entry` descriptor and the keep-alive table; the
/// host calls every method from one thread it owns, never concurrently.
public protocol NativeKeepAlive: AnyObject {
    /// Makes an instance; validate settings here. A thrown error's description is shown as the
    /// plugin's failure (say what is wrong and how to fix it).
    init(context: NativePluginContext) throws
    /// Starts keeping alive and returns once running.
    func start() throws
    /// Stops everything `start()` started and returns once released.
    func stop()
    /// Details for `vigil status`.
    func details() -> [String: String]
}
