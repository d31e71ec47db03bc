/// A plugin's settings: manifest defaults overlaid by the plugin's table in `vigil.toml`.
///
/// The typed accessors throw a ``PluginError`` naming the plugin, the key, what was expected and
/// what was found, so a plugin validates its settings in one place (its ``PluginImplementation``'s
/// `make`) and a typo in `vigil.toml` surfaces as a clear `failed` status.
public struct PluginSettings: Sendable, Hashable {
    /// The plugin these settings belong to, for error messages.
    public let pluginName: String
    /// The merged values.
    public let values: [String: SettingValue]

    /// Creates settings for `pluginName`.
    public init(pluginName: String, values: [String: SettingValue]) {
        self.pluginName = pluginName
        self.values = values
    }

    /// Merges `overrides` over `defaults`; nested tables merge key by key.
    public init(pluginName: String, defaults: [String: SettingValue], overrides: [String: SettingValue]) {
        self.init(pluginName: pluginName, values: Self.merge(defaults, overrides))
    }

    private static func merge(
        _ base: [String: SettingValue], _ over: [String: SettingValue]
    ) -> [String: SettingValue] {
        var out = base
        for (key, value) in over {
            if case .table(let b) = out[key], case .table(let o) = value {
                out[key] = .table(merge(b, o))
            } else {
                out[key] = value
            }
        }
        return out
    }

    /// The raw value for `key`, if present.
    public subscript(key: String) -> SettingValue? { values[key] }

    /// A string setting, or `defaultValue` when absent.
    public func string(_ key: String, default defaultValue: String) throws -> String {
        try string(key) ?? defaultValue
    }

    /// A string setting, or `nil` when absent.
    public func string(_ key: String) throws -> String? {
        guard let value = values[key] else { return nil }
        guard case .string(let s) = value else { throw mismatch(key, expected: "a string", found: value) }
        return s
    }

    /// An integer setting, or `nil` when absent.
    public func integer(_ key: String) throws -> Int? {
        guard let value = values[key] else { return nil }
        guard case .integer(let i) = value else { throw mismatch(key, expected: "an integer", found: value) }
        return i
    }

    /// An integer setting within `range`, or `defaultValue` when absent.
    public func integer(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        let value = try integer(key) ?? defaultValue
        guard range.contains(value) else {
            throw PluginError.invalidSetting(
                plugin: pluginName, key: key,
                reason: "\(value) is out of range; use a value from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A number setting (an integer is accepted too), or `nil` when absent.
    public func number(_ key: String) throws -> Double? {
        switch values[key] {
        case nil: return nil
        case .double(let d): return d
        case .integer(let i): return Double(i)
        case let other?: throw mismatch(key, expected: "a number", found: other)
        }
    }

    /// A number setting within `range`, or `defaultValue` when absent.
    public func number(_ key: String, default defaultValue: Double, in range: ClosedRange<Double>) throws -> Double {
        let value = try number(key) ?? defaultValue
        guard range.contains(value) else {
            throw PluginError.invalidSetting(
                plugin: pluginName, key: key,
                reason: "\(value) is out of range; use a value from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A boolean setting, or `defaultValue` when absent.
    public func bool(_ key: String, default defaultValue: Bool) throws -> Bool {
        guard let value = values[key] else { return defaultValue }
        guard case .bool(let b) = value else { throw mismatch(key, expected: "true or false", found: value) }
        return b
    }

    /// A string setting that must be one of `choices`, or `defaultValue` when absent.
    public func choice(_ key: String, default defaultValue: String, from choices: [String]) throws -> String {
        let value = try string(key, default: defaultValue)
        guard choices.contains(value) else {
            throw PluginError.invalidSetting(
                plugin: pluginName, key: key,
                reason: "\"\(value)\" is not one of \(choices.map { "\"\($0)\"" }.joined(separator: ", "))")
        }
        return value
    }

    /// An array setting, or `nil` when absent.
    public func array(_ key: String) throws -> [SettingValue]? {
        guard let value = values[key] else { return nil }
        guard case .array(let a) = value else { throw mismatch(key, expected: "an array", found: value) }
        return a
    }

    /// A table setting, or `nil` when absent.
    public func table(_ key: String) throws -> [String: SettingValue]? {
        guard let value = values[key] else { return nil }
        guard case .table(let t) = value else { throw mismatch(key, expected: "a table", found: value) }
        return t
    }

    private func mismatch(_ key: String, expected: String, found: SettingValue) -> PluginError {
        .invalidSetting(
            plugin: pluginName, key: key,
            reason: "expected \(expected), found \(found.kindName) \(found)")
    }
}
