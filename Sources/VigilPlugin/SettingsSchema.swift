/// What a plugin's settings table may hold: each key's type, range or choices, default and a
/// one-line description, from the `settings` object of its signed manifest
/// (`vigil.plugin-manifest/v2`). ``validate(_:)`` is the one settings validator: `vigil check`, the
/// build check, the trust review and the host's start all call it, through `HostPlan`.
public struct SettingsSchema: Sendable, Hashable {
    /// The value type of a setting, as `vigil.toml` spells it.
    public enum ValueType: String, Sendable, Hashable, CaseIterable {
        case string
        case integer
        /// A number: an integer or a float.
        case number
        case boolean
        case array
        case table
    }

    /// One setting: its type and constraints.
    public struct Setting: Sendable, Hashable {
        /// The value's type.
        public var type: ValueType
        /// A one-line description (empty for the fields of an array's items).
        public var description: String
        /// The default value (`nil` for a field of a table inside an array, or a key with no default).
        public var defaultValue: SettingValue?
        /// The smallest value allowed (integer and number).
        public var minimum: Double?
        /// The largest value allowed (integer and number).
        public var maximum: Double?
        /// True when the value must be strictly above ``minimum``.
        public var exclusiveMinimum: Bool
        /// The only values a string may take (empty: any).
        public var choices: [String]
        /// A table setting beside this one whose keys are choices too (`[soundscape] soundscape`
        /// may name one of `files`).
        public var orKeysOf: String?
        /// A string must not be empty.
        public var nonEmpty: Bool
        /// A field of a table that must be present (in an array's table items).
        public var required: Bool
        /// For an array: the type of its elements.
        public var items: Box?
        /// For a table with fixed keys: its keys (``values`` is `nil` then).
        public var fields: SettingsSchema?
        /// For a table with keys of the user's choosing: the type of each value.
        public var values: Box?

        /// Creates a setting.
        public init(
            type: ValueType, description: String = "", defaultValue: SettingValue? = nil, minimum: Double? = nil,
            maximum: Double? = nil, exclusiveMinimum: Bool = false, choices: [String] = [], orKeysOf: String? = nil,
            nonEmpty: Bool = false,
            required: Bool = false, items: Setting? = nil, fields: SettingsSchema? = nil, values: Setting? = nil
        ) {
            self.type = type
            self.description = description
            self.defaultValue = defaultValue
            self.minimum = minimum
            self.maximum = maximum
            self.exclusiveMinimum = exclusiveMinimum
            self.choices = choices
            self.orKeysOf = orKeysOf
            self.nonEmpty = nonEmpty
            self.required = required
            self.items = items.map(Box.init)
            self.fields = fields
            self.values = values.map(Box.init)
        }

        /// What the setting accepts, in words: `an integer from 100 to 10000`, `one of "a", "b"`.
        public var summary: String {
            switch type {
            case .string:
                if !choices.isEmpty {
                    let named = "one of " + choices.map { "\"\($0)\"" }.joined(separator: ", ")
                    return named + (orKeysOf.map { " or a name from \($0)" } ?? "")
                }
                return nonEmpty ? "a non-empty string" : "a string"
            case .integer, .number:
                let noun = type == .integer ? "an integer" : "a number"
                let low = minimum.map(Self.format)
                let high = maximum.map(Self.format)
                switch (low, high) {
                case (let low?, let high?):
                    return exclusiveMinimum ? "\(noun) above \(low), at most \(high)" : "\(noun) from \(low) to \(high)"
                case (let low?, nil): return exclusiveMinimum ? "\(noun) above \(low)" : "\(noun) of at least \(low)"
                case (nil, let high?): return "\(noun) of at most \(high)"
                case (nil, nil): return noun
                }
            case .boolean: return "true or false"
            case .array:
                guard let items else { return "an array" }
                if items.setting.type == .table { return "an array of tables" }
                return "an array of \(items.setting.type.rawValue)s"
            case .table:
                if let values { return "a table of \(values.setting.type.rawValue)s" }
                return "a table"
            }
        }

        static func format(_ value: Double) -> String {
            value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
        }
    }

    /// An indirection so that a ``Setting`` can hold the setting of its elements.
    public final class Box: Sendable, Hashable {
        /// The setting it holds.
        public let setting: Setting
        /// Boxes `setting`.
        public init(_ setting: Setting) { self.setting = setting }
        public static func == (a: Box, b: Box) -> Bool { a.setting == b.setting }
        public func hash(into hasher: inout Hasher) { hasher.combine(setting) }
    }

    /// The settings by key.
    public var settings: [String: Setting]

    /// Creates a schema.
    public init(_ settings: [String: Setting]) { self.settings = settings }

    /// The default of every top-level key that has one (the values a plugin starts from).
    public var defaults: [String: SettingValue] { settings.compactMapValues(\.defaultValue) }

    /// One problem ``validate(_:)`` found.
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// The key path inside the plugin's table (`workers`, `0`, `argz`); array indices are
        /// their decimal text.
        public var path: [String]
        /// What is wrong and how to fix it.
        public var message: String
        /// A near name when the key is unknown (`args` for `argz`).
        public var suggestion: String?

        /// Creates a problem.
        public init(path: [String], message: String, suggestion: String? = nil) {
            self.path = path
            self.message = message
            self.suggestion = suggestion
        }

        /// The path as a user writes it: `workers[0].argz`.
        public var key: String {
            var text = ""
            for component in path {
                if component.first.map({ $0.isNumber }) == true, component.allSatisfy(\.isNumber) {
                    text += "[\(component)]"
                } else {
                    text += text.isEmpty ? component : ".\(component)"
                }
            }
            return text
        }

