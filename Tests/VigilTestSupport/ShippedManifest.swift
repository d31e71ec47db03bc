import Foundation
import VigilPlugin

/// The first-party manifests this repository ships (`manifests/NAME/plugin.json`), for tests that
/// check the code agrees with them.
public enum ShippedManifest {
    /// The shipped `plugin.json` of `name`.
    public static func url(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../manifests/\(name)/plugin.json").standardized
    }

    /// The `settings` object of `name`'s shipped manifest as setting values (an integral JSON
    /// number is an integer, any other a double, as the manifest parser reads them).
    public static func settings(_ name: String) throws -> [String: SettingValue] {
        struct Manifest: Decodable { let settings: [String: Value] }
        struct Value: Decodable {
            let value: SettingValue
            init(from decoder: any Decoder) throws {
                let single = try decoder.singleValueContainer()
                if let b = try? single.decode(Bool.self) {
                    value = .bool(b)
                } else if let i = try? single.decode(Int.self) {
                    value = .integer(i)
                } else if let d = try? single.decode(Double.self) {
                    value = .double(d)
                } else if let s = try? single.decode(String.self) {
                    value = .string(s)
                } else if let a = try? single.decode([Value].self) {
                    value = .array(a.map(\.value))
                } else {
                    value = .table(try single.decode([String: Value].self).mapValues(\.value))
                }
            }
        }
        return try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: url(name))).settings.mapValues(\.value)
    }
}
