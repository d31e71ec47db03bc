import Synchronization

/// A plugin's settings: manifest defaults overlaid by the plugin's table in `vigil.toml`.
///
/// The one reader of settings tables: the typed accessors (with range checks) throw a
/// ``PluginError`` naming the plugin, the key (with its path inside nested tables, see
/// ``nested(_:at:)``), what was expected and what was found, so a plugin validates its settings
/// in one place (its ``PluginImplementation``'s `make`) and a typo in `vigil.toml` surfaces as a
/// clear `failed` status.
public struct PluginSettings: Sendable, Hashable {
    /// The plugin these settings belong to, for error messages.
    public let pluginName: String
    /// The merged values.
    public let values: [String: SettingValue]
    /// The path of this table inside the plugin's settings (`workers[0]`), empty at the top.
    public let path: String

    /// Creates settings for `pluginName`.
    public init(pluginName: String, values: [String: SettingValue]) {
        self.init(pluginName: pluginName, values: values, path: "")
    }

    private init(pluginName: String, values: [String: SettingValue], path: String) {
        self.pluginName = pluginName
        self.values = values
        self.path = path
    }

    /// The table `values`, found at `path` (`workers[0]`) in these settings, read with the same
    /// accessors; its errors name keys with that path (`workers[0].command`).
    public func nested(_ values: [String: SettingValue], at path: String) -> PluginSettings {
        PluginSettings(pluginName: pluginName, values: values, path: qualified(path))
    }

    /// `key` with this table's path in front.
    public func qualified(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// A ``PluginError/Code/invalidSetting`` error for `key` (qualified with this table's path).
    public func invalid(_ key: String, _ reason: String) -> PluginError {
        PluginError.invalidSetting(plugin: pluginName, key: qualified(key), reason: reason)
    }

    /// Throws for the first key (in name order) that is not one of `known`, calling it an
    /// unknown `kind` (`setting`, `worker key`).
    public func refuseUnknownKeys(known: some Collection<String>, kind: String = "setting") throws {
        for key in values.keys.sorted() where !known.contains(key) {
            throw invalid(key, "unknown \(kind); known: \(known.sorted().joined(separator: ", "))")
        }
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
    public subscript(key: String) -> SettingValue? { lookup(key) }

    /// Collects the keys a plugin's code reads (qualified, `workers[0].name`) while it is set:
    /// how a test proves that each first-party plugin's code reads exactly the keys its
    /// manifest's schema declares.
    package final class ReadRecorder: Sendable {
        private let keys = Mutex<Set<String>>([])
        /// Creates an empty recorder.
        package init() {}
        /// The keys read so far.
        package var read: Set<String> { keys.withLock { $0 } }
        func record(_ key: String) { keys.withLock { _ = $0.insert(key) } }
    }

    /// The recorder of the current task, if any.
    @TaskLocal package static var readRecorder: ReadRecorder?

    /// Every accessor's one way to a value: records the read when a recorder is set.
    private func lookup(_ key: String) -> SettingValue? {
        Self.readRecorder?.record(qualified(key))
        return values[key]
    }

    /// A string setting, or `defaultValue` when absent.
    public func string(_ key: String, default defaultValue: String) throws -> String {
        try string(key) ?? defaultValue
    }

    /// A string setting, or `nil` when absent.
    public func string(_ key: String) throws -> String? {
        guard let value = lookup(key) else { return nil }
        guard case .string(let s) = value else { throw mismatch(key, expected: "a string", found: value) }
        return s
    }

    /// A string setting that is not empty and holds no NUL, or `nil` when absent.
    public func nonEmptyString(_ key: String) throws -> String? {
        guard let value = lookup(key) else { return nil }
        guard case .string(let s) = value, !s.isEmpty, !s.contains("\0") else {
            throw mismatch(key, expected: "a non-empty string", found: value)
        }
        return s
    }

    /// An integer setting, or `nil` when absent.
    public func integer(_ key: String) throws -> Int? {
        guard let value = lookup(key) else { return nil }
        guard case .integer(let i) = value else { throw mismatch(key, expected: "an integer", found: value) }
        return i
    }

    /// An integer setting within `range`, or `defaultValue` when absent.
    public func integer(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        try checked(key, try integer(key) ?? defaultValue, in: range)
    }

    /// An integer setting within `range`, or `nil` when absent.
    public func integer(_ key: String, in range: ClosedRange<Int>) throws -> Int? {
        try integer(key).map { value throws in try checked(key, value, in: range) }
    }

    /// A number setting (an integer is accepted too), or `nil` when absent.
    public func number(_ key: String) throws -> Double? {
        switch lookup(key) {
        case nil: return nil
        case .double(let d): return d
        case .integer(let i): return Double(i)
        case let other?: throw mismatch(key, expected: "a number", found: other)
        }
    }

    /// A number setting within `range`, or `defaultValue` when absent.
    public func number(_ key: String, default defaultValue: Double, in range: ClosedRange<Double>) throws -> Double {
        try checked(key, try number(key) ?? defaultValue, in: range)
    }

    /// A number setting within `range`, or `nil` when absent.
    public func number(_ key: String, in range: ClosedRange<Double>) throws -> Double? {
        try number(key).map { value throws in try checked(key, value, in: range) }
    }

    /// `value` when `range` holds it; else the error naming `key` and the range.
    private func checked<T: Comparable>(_ key: String, _ value: T, in range: ClosedRange<T>) throws -> T {
        guard range.contains(value) else {
            throw invalid(key, "\(value) is out of range; use a value from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A boolean setting, or `defaultValue` when absent.
    public func bool(_ key: String, default defaultValue: Bool) throws -> Bool {
        guard let value = lookup(key) else { return defaultValue }
        guard case .bool(let b) = value else { throw mismatch(key, expected: "true or false", found: value) }
        return b
    }

    /// A string setting that must be one of `choices`, or `defaultValue` when absent.
    public func choice(_ key: String, default defaultValue: String, from choices: [String]) throws -> String {
        let value = try string(key, default: defaultValue)
        guard choices.contains(value) else {
            throw invalid(key, "\"\(value)\" is not one of \(choices.map { "\"\($0)\"" }.joined(separator: ", "))")
        }
        return value
    }

    /// An array setting, or `nil` when absent.
    public func array(_ key: String) throws -> [SettingValue]? {
        guard let value = lookup(key) else { return nil }
        guard case .array(let a) = value else { throw mismatch(key, expected: "an array", found: value) }
        return a
    }

    /// A table setting, or `nil` when absent.
    public func table(_ key: String) throws -> [String: SettingValue]? {
        guard let value = lookup(key) else { return nil }
        guard case .table(let t) = value else { throw mismatch(key, expected: "a table", found: value) }
        return t
    }

    private func mismatch(_ key: String, expected: String, found: SettingValue) -> PluginError {
        invalid(key, "expected \(expected), found \(found.kindName) \(found)")
    }
}
