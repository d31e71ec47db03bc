#if canImport(Glibc)
import Glibc
#endif

/// Number and column formatting for the CLI's text output, as Foundation's `String(format:)` and
/// `padding(toLength:withPad:startingAt:)` give it, without linking full Foundation.
enum TextFormat {
    /// `value` with `digits` decimals, as `printf("%.*f")` (and `String(format:)`) writes it.
    static func fixed(_ value: Double, digits: Int) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = withVaList([value]) { vsnprintf(&buffer, buffer.count, "%.\(digits)f", $0) }
        guard count >= 0 else { return "\(value)" }
        return String(
            decoding: buffer.prefix(min(Int(count), buffer.count - 1)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `text` cut or padded with spaces to `width` UTF-16 units, as `padding(toLength:withPad: " ",
    /// startingAt: 0)` does.
    static func padded(_ text: String, to width: Int) -> String {
        let units = text.utf16.count
        if units >= width { return String(decoding: Array(text.utf16.prefix(width)), as: UTF16.self) }
        return text + String(repeating: " ", count: width - units)
    }
}
