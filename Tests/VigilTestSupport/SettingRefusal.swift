import Testing
import VigilPlugin

/// The message of the ``PluginError`` that `body` throws for a refused setting of plugin `plugin`
/// (expected to be `invalid-setting`), `nil` when it throws nothing, or any other error's text.
public func settingRefusal(plugin: String = "p", _ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch let error as PluginError {
        #expect(error.code == .invalidSetting && error.plugin == plugin)
        return error.message
    } catch {
        return "\(error)"
    }
}
