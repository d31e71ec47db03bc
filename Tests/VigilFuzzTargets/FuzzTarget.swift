/// One parser that sees untrusted bytes, driven the way Vigil drives it.
///
/// ``run(_:)`` must return for every input: a refusal is a thrown error that is caught here, while
/// a crash, a hang or an unbounded allocation is a bug in the parser that libFuzzer reports
/// (`scripts/fuzz.sh`). Where a parser has an invariant (a parsed key prints back to a file that
/// parses to the same key), the target checks it with `precondition`, so a broken invariant is a
/// crash too.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// A minisign public key file (`plugin.pub`, a trust fingerprint).
    case minisignKey = "minisign-key"
    /// A minisign signature file (`plugin.json.minisig`).
    case minisignSignature = "minisign-signature"
    /// `plugin.json`: the strict JSON parser, then the manifest decoding, as after a valid signature.
    case manifest
    /// `vigil.toml`: TOMLKit, the configuration and the bounded-depth locator.
    case config
    /// One sd_notify datagram from a worker.
    case notify
    /// The soundscape's `preferences.json`.
    case preferences
    /// The announcer's `duck-journal.json`, and the volumes recovery derives from it.
    case duckJournal = "duck-journal"
    /// One request line on the soundscape's control channel.
    case control
    /// An audio file, through the VigilSoundFile decoder.
    case soundFile = "sound-file"

    /// Feeds `bytes` to the parser.
    public func run(_ bytes: [UInt8]) {
        switch self {
        case .minisignKey: Self.minisignKey(bytes)
        case .minisignSignature: Self.minisignSignature(bytes)
        case .manifest: Self.manifest(bytes)
        case .config: Self.config(bytes)
        case .notify: Self.notify(bytes)
        case .preferences: Self.preferences(bytes)
        case .duckJournal: Self.duckJournal(bytes)
        case .control: Self.control(bytes)
        case .soundFile: Self.soundFile(bytes)
        }
    }
}
