/// The one-letter escapes that JSON and TOML basic strings share: `\"`, `\\`, `\b`, `\t`, `\n`,
/// `\f` and `\r`. Each parser handles the rest of its own grammar (JSON's `\/` and `\u`, TOML's
/// `\e`, `\u`, `\U` and `\x`).
package enum StringEscape {
    /// The scalar that a backslash followed by `letter` stands for, if `letter` is a shared escape.
    package static func scalar(for letter: UInt8) -> Unicode.Scalar? {
        switch letter {
        case UInt8(ascii: "\""): "\""
        case UInt8(ascii: "\\"): "\\"
        case UInt8(ascii: "b"): "\u{08}"
        case UInt8(ascii: "t"): "\t"
        case UInt8(ascii: "n"): "\n"
        case UInt8(ascii: "f"): "\u{0C}"
        case UInt8(ascii: "r"): "\r"
        default: nil
        }
    }
}
