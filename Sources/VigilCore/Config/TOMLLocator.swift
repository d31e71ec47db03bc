public import VigilBase

/// A position in a text file, for compiler-style diagnostics (`path:line:column`).
public typealias SourceLocation = TextLocation

/// Finds where keys, table headers and array elements are in a TOML document.
///
/// TOMLKit validates the document but reports no positions for values, so this small scanner
/// walks the same text structurally (comments, the four string forms, arrays, inline tables,
/// headers, dotted keys) and records byte ranges. It must only see text that already parsed with
/// TOMLKit (see ``HostConfiguration/parseTOML(_:path:)``); on anything unexpected, and past
/// ``maxDepth`` nested arrays and inline tables, it stops recording rather than failing.
package struct TOMLLocator: Sendable {
    /// The deepest nesting of arrays and inline tables the scanner follows (TOMLKit refuses more
    /// than 256 before the scanner ever runs; this bound keeps the scanner safe on its own).
    static let maxDepth = 256

    struct Entry: Sendable {
        /// Full key path: the enclosing table's path followed by the (dotted) key.
        var path: [String]
        /// Byte offset of the key's first byte.
        var keyStart: Int
        /// Byte range of the value.
        var valueRange: Range<Int>
        /// Byte range of the whole statement's lines: from the start of the key's line through the
        /// newline that ends the value's line (trailing comment included).
        var lineRange: Range<Int>
        /// The key path relative to the enclosing `[header]`.
        var relativeKey: [String]
        /// True for a key inside an inline table or array element.
        var isNested: Bool
    }

    struct Header: Sendable {
        var path: [String]
        var isArray: Bool
        var start: Int
        /// From the start of the header line through its newline.
        var lineRange: Range<Int>
    }

    struct Element: Sendable {
        /// The array's key path.
        var arrayPath: [String]
        var index: Int
        var stringValue: String?
        var start: Int
    }

    let bytes: [UInt8]
    private(set) var entries: [Entry] = []
    private(set) var headers: [Header] = []
    private(set) var elements: [Element] = []
    private var lineStarts: [Int] = [0]

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
        lineStarts = Self.lineStarts(bytes)
        var scanner = Scanner(bytes: bytes)
        scanner.run()
        entries = scanner.entries
        headers = scanner.headers
        elements = scanner.elements
    }

    private static func lineStarts(_ bytes: [UInt8]) -> [Int] {
        var starts = [0]
        for (i, b) in bytes.enumerated() where b == 0x0A { starts.append(i + 1) }
        return starts
    }

    /// Line and column of `offset` in text that was never scanned (it may not be valid TOML).
    static func lineColumn(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        lineColumn(of: offset, in: bytes, lineStarts: lineStarts(bytes))
    }

    /// Line and column (1-based; column in Unicode scalars) of a byte offset.
    package func lineColumn(of offset: Int) -> (line: Int, column: Int) {
        Self.lineColumn(of: offset, in: bytes, lineStarts: lineStarts)
    }

    private static func lineColumn(of offset: Int, in bytes: [UInt8], lineStarts: [Int]) -> (line: Int, column: Int) {
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if lineStarts[mid] <= offset { low = mid } else { high = mid - 1 }
        }
        let start = lineStarts[low]
        let prefix = bytes[start..<min(offset, bytes.count)]
        let column = prefix.reduce(0) { $1 & 0xC0 == 0x80 ? $0 : $0 + 1 } + 1
        return (low + 1, column)
    }

    /// The byte offset where `keyPath` is defined: a key, a table header, or a string element of
    /// an array (the last component being the element's value). Falls back to the first key or
    /// header under `keyPath`.
    package func offset(of keyPath: [String]) -> Int? {
        if let e = entries.first(where: { $0.path == keyPath }) { return e.keyStart }
        if let h = headers.first(where: { $0.path == keyPath }) { return h.start }
        if keyPath.count >= 2 {
            let arrayPath = Array(keyPath.dropLast())
            if let el = elements.first(where: { $0.arrayPath == arrayPath && $0.stringValue == keyPath.last }) {
                return el.start
            }
        }
        let prefixed = entries.map { ($0.keyStart, $0.path) } + headers.map { ($0.start, $0.path) }
        return prefixed.filter { $0.1.starts(with: keyPath) }.map(\.0).min()
    }

    private struct Scanner {
        let bytes: [UInt8]
        var pos = 0
        var table: [String] = []
        var entries: [Entry] = []
        var headers: [Header] = []
        var elements: [Element] = []

        init(bytes: [UInt8]) { self.bytes = bytes }

        func peek(_ offset: Int = 0) -> UInt8? { pos + offset < bytes.count ? bytes[pos + offset] : nil }

        func at(_ s: String) -> Bool {
            let u = Array(s.utf8)
            return bytes.count - pos >= u.count && Array(bytes[pos..<pos + u.count]) == u
        }

        mutating func skipSpaces() {
            while let b = peek(), b == 0x20 || b == 0x09 { pos += 1 }
        }

        mutating func skipComment() {
            if peek() == UInt8(ascii: "#") {
                while let b = peek(), b != 0x0A { pos += 1 }
            }
        }

        /// Skips spaces, comments and newlines (inside arrays and inline tables).
        mutating func skipBlank() {
            while true {
                skipSpaces()
                skipComment()
                if peek() == 0x0A || peek() == 0x0D { pos += 1 } else { return }
            }
        }

        /// Moves past the rest of the line (spaces, comment, CR) including its newline.
        mutating func finishLine() {
            skipSpaces()
            skipComment()
            while let b = peek(), b != 0x0A { pos += 1 }
            if peek() == 0x0A { pos += 1 }
        }

        func lineStart(of offset: Int) -> Int {
            var i = offset
            while i > 0 && bytes[i - 1] != 0x0A { i -= 1 }
            return i
        }

        mutating func run() {
            while pos < bytes.count {
                let before = pos
                skipSpaces()
                guard let b = peek() else { return }
                if b == 0x0A || b == 0x0D {
                    pos += 1
                    continue
                }
                if b == UInt8(ascii: "#") {
                    finishLine()
                    continue
                }
                let lineStart = lineStart(of: pos)
                if b == UInt8(ascii: "[") {
                    let start = pos
                    let isArray = peek(1) == UInt8(ascii: "[")
                    pos += isArray ? 2 : 1
                    guard let path = key() else { return }
                    skipSpaces()
                    pos += isArray ? 2 : 1
                    table = path
                    finishLine()
                    headers.append(Header(path: path, isArray: isArray, start: start, lineRange: lineStart..<pos))
                } else {
                    let keyStart = pos
                    guard let k = key() else { return }
                    skipSpaces()
                    guard peek() == UInt8(ascii: "=") else { return }
                    pos += 1
                    skipSpaces()
                    let valueStart = pos
                    guard value(path: table + k, depth: 0) != nil || pos > valueStart else { return }
                    let valueEnd = pos
                    finishLine()
                    entries.append(
                        Entry(
                            path: table + k, keyStart: keyStart, valueRange: valueStart..<valueEnd,
                            lineRange: lineStart..<pos, relativeKey: k, isNested: false))
                }
                if pos == before { return }
            }
        }

        /// Reads a (possibly dotted, possibly quoted) key.
        mutating func key() -> [String]? {
            var parts: [String] = []
            while true {
                skipSpaces()
                guard let b = peek() else { return nil }
                if b == UInt8(ascii: "\"") {
                    guard let s = basicString() else { return nil }
                    parts.append(s)
                } else if b == UInt8(ascii: "'") {
                    guard let s = literalString() else { return nil }
                    parts.append(s)
                } else {
                    let start = pos
                    while let c = peek(),
                        (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || (0x30...0x39).contains(c)
                            || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
                    {
                        pos += 1
                    }
                    guard pos > start else { return nil }
                    parts.append(String(decoding: bytes[start..<pos], as: UTF8.self))
                }
                skipSpaces()
                if peek() == UInt8(ascii: ".") {
                    pos += 1
                    continue
                }
                return parts
            }
        }

        /// Reads a value; returns its string contents for strings, "" for other values, nil on failure
        /// (including nesting deeper than ``TOMLLocator/maxDepth``).
        mutating func value(path: [String], depth: Int) -> String? {
            guard depth < TOMLLocator.maxDepth, let b = peek() else { return nil }
            switch b {
            case UInt8(ascii: "\""):
                if at("\"\"\"") { return multiline(quote: UInt8(ascii: "\""), escapes: true) }
                return basicString()
            case UInt8(ascii: "'"):
                if at("'''") { return multiline(quote: UInt8(ascii: "'"), escapes: false) }
                return literalString()
            case UInt8(ascii: "["):
                pos += 1
                var index = 0
                while true {
                    skipBlank()
                    guard let c = peek() else { return nil }
                    if c == UInt8(ascii: "]") {
                        pos += 1
                        return ""
                    }
                    let start = pos
                    let s = value(path: path + ["[\(index)]"], depth: depth + 1)
                    if pos == start { return nil }
                    let isString = c == UInt8(ascii: "\"") || c == UInt8(ascii: "'")
                    elements.append(
                        Element(arrayPath: path, index: index, stringValue: isString ? s : nil, start: start))
                    index += 1
                    skipBlank()
                    if peek() == UInt8(ascii: ",") { pos += 1 }
                }
            case UInt8(ascii: "{"):
                pos += 1
                while true {
                    skipBlank()
                    guard let c = peek() else { return nil }
                    if c == UInt8(ascii: "}") {
                        pos += 1
                        return ""
                    }
                    let keyStart = pos
                    guard let k = key() else { return nil }
                    skipSpaces()
                    guard peek() == UInt8(ascii: "=") else { return nil }
                    pos += 1
                    skipSpaces()
                    let valueStart = pos
                    _ = value(path: path + k, depth: depth + 1)
                    if pos == valueStart { return nil }
                    entries.append(
                        Entry(
                            path: path + k, keyStart: keyStart, valueRange: valueStart..<pos,
                            lineRange: keyStart..<pos, relativeKey: k, isNested: true))
                    skipBlank()
                    if peek() == UInt8(ascii: ",") { pos += 1 }
                }
            default:
                // Numbers, booleans, dates and times (a date-time may contain one space).
                let start = pos
                func isEnd(_ c: UInt8) -> Bool {
                    c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D || c == UInt8(ascii: ",")
                        || c == UInt8(ascii: "]") || c == UInt8(ascii: "}") || c == UInt8(ascii: "#")
                }
                while let c = peek(), !isEnd(c) { pos += 1 }
                let token = bytes[start..<pos]
                if token.count == 10, token.dropFirst(4).first == UInt8(ascii: "-"), peek() == 0x20,
                    let d = peek(1), (0x30...0x39).contains(d)
                {
                    pos += 1
                    while let c = peek(), !isEnd(c) { pos += 1 }
                }
                return pos > start ? "" : nil
            }
        }

        mutating func basicString() -> String? {
            pos += 1
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush() {
                scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
                raw.removeAll()
            }
            while let b = peek() {
                if b == UInt8(ascii: "\"") {
                    pos += 1
                    flush()
                    return String(scalars)
                }
                if b == 0x0A { return nil }
                if b == UInt8(ascii: "\\") {
                    flush()
                    guard let e = peek(1) else { return nil }
                    pos += 2
                    if let scalar = StringEscape.scalar(for: e) {
                        scalars.append(scalar)
                        continue
                    }
                    switch e {
                    case UInt8(ascii: "e"): scalars.append("\u{1B}")
                    case UInt8(ascii: "u"), UInt8(ascii: "U"), UInt8(ascii: "x"):
                        let n = e == UInt8(ascii: "u") ? 4 : e == UInt8(ascii: "U") ? 8 : 2
                        guard pos + n <= bytes.count,
                            let v = UInt32(String(decoding: bytes[pos..<pos + n], as: UTF8.self), radix: 16),
                            let scalar = Unicode.Scalar(v)
                        else { return nil }
                        scalars.append(scalar)
                        pos += n
                    default: scalars.append(Unicode.Scalar(e))
                    }
                    continue
                }
                raw.append(b)
                pos += 1
            }
            return nil
        }

        mutating func literalString() -> String? {
            pos += 1
            let start = pos
            while let b = peek() {
                if b == UInt8(ascii: "'") {
                    let s = String(decoding: bytes[start..<pos], as: UTF8.self)
                    pos += 1
                    return s
                }
                if b == 0x0A { return nil }
                pos += 1
            }
            return nil
        }

        /// A multi-line string; its contents are not decoded (only located).
        mutating func multiline(quote: UInt8, escapes: Bool) -> String? {
            pos += 3
            while let b = peek() {
                if escapes && b == UInt8(ascii: "\\") {
                    pos += 2
                    continue
                }
                if b == quote && peek(1) == quote && peek(2) == quote {
                    pos += 3
                    // Up to two more quotes belong to the content.
                    var extra = 0
                    while extra < 2 && peek() == quote {
                        pos += 1
                        extra += 1
                    }
                    return ""
                }
                pos += 1
            }
            return nil
        }
    }
}
