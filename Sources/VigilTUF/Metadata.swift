import VigilBase

/// The four TUF roles' signed fields (spec §4), read from one parsed tree.

/// The role types.
public enum RoleType: String, Sendable, CaseIterable {
    case root, timestamp, snapshot, targets
}

/// A key and threshold assignment: which keys sign a role and how many must.
public struct RoleKeys: Sendable, Hashable {
    public let keyIDs: [String]
    public let threshold: Int

    init(_ fields: Fields) throws(TUFError) {
        keyIDs = try fields.strings("keyids")
        guard Set(keyIDs).count == keyIDs.count else { throw fields.fail("keyids", "lists a key id twice") }
        threshold = Int(try fields.positive("threshold"))
    }
}

/// What every role has: version and expiry.
public struct Common: Sendable, Hashable {
    public let type: RoleType
    public let version: Int64
    /// Seconds since 1970 (UTC).
    public let expires: Int64
    /// As written, for messages.
    public let expiresText: String

    init(_ fields: Fields, expected: RoleType) throws(TUFError) {
        let type = try fields.string("_type")
        guard type == expected.rawValue else {
            throw TUFError(
                code: .wrongType,
                message: "\(fields.what) has _type \(JSONValue.string(type).canonicalText), expected "
                    + "\"\(expected.rawValue)\" — the repository serves one role's file in place of another's")
        }
        self.type = expected
        let spec = try fields.string("spec_version")
        let parts = spec.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2, parts.count <= 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }),
            parts[0] == "1"
        else { throw fields.fail("spec_version", "is \(JSONValue.string(spec).canonicalText), not 1.x.y") }
        version = try fields.positive("version")
        expiresText = try fields.string("expires")
        // The strict form python-tuf writes and requires: no fraction, offset or lower case.
        guard let seconds = RFC3339.parse(expiresText, syntax: [])?.seconds else {
            throw fields.fail("expires", "is not a time of the form YYYY-MM-DDTHH:MM:SSZ")
        }
        expires = seconds
    }

    func isExpired(at now: Int64) -> Bool { now >= expires }
}

/// A public key of the root or of a delegation.
public struct Key: Sendable, Hashable {
    public let keyType: String
    public let scheme: String
    public let publicValue: String
}

/// `root.json`'s signed part.
public struct Root: Sendable, Hashable {
    public let common: Common
    public let consistentSnapshot: Bool
    public let keys: [String: Key]
    public let roles: [RoleType: RoleKeys]

    init(_ signed: JSONValue) throws(TUFError) {
        let f = try Fields(signed, path: "signed", what: "root metadata")
        common = try Common(f, expected: .root)
        consistentSnapshot = f.has("consistent_snapshot") ? try f.bool("consistent_snapshot") : false
        keys = try parseKeys(f.object("keys"))
        let r = try f.object("roles")
        var roles: [RoleType: RoleKeys] = [:]
        for type in RoleType.allCases { roles[type] = try RoleKeys(r.object(type.rawValue)) }
        self.roles = roles
    }

    func keys(for role: RoleType) -> RoleKeys { roles[role]! }
}

func parseKeys(_ f: Fields) throws(TUFError) -> [String: Key] {
    var keys: [String: Key] = [:]
    for (id, value) in f.members {
        let k = try Fields(value, path: "\(f.path)[\(JSONValue.string(id).canonicalText)]", what: f.what)
        let keyval = try k.object("keyval")
        keys[id] = Key(
            keyType: try k.string("keytype"), scheme: try k.string("scheme"), publicValue: try keyval.string("public"))
    }
    return keys
}

/// A file's version, and optionally its length and hashes, as snapshot and timestamp list them.
public struct MetaFile: Sendable, Hashable {
    public let version: Int64
    public let length: Int64?
    public let hashes: [String: String]?

    init(_ f: Fields) throws(TUFError) {
        version = try f.positive("version")
        length = f.has("length") ? try f.integer("length") : nil
        if let length, length < 0 { throw f.fail("length", "is negative") }
        if f.has("hashes") {
            hashes = try parseHashes(f.object("hashes"))
        } else {
            hashes = nil
        }
    }
}

func parseHashes(_ f: Fields) throws(TUFError) -> [String: String] {
    var out: [String: String] = [:]
    for (name, value) in f.members {
        guard case .string(let s) = value else { throw f.fail(name, "is not a string") }
        out[name] = s
    }
    guard !out.isEmpty else { throw .malformed(f.what, "\(f.path) lists no hash") }
    return out
}

/// `timestamp.json`'s signed part.
public struct Timestamp: Sendable, Hashable {
    public let common: Common
    public let snapshotMeta: MetaFile

    init(_ signed: JSONValue) throws(TUFError) {
        let f = try Fields(signed, path: "signed", what: "timestamp metadata")
        common = try Common(f, expected: .timestamp)
        let meta = try f.object("meta")
        guard meta.members.count == 1 else { throw meta.fail("", "must list exactly snapshot.json") }
        snapshotMeta = try MetaFile(meta.object("snapshot.json"))
    }
}

/// `snapshot.json`'s signed part.
public struct Snapshot: Sendable, Hashable {
    public let common: Common
    /// By file name (`targets.json`, `ROLE.json`).
    public let meta: [String: MetaFile]

