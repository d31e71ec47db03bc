public import VigilCrypto

/// The keys a host trusts for one plugin and how many of them must sign: `threshold` of `keys`
/// (k of n). A plain `NAME = "ed25519:…"` entry is one key with threshold 1.
///
/// Keys are distinct raw Ed25519 public keys (a ``Fingerprint`` is the raw key, so two spellings
/// of one key cannot exist), kept in the order given. The threshold counts distinct keys: a key
/// that signed twice, under one key id or two, counts once.
public struct TrustedKeys: Sendable, Hashable, CustomStringConvertible {
    /// The most keys one set may hold (and the most signature files read for one manifest).
    public static let maxKeys = 16

    /// The keys, distinct, in the order given.
    public let keys: [Fingerprint]
    /// How many distinct keys of ``keys`` must sign (1 … `keys.count`).
    public let threshold: Int

    /// One key, threshold 1.
    public init(_ key: Fingerprint) {
        keys = [key]
        threshold = 1
    }

    /// A validated key set.
    ///
    /// - Throws: a reason (for the caller's error) when a key is listed twice, there are no keys or
    ///   more than ``maxKeys``, or the threshold is below 1 or above the number of keys.
    public init(keys: [Fingerprint], threshold: Int) throws(TrustedKeys.Problem) {
        if let problem = Self.problem(keys: keys, threshold: threshold) { throw problem }
        self.keys = keys
        self.threshold = threshold
    }

    /// Why a key set is refused.
    public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong and how to fix it.
        public let description: String
    }

    /// The reason `keys`/`threshold` do not form a valid set, or `nil`.
    public static func problem(keys: [Fingerprint], threshold: Int) -> Problem? {
        if keys.isEmpty { return Problem(description: "the key set is empty — list at least one \"ed25519:…\" key") }
        if keys.count > maxKeys {
            return Problem(description: "\(keys.count) keys is more than the \(maxKeys) a key set may hold")
        }
        var seen: Set<Fingerprint> = []
        for key in keys where !seen.insert(key).inserted {
            return Problem(
                description: "the key \(key) is listed twice — a key counts once toward the threshold; remove the copy")
        }
        guard threshold >= 1, threshold <= keys.count else {
            return Problem(
                description: "threshold \(threshold) is not between 1 and the number of keys (\(keys.count)) — a "
                    + "threshold of 0 would accept an unsigned manifest and one above \(keys.count) nothing at all")
        }
        return nil
    }

    /// The keys of a JSON array of canonical `"ed25519:…"` strings, or `nil` when an element is
    /// anything else (used by the rotation, revocation and state files).
    static func fingerprints(_ list: [JSONValue]) -> [Fingerprint]? {
        var keys: [Fingerprint] = []
        for element in list {
            guard case .string(let text) = element, let key = try? Fingerprint(parsing: text) else { return nil }
            keys.append(key)
        }
        return keys
    }

    /// True for a plain one-key entry.
    public var isSingleKey: Bool { keys.count == 1 && threshold == 1 }

    /// True when `key` is one of ``keys``.
    public func contains(_ key: Fingerprint) -> Bool { keys.contains(key) }

    /// How the set is written in `[trusted_plugins]`: `"ed25519:…"` for one key, else an inline
    /// table `{ keys = ["ed25519:…", …], threshold = K }`.
    public var tomlValue: String {
        if isSingleKey { return JSONValue.quote(keys[0].description) }
        let list = keys.map { JSONValue.quote($0.description) }.joined(separator: ", ")
        return "{ keys = [\(list)], threshold = \(threshold) }"
    }

    /// `ed25519:…` for one key, else `K of [ed25519:…, …]`.
    public var description: String {
        isSingleKey ? keys[0].description : "\(threshold) of [\(keys.map(\.description).joined(separator: ", "))]"
    }

    /// The key the rollback store records this set under: the fingerprint for one key (so state
    /// written before key sets existed stays valid), else the threshold and the sorted keys.
    public var recordKey: String {
        isSingleKey ? keys[0].description : "\(threshold)-of:" + keys.map(\.description).sorted().joined(separator: ",")
    }
}
