import TOMLKit
import VigilBase
import VigilCrypto
import VigilPlugin

/// Reads values out of TOMLKit's tree, failing with located errors.
struct ConfigReader {
    let path: String
    let locator: TOMLLocator

    func fail(at keyPath: [String], fallbackIndex: Int? = nil, _ problem: String) -> CoreError {
        var offset = locator.offset(of: keyPath)
        if offset == nil, let i = fallbackIndex {
            offset = locator.elements.first { $0.arrayPath == Array(keyPath.dropLast()) && $0.index == i }?.start
        }
        if offset == nil { offset = locator.offset(of: Array(keyPath.prefix(1))) }
        let location = offset.map { offset in
            let (line, column) = locator.lineColumn(of: offset)
            return SourceLocation(path: path, line: line, column: column)
        }
        let key = keyPath.map {
            PluginName.isValid($0) || $0.allSatisfy { $0.isLetter || $0 == "_" } ? $0 : JSONValue.quote($0)
        }
        .joined(separator: ".")
        return CoreError(
            code: .configInvalid, location: location,
            message: (location == nil ? "\(path): " : "") + "\(key): \(problem)")
    }

    func strings(_ value: any TOMLValueConvertible, at keyPath: [String]) throws(CoreError) -> [String] {
        guard let array = value.array else { throw fail(at: keyPath, "expected an array of strings") }
        var out: [String] = []
        for (i, element) in array.enumerated() {
            guard let s = element.string else {
                throw fail(at: keyPath + ["[\(i)]"], fallbackIndex: i, "element \(i) is not a string")
            }
            out.append(s)
        }
        return out
    }

    /// One `[trusted_plugins]` entry: `"ed25519:…"`, or `{ keys = ["ed25519:…", …], threshold = K }`.
    func trustedKeys(_ value: any TOMLValueConvertible, name: String) throws(CoreError) -> TrustedKeys {
        let at = ["trusted_plugins", name]
        if let s = value.string { return TrustedKeys(try fingerprint(s, at: at, name: name)) }
        guard let table = value.table else {
            throw fail(
                at: at,
                "the trusted key must be a string \"ed25519:…\" or a table { keys = [\"ed25519:…\", …], threshold = K }"
            )
        }
        for key in table.keys where key != "keys" && key != "threshold" {
            throw fail(at: at + [key], "unknown key `\(Sanitizer.display(key))` (known: keys, threshold)")
        }
        guard let list = table["keys"] else { throw fail(at: at, "the key set has no `keys` list") }
        let texts = try strings(list, at: at + ["keys"])
        var keys: [Fingerprint] = []
        for (i, text) in texts.enumerated() {
            keys.append(try fingerprint(text, at: at + ["keys", "[\(i)]"], name: name, fallbackIndex: i))
        }
        guard let thresholdValue = table["threshold"] else {
            throw fail(at: at, "the key set has no `threshold` (how many of its keys must sign, 1 … \(keys.count))")
        }
        guard let threshold = thresholdValue.int else {
            throw fail(at: at + ["threshold"], "expected an integer (how many of the keys must sign)")
        }
        do {
            return try TrustedKeys(keys: keys, threshold: threshold)
        } catch {
            throw fail(at: at, "\(error.description) in the key set of \(name)")
        }
    }

    private func fingerprint(
        _ s: String, at keyPath: [String], name: String, fallbackIndex: Int? = nil
    ) throws(CoreError) -> Fingerprint {
        do {
            return try Fingerprint(parsing: s)
        } catch {
            throw fail(
                at: keyPath, fallbackIndex: fallbackIndex,
                "\(JSONValue.quote(Sanitizer.display(s))) is not a valid fingerprint (\(error)) — "
                    + "expected \"ed25519:\" and 44 characters of standard base64; re-run "
                    + "`\(TrustCommand.display(name))` to record it again")
        }
    }

    func pluginNames(_ value: any TOMLValueConvertible, at keyPath: [String]) throws(CoreError) -> [String] {
        let names = try strings(value, at: keyPath)
        var seen: Set<String> = []
        for (i, name) in names.enumerated() {
            if let problem = PluginName.problem(name) { throw fail(at: keyPath + [name], fallbackIndex: i, problem) }
            guard seen.insert(name).inserted else {
                throw fail(at: keyPath + [name], fallbackIndex: i, "\"\(name)\" is listed twice")
            }
        }
        return names
    }

    func host(_ value: any TOMLValueConvertible) throws(CoreError) -> HostDeclarations {
        guard let table = value.table else { throw fail(at: ["host"], "[host] must be a table") }
        var host = HostDeclarations()
        for key in table.keys {
            guard let v = table[key] else { continue }
            switch key {
            case "name":
                guard let s = v.string, !s.isEmpty else {
                    throw fail(at: ["host", key], "expected a non-empty string")
                }
                host.name = s
            case "background_modes": host.backgroundModes = try strings(v, at: ["host", key])
            case "services": host.services = try strings(v, at: ["host", key])
            case "foreign_tables": host.foreignTables = try strings(v, at: ["host", key])
            case "inhibit_sleep":
                guard let flag = v.bool else { throw fail(at: ["host", key], "expected true or false") }
                host.inhibitSleep = flag
            default:
                throw fail(
                    at: ["host", key],
                    "unknown key `\(Sanitizer.display(key))` in [host] (known: name, background_modes, services, inhibit_sleep, foreign_tables)"
                )
            }
        }
        return host
    }

    /// The deepest nesting of arrays and tables accepted in a plugin's settings (as for manifests).
    static let maxSettingsDepth = StrictJSON.defaultMaxDepth

    func settingsTable(_ table: TOMLTable, at keyPath: [String]) throws(CoreError) -> [String: SettingValue] {
        guard keyPath.count <= Self.maxSettingsDepth else {
            throw fail(
                at: Array(keyPath.prefix(2)),
                "settings are nested deeper than \(Self.maxSettingsDepth) levels — flatten the plugin's settings")
        }
        var out: [String: SettingValue] = [:]
        for key in table.keys {
            guard let v = table[key] else { continue }
            out[key] = try setting(v, at: keyPath + [key])
        }
        return out
    }

    func setting(_ value: any TOMLValueConvertible, at keyPath: [String]) throws(CoreError) -> SettingValue {
        switch value.type {
        case .string: return .string(value.string ?? "")
        case .int: return .integer(value.int ?? 0)
        case .double: return .double(value.double ?? 0)
        case .bool: return .bool(value.bool ?? false)
        case .array:
            guard keyPath.count <= Self.maxSettingsDepth else {
                throw fail(
                    at: Array(keyPath.prefix(2)),
                    "settings are nested deeper than \(Self.maxSettingsDepth) levels — flatten the plugin's settings")
            }
            var out: [SettingValue] = []
            for (i, element) in (value.array ?? TOMLArray()).enumerated() {
                out.append(try setting(element, at: keyPath + ["[\(i)]"]))
            }
            return .array(out)
        case .table: return .table(try settingsTable(value.table ?? TOMLTable(), at: keyPath))
        case .date, .time, .dateTime:
            throw fail(at: keyPath, "dates and times are not supported as plugin settings; use a string")
        }
    }
}
