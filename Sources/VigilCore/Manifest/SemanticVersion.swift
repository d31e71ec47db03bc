/// A Semantic Versioning 2.0.0 version, parsed strictly and ordered exactly as the specification's
/// §11 defines precedence.
///
/// - The core numbers and numeric pre-release identifiers compare numerically at any length (they
///   are kept as digit strings, so `18446744073709551616` is greater than `9`, never wrapped or
///   compared as text).
/// - A numeric identifier is lower than an alphanumeric one; alphanumeric identifiers compare in
///   ASCII order; a shorter list of identifiers is lower when all before it are equal.
/// - A pre-release version is lower than its release (`1.0.0-rc.1 < 1.0.0`).
/// - Build metadata is kept for display but ignored by `==`, `<` and hashing, as §10 requires:
///   `1.0.0+a` and `1.0.0+b` are the same version.
///
/// Rollback protection depends on this order: a version the order puts below an accepted one is
/// refused, so a mistake here would let an older release back in.
public struct SemanticVersion: Sendable, Comparable, Hashable, CustomStringConvertible {
    /// One dot-separated pre-release identifier.
    public enum Identifier: Sendable, Hashable, Comparable, CustomStringConvertible {
        /// Digits only, no leading zero (unless the identifier is `0`); compared numerically.
        case numeric(String)
        /// Letters, digits and hyphens with at least one non-digit; compared in ASCII order.
        case alphanumeric(String)

        public var description: String {
            switch self {
            case .numeric(let s), .alphanumeric(let s): s
            }
        }

        public static func < (a: Identifier, b: Identifier) -> Bool {
            switch (a, b) {
            case (.numeric(let x), .numeric(let y)): SemanticVersion.numericLess(x, y)
            case (.numeric, .alphanumeric): true
            case (.alphanumeric, .numeric): false
            case (.alphanumeric(let x), .alphanumeric(let y)): Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
            }
        }
    }

    /// The longest version text accepted, in bytes.
    public static let maxLength = 256

    /// MAJOR, MINOR and PATCH as digit strings without leading zeros.
    public let major: String
    public let minor: String
    public let patch: String
    /// The pre-release identifiers (empty for a release).
    public let prerelease: [Identifier]
    /// The build metadata identifiers (ignored for precedence and equality).
    public let build: [String]

    /// Parses `text` as `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]` exactly as SemVer 2.0.0's grammar
    /// defines it: no leading zeros in numbers, no empty identifiers, ASCII letters, digits and
    /// hyphens only, at most ``maxLength`` bytes. Returns `nil` for anything else.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxLength else { return nil }
        var core = bytes[...]
        var build: [String] = []
        var pre: [Identifier] = []
        if let plus = core.firstIndex(of: UInt8(ascii: "+")) {
            let parts = core[(plus + 1)...].split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            for part in parts {
                guard !part.isEmpty, part.allSatisfy(Self.isIdentifierByte) else { return nil }
                build.append(String(decoding: part, as: UTF8.self))
            }
            core = core[..<plus]
        }
        if let dash = core.firstIndex(of: UInt8(ascii: "-")) {
            let parts = core[(dash + 1)...].split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            for part in parts {
                guard !part.isEmpty, part.allSatisfy(Self.isIdentifierByte) else { return nil }
                let s = String(decoding: part, as: UTF8.self)
                if part.allSatisfy(Self.isDigit) {
                    guard part.count == 1 || part.first != UInt8(ascii: "0") else { return nil }
                    pre.append(.numeric(s))
                } else {
                    pre.append(.alphanumeric(s))
                }
            }
            core = core[..<dash]
        }
        let numbers = core.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard numbers.count == 3 else { return nil }
        for n in numbers {
            guard !n.isEmpty, n.allSatisfy(Self.isDigit), n.count == 1 || n.first != UInt8(ascii: "0") else {
                return nil
            }
        }
        major = String(decoding: numbers[0], as: UTF8.self)
        minor = String(decoding: numbers[1], as: UTF8.self)
        patch = String(decoding: numbers[2], as: UTF8.self)
        prerelease = pre
        self.build = build
    }

    /// `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`, exactly as parsed.
    public var description: String {
        var text = "\(major).\(minor).\(patch)"
        if !prerelease.isEmpty { text += "-" + prerelease.map(\.description).joined(separator: ".") }
        if !build.isEmpty { text += "+" + build.joined(separator: ".") }
        return text
    }

    /// True when the version has pre-release identifiers.
    public var isPrerelease: Bool { !prerelease.isEmpty }

    public static func == (a: SemanticVersion, b: SemanticVersion) -> Bool {
        a.major == b.major && a.minor == b.minor && a.patch == b.patch && a.prerelease == b.prerelease
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(major)
        hasher.combine(minor)
        hasher.combine(patch)
        hasher.combine(prerelease)
    }

    public static func < (a: SemanticVersion, b: SemanticVersion) -> Bool {
        for (x, y) in [(a.major, b.major), (a.minor, b.minor), (a.patch, b.patch)] where x != y {
            return numericLess(x, y)
        }
        // A pre-release is lower than the release; two releases with equal cores are equal.
        switch (a.prerelease.isEmpty, b.prerelease.isEmpty) {
        case (true, _): return false
        case (false, true): return true
        case (false, false): return a.prerelease.lexicographicallyPrecedes(b.prerelease)
        }
    }

    /// Numeric order of two digit strings without leading zeros, at any length.
    static func numericLess(_ x: String, _ y: String) -> Bool {
        let a = Array(x.utf8)
        let b = Array(y.utf8)
        if a.count != b.count { return a.count < b.count }
        return a.lexicographicallyPrecedes(b)
    }

    private static func isDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) }

    private static func isIdentifierByte(_ b: UInt8) -> Bool {
        isDigit(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == UInt8(ascii: "-")
    }
}
