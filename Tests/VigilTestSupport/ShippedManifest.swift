import Foundation
import VigilCore
import VigilPlugin

/// The first-party manifests this repository ships (`manifests/NAME/plugin.json`), for tests that
/// check the code agrees with them.
public enum ShippedManifest {
    /// The shipped `plugin.json` of `name`.
    public static func url(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../manifests/\(name)/plugin.json").standardized
    }

    /// `name`'s shipped manifest, decoded by the host's own decoder.
    public static func manifest(_ name: String) throws -> PluginManifest {
        try ManifestDecoder.decode(Array(Data(contentsOf: url(name))), plugin: name)
    }

    /// The default settings of `name`'s shipped manifest (its schema's defaults).
    public static func settings(_ name: String) throws -> [String: SettingValue] {
        try manifest(name).settings
    }

    /// The settings schema of `name`'s shipped manifest.
    public static func schema(_ name: String) throws -> SettingsSchema {
        guard let schema = try manifest(name).settingsSchema else {
            throw CoreError(
                code: .malformedManifest, plugin: name, message: "the shipped manifest has no settings schema")
        }
        return schema
    }
}
