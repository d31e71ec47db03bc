import Glibc
import TOMLKit
public import VigilCrypto

/// Edits the `[trusted_plugins]` table of `vigil.toml` in place.
///
/// Only the changed entry's bytes change: comments, blank lines, order and every other table are
/// kept byte for byte. A missing table is appended at the end; a missing file is created. A file
/// that does not parse is refused and left untouched. Before writing, the edited text is parsed
/// again and compared with the original document plus the intended change, so an edit can never
/// alter anything else. Writes are atomic (temporary file, `fsync`, `rename`) and keep the file's
/// mode, never loosening it (a file or directory others can write is refused before any edit, as
/// ``HostConfiguration/load(path:)`` refuses it); an edit that changes nothing writes nothing. Concurrent edits of one file are serialised
/// by a lock on its directory, so none is lost.
public enum TrustEditor {
    /// What an edit did.
    public enum Outcome: Sendable, Hashable {
        /// The file already said this; nothing was written.
        case unchanged
        /// A new entry was written (the file or the table may have been created).
        case added
        /// An existing entry was replaced; the old value is given.
        case replaced(previous: String)
        /// The entry was removed.
        case removed
    }

    /// Records `fingerprint` as the trusted key of `plugin` in the file at `configPath`.
    public static func trust(plugin: String, fingerprint: Fingerprint, configPath: String) throws(CoreError) -> Outcome
    {
        try edit(plugin: plugin, value: TrustedKeys(fingerprint), configPath: configPath, then: {})
    }

    /// Records the key set `keys` for `plugin` (`"ed25519:…"` for one key, else
    /// `{ keys = […], threshold = K }`), then runs `body` like
    /// ``trust(plugin:fingerprint:configPath:then:)``.
    public static func trust(
        plugin: String, keys: TrustedKeys, configPath: String, then body: () throws(CoreError) -> Void = {}
    ) throws(CoreError) -> Outcome {
        try edit(plugin: plugin, value: keys, configPath: configPath, then: body)
    }

    /// Records `fingerprint` like ``trust(plugin:fingerprint:configPath:)``, then runs `body`
    /// while still holding the lock; when `body` throws, the file is put back exactly as it was
    /// (or removed, if this edit created it) and the error is rethrown. This makes "write the
    /// trust entry and the rollback record" all or nothing.
    public static func trust(
        plugin: String, fingerprint: Fingerprint, configPath: String, then body: () throws(CoreError) -> Void
    ) throws(CoreError) -> Outcome {
        try edit(plugin: plugin, value: TrustedKeys(fingerprint), configPath: configPath, then: body)
    }

    /// Removes `plugin`'s entry from `[trusted_plugins]` (``Outcome/unchanged`` when absent).
    public static func untrust(plugin: String, configPath: String) throws(CoreError) -> Outcome {
        try edit(plugin: plugin, value: nil, configPath: configPath, then: {})
    }

    private static func edit(
        plugin: String, value: TrustedKeys?, configPath: String, then body: () throws(CoreError) -> Void
    ) throws(CoreError) -> Outcome {
        if let problem = PluginName.problem(plugin) {
            throw CoreError(code: .configInvalid, message: problem)
        }
        var target = Path.normalized(configPath)
        if let resolved = realpath(target, nil) {
            target = String(cString: resolved)
            free(resolved)
        }
        return try withDirectoryLock(of: target) { () throws(CoreError) -> Outcome in
            let original: [UInt8]
            var mode: mode_t = 0o644
            let existed = SystemCall.fileType(target) != nil
            if !existed {
                guard value != nil else { return .unchanged }
                try HostConfiguration.checkDirectory(of: target)
                original = []
            } else {
                // Refuses a file or directory others can write (StrictModes), so the mode kept
                // below never gives group or others write access.
                original = try HostConfiguration.readConfig(target)
                var st = stat()
                if stat(target, &st) == 0 { mode = st.st_mode & 0o7777 & ~0o022 }
            }
            let (edited, outcome) = try self.edited(original, plugin: plugin, value: value, path: target)
            if outcome != .unchanged { try AtomicFile.write(edited, to: target, mode: mode) }
            do throws(CoreError) {
                try body()
            } catch {
                if outcome != .unchanged {
                    if existed {
                        try AtomicFile.write(original, to: target, mode: mode)
                    } else {
                        unlink(target)
                    }
                }
                throw error
            }
            return outcome
        }
    }

    /// Runs `body` (a read, edit and atomic replace of `path`) under an exclusive `flock` on the
    /// directory holding `path`, so that concurrent edits (two `vigil plugin trust` runs, say)
    /// each see the other's result instead of the last one silently winning. The file itself
    /// cannot carry the lock, since the atomic rename replaces it; the directory stays put and
    /// needs no extra file.
    private static func withDirectoryLock<T>(of path: String, _ body: () throws(CoreError) -> T) throws(CoreError) -> T
    {
        try SystemCall.withExclusiveLock(
            on: Path.directory(of: path), flags: O_RDONLY | O_DIRECTORY, what: "the directory", body)
    }

