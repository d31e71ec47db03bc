/// Rules for plugin names: `^[a-z][a-z0-9-]{0,63}$`, and never a reserved `vigil.toml` table
/// name (`host`, `trusted_plugins`, `freshness`).
public enum PluginName {
    /// Names that are `vigil.toml` tables of their own and so cannot name a plugin.
    public static let reserved: Set<String> = ["host", "trusted_plugins", "freshness"]

    /// True when `name` is a valid plugin name.
    public static func isValid(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        guard let first = scalars.first, ("a"..."z").contains(first), scalars.count <= 64 else { return false }
        guard scalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }) else {
            return false
        }
        return !reserved.contains(name)
    }

    /// Why `name` is not valid, phrased for an error message, or `nil` when it is valid.
    public static func problem(_ name: String) -> String? {
        if isValid(name) { return nil }
        if reserved.contains(name) { return "\"\(name)\" is reserved for a vigil.toml table" }
        return "\(JSONValue.quote(Sanitizer.display(name))) is not a valid plugin name "
            + "(use 1–64 characters: a lower-case letter, then lower-case letters, digits or '-')"
    }
}

/// Makes publisher-controlled text safe to show on a terminal.
public enum Sanitizer {
    /// `text` with every control character (C0, DEL, C1, and bidirectional overrides) replaced
    /// by `?`, so signed or unsigned text from a plugin cannot move the cursor, recolour the
    /// terminal or reorder what a reviewer sees.
    ///
    /// This is the one terminal-escaping function: the CLI applies it when it renders any text,
    /// never earlier (JSON output and stored values keep the exact text).
    ///
    /// - Parameter keepingNewlines: keep `\n` (multi-line text of Vigil's own); every other
    ///   control character is still replaced.
    public static func display(_ text: String, keepingNewlines: Bool = false) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if keepingNewlines && v == 0x0A {
                out.append(scalar)
                continue
            }
            out.append(isUnsafe(scalar) ? "?" : scalar)
        }
        return String(out)
    }

    /// True for the scalars ``display(_:keepingNewlines:)`` replaces: C0, DEL, C1, line and
    /// paragraph separators, and bidirectional controls.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        let isControl = v < 0x20 || v == 0x7F || (0x80..<0xA0).contains(v) || v == 0x2028 || v == 0x2029
        let isBidi =
            (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v) || v == 0x200E || v == 0x200F
            || v == 0x061C
        return isControl || isBidi
    }
}