        public var description: String { "setting `\(key)`: \(message)" }
    }

    /// Every problem with `table` (a plugin's table in `vigil.toml`, before defaults are merged),
    /// in key order: unknown keys (with a near name), values of the wrong type, out of range or
    /// not one of the choices, missing required fields of tables in arrays.
    public func validate(_ table: [String: SettingValue]) -> [Problem] {
        var problems: [Problem] = []
        check(table, at: [], into: &problems)
        return problems
    }

    private func check(_ table: [String: SettingValue], at path: [String], into problems: inout [Problem]) {
        for key in table.keys.sorted() {
            let value = table[key]!
            guard let setting = settings[key] else {
                let near = NearName.closest(to: key, among: settings.keys)
                var message = "unknown setting"
                if let near { message += "; did you mean `\(near)`?" }
                message += " Known: \(settings.keys.sorted().joined(separator: ", "))"
                problems.append(Problem(path: path + [key], message: message, suggestion: near))
                continue
            }
            Self.check(value, against: setting, at: path + [key], siblings: table, into: &problems)
        }
        for key in settings.keys.sorted() where settings[key]!.required && table[key] == nil {
            problems.append(Problem(path: path + [key], message: "missing; this field is required"))
        }
    }

    private static func check(
        _ value: SettingValue, against setting: Setting, at path: [String], siblings: [String: SettingValue] = [:],
        into problems: inout [Problem]
    ) {
        func fail(_ message: String) { problems.append(Problem(path: path, message: message)) }
        let found = "found \(value.kindName) \(value)"
        switch (setting.type, value) {
        case (.string, .string(let s)):
            var choices = setting.choices
            if let other = setting.orKeysOf, case .table(let named)? = siblings[other] {
                choices += named.keys.sorted()
            }
            if !choices.isEmpty, !choices.contains(s) {
                var message = "\(StrictJSONParser.quote(s)) is not \(setting.summary)"
                if let near = NearName.closest(to: s, among: choices) {
                    message += "; did you mean \"\(near)\"?"
                }
                fail(message)
            } else if setting.nonEmpty, s.isEmpty {
                fail("expected a non-empty string")
            }
        case (.integer, .integer(let i)):
            checkRange(Double(i), setting, fail)
        case (.number, .integer(let i)):
            checkRange(Double(i), setting, fail)
        case (.number, .double(let d)):
            checkRange(d, setting, fail)
        case (.boolean, .bool):
            break
        case (.array, .array(let elements)):
            guard let items = setting.items?.setting else { return }
            for (index, element) in elements.enumerated() {
                check(element, against: items, at: path + [String(index)], into: &problems)
            }
        case (.table, .table(let table)):
            if let fields = setting.fields {
                fields.check(table, at: path, into: &problems)
            } else if let values = setting.values?.setting {
                for key in table.keys.sorted() {
                    check(table[key]!, against: values, at: path + [key], into: &problems)
                }
            }
        default:
            fail("expected \(setting.summary), \(found)")
        }
    }

    private static func checkRange(_ value: Double, _ setting: Setting, _ fail: (String) -> Void) {
        let below =
            setting.minimum.map { setting.exclusiveMinimum ? value <= $0 : value < $0 } ?? false
        let above = setting.maximum.map { value > $0 } ?? false
        if below || above {
            fail("\(Setting.format(value)) is out of range; use \(setting.summary)")
        }
    }
}

/// "Did you mean": the closest of a set of names by edit distance, when close enough to be a typo.
public enum NearName {
    /// The name among `candidates` nearest to `name` (Damerau–Levenshtein, optimal string
    /// alignment), when its distance is at most a third of the longer name (at least 1, at most 3);
    /// ties go to the alphabetically first. `nil` when none is that close.
    public static func closest(to name: String, among candidates: some Sequence<String>) -> String? {
        var best: (distance: Int, name: String)?
        for candidate in candidates.sorted() where candidate != name {
            let distance = editDistance(Array(name.unicodeScalars), Array(candidate.unicodeScalars))
            let limit = min(3, max(1, max(name.unicodeScalars.count, candidate.unicodeScalars.count) / 3))
            guard distance <= limit else { continue }
            if best == nil || distance < best!.distance { best = (distance, candidate) }
        }
        return best?.name
    }

    /// The optimal-string-alignment distance: insertions, deletions, substitutions and swaps of
    /// two neighbours each count 1.
    public static func editDistance<T: Equatable>(_ a: [T], _ b: [T]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}

extension SettingsSchema {
    /// One line of a schema's listing (the trust review, docs): a key with its path
    /// (`workers[].restart`), what it accepts, its default and description.
    public struct Entry: Sendable, Hashable {
        /// The key, with `[]` for an array's elements: `workers[].name`.
        public var key: String
        /// The type's name.
        public var type: ValueType
        /// What it accepts (``Setting/summary``), with "required" for a required field.
        public var accepts: String
        /// The default, if any.
        public var defaultValue: SettingValue?
        /// The one-line description.
        public var description: String
    }

    /// Every key, nested fields under their table, in name order.
    public var entries: [Entry] {
        var out: [Entry] = []
        func walk(_ schema: SettingsSchema, prefix: String) {
            for key in schema.settings.keys.sorted() {
                let setting = schema.settings[key]!
                let name = prefix.isEmpty ? key : "\(prefix).\(key)"
                out.append(
                    Entry(
                        key: name, type: setting.type,
                        accepts: setting.summary + (setting.required ? " (required)" : ""),
                        defaultValue: setting.defaultValue, description: setting.description))
                if let fields = setting.fields { walk(fields, prefix: name) }
                if let items = setting.items?.setting, let fields = items.fields { walk(fields, prefix: name + "[]") }
            }
        }
        walk(self, prefix: "")
        return out
    }
}
