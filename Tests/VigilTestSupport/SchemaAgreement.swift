import Testing
import VigilPlugin

/// Proves that a plugin's settings code and its manifest's settings schema agree:
/// - the keys the code reads (recorded by `PluginSettings.readRecorder`) are exactly the schema's;
/// - the code's own defaults are the schema's (reading with and without the schema's defaults
///   gives the same settings);
/// - for every key, the code and ``SettingsSchema/validate(_:)`` accept and refuse the same probe
///   values: the default, the bounds, each choice, a value of another type, one past each bound,
///   a string that is no choice, an empty string where one is required, a missing required field.
public struct SchemaAgreement {
    /// The plugin's name.
    public var plugin: String
    /// The shipped schema.
    public var schema: SettingsSchema
    /// Values every probe starts from (a worker for an array of tables).
    public var base: [String: SettingValue]
    /// Keys (as in ``SettingsSchema/entries``, `workers[].name`) → other keys to set with every
    /// probe of it, for rules between keys (a cap at least its start).
    public var companions: [String: [String: SettingValue]]
    /// Keys → a valid value to probe with, where the schema gives no default.
    public var samples: [String: SettingValue]
    /// The plugin's reader: throws for settings it refuses; returns what it read.
    public var read: (PluginSettings) throws -> Any

    /// Creates the comparison.
    public init(
        plugin: String, schema: SettingsSchema, base: [String: SettingValue] = [:],
        companions: [String: [String: SettingValue]] = [:], samples: [String: SettingValue] = [:],
        read: @escaping (PluginSettings) throws -> Any
    ) {
        self.plugin = plugin
        self.schema = schema
        self.base = base
        self.companions = companions
        self.samples = samples
        self.read = read
    }

    /// The rules between the playback keys of the audio plugins (`retry_max_ms` at least
    /// `retry_initial_ms`), as ``companions``.
    public static let playbackCompanions: [String: [String: SettingValue]] = [
        "retry_initial_ms": ["retry_max_ms": .integer(600_000)],
        "retry_max_ms": ["retry_initial_ms": .integer(10)],
    ]

