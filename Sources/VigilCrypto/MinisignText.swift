/// The line layout shared by minisign's key and signature files.
enum MinisignText {
    static let untrustedCommentPrefix = "untrusted comment: "
    static let trustedCommentPrefix = "trusted comment: "

    /// The longest trusted comment minisign 0.11 can read back (its line buffer is 8192 bytes,
    /// holding the prefix, the comment, the line feed and a NUL).
    static let maxTrustedCommentBytes = 8192 - trustedCommentPrefix.utf8.count - 2
    /// The longest untrusted comment minisign 0.11 reads as one line (1024-byte buffer).
    static let maxUntrustedCommentBytes = 1024 - untrustedCommentPrefix.utf8.count - 2

    /// Why a file's text could not be split into lines.
    struct Problem: Error {
        let reason: String
    }

    /// Splits a file into lines at line feeds. A line may end in CR LF (the CR is dropped) and the
    /// file may end with one line break; a carriage return anywhere else is refused, because tools
    /// disagree about where such a line ends.
    static func lines(_ bytes: [UInt8]) throws(Problem) -> [ArraySlice<UInt8>] {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true {
            lines.removeLast()
        }
        for index in lines.indices {
            if lines[index].last == UInt8(ascii: "\r") {
                lines[index] = lines[index].dropLast()
            }
            if lines[index].contains(UInt8(ascii: "\r")) {
                throw Problem(reason: "line \(index + 1) contains a carriage return that does not end the line")
            }
        }
        return lines
    }

    /// The text after `prefix` if `line` starts with it.
    static func text(of line: ArraySlice<UInt8>, after prefix: String) -> ArraySlice<UInt8>? {
        let prefixBytes = Array(prefix.utf8)
        guard line.starts(with: prefixBytes) else { return nil }
        return line.dropFirst(prefixBytes.count)
    }

    /// A key id as minisign displays it: the 8 stored bytes read as a little-endian integer, in
    /// upper-case hex. `padded` gives all 16 digits; minisign's public key comment omits leading zeros.
    static func keyIDHex(_ keyID: [UInt8], padded: Bool = true) -> String {
        let value = littleEndianUInt64(keyID[...])
        let digits = String(value, radix: 16, uppercase: true)
        return padded ? String(repeating: "0", count: max(0, 16 - digits.count)) + digits : digits
    }

    /// Eight bytes read as a little-endian unsigned integer, as minisign stores numbers.
    static func littleEndianUInt64(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        precondition(bytes.count == 8)
        return bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// Checks that a comment can be written on one line and read back by minisign.
    static func checkComment(_ comment: String, which: String, maxBytes: Int) throws(CryptoError) {
        if let bad = comment.unicodeScalars.first(where: { $0 != "\t" && $0.properties.generalCategory == .control }) {
            let hex = String(bad.value, radix: 16, uppercase: true)
            throw .invalidComment(
                which,
                "it contains the control character U+\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex)")
        }
        guard comment.utf8.count <= maxBytes else {
            throw .invalidComment(which, "it is \(comment.utf8.count) bytes long; the limit is \(maxBytes)")
        }
    }
}
