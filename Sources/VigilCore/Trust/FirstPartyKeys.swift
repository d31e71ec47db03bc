public import VigilCrypto

/// The published signing keys of Vigil's own plugins (README, "Plugins").
///
/// A plugin named like one of these but offering another key is not Vigil's: the trust review
/// says so next to the key, so a look-alike cannot pass as the first-party plugin.
public enum FirstPartyKeys {
    /// Plugin name → its publisher's key fingerprint.
    public static let fingerprints: [String: Fingerprint] = [
        "silent-engine": key("ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4="),
        "soundscape": key("ed25519:QaLGlZoeYW/jvbHckvjgkjV1ImF3vfGrW3ZB/9Ln8sI="),
        "supervisor": key("ed25519:ioJy7E9uRlLYcMlKTGdQlzdNRh9asTxdtsoQBInw4sk="),
    ]

    /// The first-party key for `name`, when `name` is a first-party plugin and `fingerprint` is
    /// not its key; `nil` otherwise.
    public static func mismatch(name: String, fingerprint: Fingerprint) -> Fingerprint? {
        guard let expected = fingerprints[name], expected != fingerprint else { return nil }
        return expected
    }

    private static func key(_ text: String) -> Fingerprint {
        // The literals above are checked by FirstPartyKeysTests against the shipped plugin.pub files.
        try! Fingerprint(parsing: text)
    }
}