    /// Expects the keys read to be the schema's and the code's defaults to be the schema's.
    public func expectSameKeysAndDefaults(sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try keysRead() == schemaKeys, sourceLocation: sourceLocation)
        let compared = try defaultsCompared()
        #expect(compared.withSchemaDefaults == compared.withCodeDefaults, sourceLocation: sourceLocation)
    }

    /// Expects no disagreement over at least `minimumProbes` probes.
    public func expectSameVerdicts(minimumProbes: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let (disagreements, probes) = disagreements()
        #expect(probes >= minimumProbes, sourceLocation: sourceLocation)
        #expect(disagreements.isEmpty, "\(disagreements)", sourceLocation: sourceLocation)
    }

    /// The keys the reader reads from `base` over the schema's defaults, array indices as `[]`.
    public func keysRead() throws -> Set<String> {
        let recorder = PluginSettings.ReadRecorder()
        try PluginSettings.$readRecorder.withValue(recorder) {
            _ = try read(PluginSettings(pluginName: plugin, defaults: schema.defaults, overrides: base))
        }
        return Set(recorder.read.map(Self.withoutIndices))
    }

    /// The schema's keys, as ``keysRead()`` spells them.
    public var schemaKeys: Set<String> { Set(schema.entries.map(\.key)) }

    /// What the reader makes of `base` with the schema's defaults and with none (its own).
    public func defaultsCompared() throws -> (withSchemaDefaults: String, withCodeDefaults: String) {
        let shipped = try read(PluginSettings(pluginName: plugin, defaults: schema.defaults, overrides: base))
        let own = try read(PluginSettings(pluginName: plugin, values: base))
        return (String(describing: shipped), String(describing: own))
    }

    /// One probe the two disagree on.
    public struct Disagreement: CustomStringConvertible, Sendable {
        public var key: String
        public var value: String
        public var schemaAccepts: Bool
        public var codeAccepts: Bool
        public var description: String {
            "\(key) = \(value): the schema \(schemaAccepts ? "accepts" : "refuses") it, the code "
                + (codeAccepts ? "accepts" : "refuses") + " it"
        }
    }

    /// Every probe the schema and the code disagree on, and how many probes ran.
    public func disagreements() -> (disagreements: [Disagreement], probes: Int) {
        var out: [Disagreement] = []
        var count = 0
        func probe(_ key: String, _ table: [String: SettingValue], shown: String) {
            count += 1
            let schemaAccepts = schema.validate(table).isEmpty
            let codeAccepts =
                (try? read(PluginSettings(pluginName: plugin, defaults: schema.defaults, overrides: table)))
                != nil
            if schemaAccepts != codeAccepts {
                out.append(
                    Disagreement(key: key, value: shown, schemaAccepts: schemaAccepts, codeAccepts: codeAccepts))
            }
        }
        for entry in schema.entries {
            guard let setting = setting(at: entry.key) else { continue }
            for (value, shown) in probes(for: setting, key: entry.key) {
                guard let table = placing(value, at: entry.key) else { continue }
                probe(entry.key, table, shown: shown)
            }
            if setting.required, let table = placing(nil, at: entry.key) {
                probe(entry.key, table, shown: "(missing)")
            }
            // A choice named by a key of a table of the user's keys beside it (`soundscape = "mine"`
            // with `files.mine`): accepted by both when the schema says `or_keys_of` that table.
            guard setting.type == .string, !setting.choices.isEmpty, !entry.key.contains(".") else { continue }
            for (other, table) in schema.settings where table.values != nil {
                guard var probed = placing(.string("probe-name"), at: entry.key) else { continue }
                probed[other] = .table(["probe-name": samples[other + ".*"] ?? .string("/probe")])
                probe(entry.key, probed, shown: "\"probe-name\" (a key of \(other))")
            }
        }
        return (out, count)
    }

    /// `workers[0].name` → `workers[].name`.
    static func withoutIndices(_ key: String) -> String {
        var out = ""
        var skipping = false
        for c in key {
            if c == "[" {
                skipping = true
                out += "[]"
            } else if c == "]" {
                skipping = false
            } else if !skipping {
                out.append(c)
            }
        }
        return out
    }

    private func setting(at key: String) -> SettingsSchema.Setting? {
        let parts = key.split(separator: ".").map(String.init)
        var current = schema
        var found: SettingsSchema.Setting?
        for part in parts {
            let isArray = part.hasSuffix("[]")
            let name = isArray ? String(part.dropLast(2)) : part
            guard let setting = current.settings[name] else { return nil }
            found = setting
            if isArray {
                guard let fields = setting.items?.setting.fields else { return nil }
                current = fields
            } else if let fields = setting.fields {
                current = fields
            }
        }
        return found
    }

    /// `base` with `value` at `key` (inside the first element for `array[].field`); `nil` value
    /// removes the key.
    private func placing(_ value: SettingValue?, at key: String) -> [String: SettingValue]? {
        var table = base
        for (k, v) in companions[key] ?? [:] { table[k] = v }
        let parts = key.split(separator: ".").map(String.init)
        if parts.count == 1 {
            table[key] = value
            return table
        }
        guard parts.count == 2, parts[0].hasSuffix("[]") else { return nil }
        let array = String(parts[0].dropLast(2))
        guard case .array(var elements)? = table[array], case .table(var first)? = elements.first else { return nil }
        first[parts[1]] = value
        elements[0] = .table(first)
        table[array] = .array(elements)
        return table
    }

    private func probes(for setting: SettingsSchema.Setting, key: String) -> [(SettingValue, String)] {
        var out: [(SettingValue, String)] = []
        func add(_ value: SettingValue) { out.append((value, value.description)) }
        if let sample = samples[key] { add(sample) }
        if let value = setting.defaultValue { add(value) }
        // Another type: a boolean, or a string for a boolean.
        add(setting.type == .boolean ? .string("yes") : .bool(true))
        switch setting.type {
        case .integer, .number:
            let make: (Double) -> SettingValue = {
                setting.type == .integer ? .integer(Int($0)) : .double($0)
            }
            if let low = setting.minimum {
                add(make(setting.exclusiveMinimum ? low + 1 : low))
                add(make(setting.exclusiveMinimum ? low : low - 1))
            }
            if let high = setting.maximum {
                add(make(high))
                add(make(high + 1))
            }
            if setting.type == .number { add(.string("1")) }
        case .string:
            for choice in setting.choices { add(.string(choice)) }
            if !setting.choices.isEmpty { add(.string("no-such-choice")) }
            if setting.nonEmpty { add(.string("")) }
        case .array:
            add(.array([]))
            if let items = setting.items?.setting, items.type != .table {
                add(.array([items.type == .boolean ? .string("yes") : .bool(true)]))
                add(.array([.string("a")]))
            }
        case .table:
            if let values = setting.values?.setting {
                add(.table(["probe": values.type == .boolean ? .string("yes") : .bool(true)]))
                add(.table(["probe": samples[key + ".*"] ?? .string("/probe")]))
            }
        case .boolean:
            add(.bool(false))
        }
        return out
    }
}