    init(_ signed: JSONValue) throws(TUFError) {
        let f = try Fields(signed, path: "signed", what: "snapshot metadata")
        common = try Common(f, expected: .snapshot)
        let m = try f.object("meta")
        var meta: [String: MetaFile] = [:]
        for name in m.members.keys { meta[name] = try MetaFile(m.object(name)) }
        self.meta = meta
    }
}

/// A target file's length and hashes.
public struct TargetFile: Sendable, Hashable {
    public let path: String
    public let length: Int64
    public let hashes: [String: String]
    /// The target's `custom` object, if any (signed with the rest; the repository's own fields,
    /// such as a plugin's `version`).
    public let custom: [String: JSONValue]?

    init(path: String, _ f: Fields) throws(TUFError) {
        self.path = path
        length = try f.integer("length")
        guard length >= 0 else { throw f.fail("length", "is negative") }
        hashes = try parseHashes(f.object("hashes"))
        custom = f.has("custom") ? try f.objectMembers("custom") : nil
    }
}

/// A delegation from a targets role to another.
public struct DelegatedRole: Sendable, Hashable {
    public enum Paths: Sendable, Hashable {
        case patterns([String])
        case hashPrefixes([String])
    }

    public let name: String
    public let keys: RoleKeys
    public let terminating: Bool
    public let paths: Paths

    init(_ f: Fields) throws(TUFError) {
        name = try f.string("name")
        guard !name.isEmpty, RoleType(rawValue: name) == nil else {
            throw f.fail("name", "is empty or names a top-level role")
        }
        keys = try RoleKeys(f)
        terminating = try f.bool("terminating")
        switch (f.has("paths"), f.has("path_hash_prefixes")) {
        case (true, false): paths = .patterns(try f.strings("paths"))
        case (false, true): paths = .hashPrefixes(try f.strings("path_hash_prefixes"))
        default: throw f.fail("paths", "and path_hash_prefixes: exactly one must be present")
        }
    }

    /// Whether this delegation covers `target` (its paths use `fnmatch` per path segment, so `*`
    /// never matches `/`).
    public func covers(_ target: String) -> Bool {
        switch paths {
        case .patterns(let patterns): return patterns.contains { PathPattern.matches(target, pattern: $0) }
        case .hashPrefixes(let prefixes):
            let digest = Hashing.hex(Hashing.sha256(Array(target.utf8)))
            return prefixes.contains { digest.hasPrefix($0) }
        }
    }
}

/// Targets metadata (top-level or delegated)'s signed part.
public struct Targets: Sendable, Hashable {
    public let common: Common
    public let targets: [String: TargetFile]
    public let delegationKeys: [String: Key]
    public let delegations: [DelegatedRole]
    /// Indices of the delegations whose patterns all start with a literal segment, by that
    /// segment; the others (wildcards there, hash prefixes) are in ``anyFirstSegment``. A lookup
    /// then matches a path against the few delegations that can cover it, not all of them (a
    /// repository of N plugins delegates N roles: N lookups would cost N² matches).
    let byFirstSegment: [String: [Int]]
    let anyFirstSegment: [Int]

    /// The delegations that cover `path`, in their listed order (the search's priority).
    public func delegations(covering path: String) -> [DelegatedRole] {
        let first = String(path.prefix { $0 != "/" })
        var candidates = byFirstSegment[first] ?? []
        if !anyFirstSegment.isEmpty { candidates = Array(Set(candidates + anyFirstSegment)).sorted() }
        return candidates.map { delegations[$0] }.filter { $0.covers(path) }
    }

    static func index(_ delegations: [DelegatedRole]) -> (byFirstSegment: [String: [Int]], any: [Int]) {
        var byFirst: [String: [Int]] = [:]
        var any: [Int] = []
        for (n, role) in delegations.enumerated() {
            guard case .patterns(let patterns) = role.paths else {
                any.append(n)
                continue
            }
            let firsts = patterns.map { String($0.prefix { $0 != "/" }) }
            if firsts.contains(where: { $0.contains(where: { "*?[".contains($0) }) }) {
                any.append(n)
                continue
            }
            for first in Set(firsts) { byFirst[first, default: []].append(n) }
        }
        return (byFirst, any)
    }

    init(_ signed: JSONValue, role: String) throws(TUFError) {
        let f = try Fields(signed, path: "signed", what: "\(role) metadata")
        common = try Common(f, expected: .targets)
        let t = try f.object("targets")
        var targets: [String: TargetFile] = [:]
        for name in t.members.keys { targets[name] = try TargetFile(path: name, t.object(name)) }
        self.targets = targets
        if f.has("delegations") {
            let d = try f.object("delegations")
            guard !d.has("succinct_roles") else {
                throw d.fail("succinct_roles", "is not supported by this client (TAP 15 hashed bins)")
            }
            delegationKeys = try parseKeys(d.object("keys"))
            guard case .array(let roles) = try d.value("roles") else { throw d.fail("roles", "is not an array") }
            var out: [DelegatedRole] = []
            for (n, role) in roles.enumerated() {
                out.append(try DelegatedRole(Fields(role, path: "\(d.path).roles[\(n)]", what: f.what)))
            }
            guard Set(out.map(\.name)).count == out.count else { throw d.fail("roles", "names a role twice") }
            for role in out {
                for id in role.keys.keyIDs where delegationKeys[id] == nil {
                    throw d.fail("roles", "delegates \(role.name) to key \(id), which keys does not list")
                }
            }
            delegations = out
        } else {
            delegationKeys = [:]
            delegations = []
        }
        (byFirstSegment, anyFirstSegment) = Self.index(delegations)
    }
}