    /// The text of `bytes` with `plugin`'s trust entry set to `value` (or removed when `nil`).
    static func edited(
        _ bytes: [UInt8], plugin: String, value keys: TrustedKeys?, path: String
    ) throws(CoreError) -> ([UInt8], Outcome) {
        let value = keys?.tomlValue
        let node: TOMLNode? = keys.map { keys in
            keys.isSingleKey
                ? .string(keys.keys[0].description)
                : .table([
                    "keys": .array(keys.keys.map { .string($0.description) }), "threshold": .integer(keys.threshold),
                ])
        }
        let (table, _) = try HostConfiguration.parseTOML(bytes, path: path)
        let before = TOMLNode(table)
        let locator = TOMLLocator(bytes)
        let key = ["trusted_plugins", plugin]
        var out = bytes
        let outcome: Outcome

        func refuse(_ why: String) -> CoreError {
            CoreError(
                code: .configInvalid,
                message: "\(path): \(why); Vigil edits [trusted_plugins] only when it is a plain table — "
                    + "edit the entry by hand or rewrite the table as [trusted_plugins] with one `name = \"…\"` per line"
            )
        }

        if case .table(let root) = before, let existing = root["trusted_plugins"] {
            guard case .table = existing else { throw refuse("trusted_plugins is not a table") }
        }
        let current: TOMLNode? = {
            guard case .table(let root) = before, case .table(let t)? = root["trusted_plugins"] else { return nil }
            return t[plugin]
        }()
        // An entry's own inline table (`NAME = { keys = […], threshold = 2 }`) is fine; the
        // table itself written inline is not.
        if locator.entries.contains(where: { $0.path.first == "trusted_plugins" && $0.isNested && $0.path.count == 2 })
            || locator.entries.contains(where: { $0.path == ["trusted_plugins"] })
        {
            throw refuse("trusted_plugins is written as an inline table")
        }

        if let entry = locator.entries.first(where: { $0.path == key && !$0.isNested }) {
            if let value {
                if current == node { return (bytes, .unchanged) }
                let previous = String(decoding: bytes[entry.valueRange], as: UTF8.self)
                out.replaceSubrange(entry.valueRange, with: Array(value.utf8))
                outcome = .replaced(previous: previous)
            } else {
                out.removeSubrange(entry.lineRange)
                outcome = .removed
            }
        } else {
            if current != nil { throw refuse("the entry for \(plugin) could not be located") }
            guard let value else { return (bytes, .unchanged) }
            let line = Array("\(plugin) = \(value)\n".utf8)
            if let header = locator.headers.first(where: { $0.path == ["trusted_plugins"] && !$0.isArray }) {
                let nextHeader = locator.headers.map(\.start).filter { $0 > header.start }.min() ?? Int.max
                let last = locator.entries.filter {
                    !$0.isNested && $0.path.first == "trusted_plugins" && $0.keyStart > header.start
                        && $0.keyStart < nextHeader
                }.map(\.lineRange.upperBound).max()
                let at = last ?? header.lineRange.upperBound
                var insertion = line
                if at > 0 && out[at - 1] != 0x0A { insertion.insert(0x0A, at: 0) }
                out.insert(contentsOf: insertion, at: at)
            } else if let lastDotted = locator.entries.filter({
                !$0.isNested && $0.relativeKey.first == "trusted_plugins"
            })
            .map(\.lineRange.upperBound).max() {
                var insertion = Array("trusted_plugins.".utf8) + line
                if lastDotted > 0 && out[lastDotted - 1] != 0x0A { insertion.insert(0x0A, at: 0) }
                out.insert(contentsOf: insertion, at: lastDotted)
            } else {
                if let lastByte = out.last, lastByte != 0x0A { out.append(0x0A) }
                if !out.isEmpty { out.append(0x0A) }
                out += Array("[trusted_plugins]\n".utf8) + line
            }
            outcome = .added
        }

        // Re-parse and prove that exactly the intended change happened.
        let (newTable, _) = try HostConfiguration.parseTOML(out, path: path)
        var expected = before
        if case .table(var root) = expected {
            var trusted: [String: TOMLNode] = [:]
            if case .table(let t)? = root["trusted_plugins"] { trusted = t }
            trusted[plugin] = node
            root["trusted_plugins"] = .table(trusted)
            expected = .table(root)
        }
        var actual = TOMLNode(newTable)
        if case .table(var root) = actual, root["trusted_plugins"] == nil {
            root["trusted_plugins"] = .table([:])
            actual = .table(root)
        }
        guard actual == expected else {
            throw CoreError(
                code: .ioFailure,
                message: "\(path): editing [trusted_plugins] would have changed other settings, so the file was left "
                    + "unchanged — edit the entry for \(plugin) by hand")
        }
        return (out, outcome)
    }
}

/// A TOML document as a comparable value tree.
indirect enum TOMLNode: Hashable {
    case string(String)
    case integer(Int)
    case double(UInt64)
    case bool(Bool)
    case other(String)
    case array([TOMLNode])
    case table([String: TOMLNode])

    init(_ table: TOMLTable) {
        var out: [String: TOMLNode] = [:]
        for key in table.keys {
            if let v = table[key] { out[key] = TOMLNode(value: v) }
        }
        self = .table(out)
    }

    init(value: any TOMLValueConvertible) {
        switch value.type {
        case .string: self = .string(value.string ?? "")
        case .int: self = .integer(value.int ?? 0)
        case .double: self = .double((value.double ?? 0).bitPattern)
        case .bool: self = .bool(value.bool ?? false)
        case .array: self = .array((value.array ?? TOMLArray()).map { TOMLNode(value: $0) })
        case .table: self = TOMLNode(value.table ?? TOMLTable())
        case .date, .time, .dateTime: self = .other(value.debugDescription)
        }
    }
}
