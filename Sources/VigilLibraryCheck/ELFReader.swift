extension ELFImage {
    /// Bounds-checked little-endian reads.
    struct Reader {
        let bytes: [UInt8]

        func offset(_ base: UInt64, plus delta: UInt64) throws(Problem) -> UInt64 {
            let (sum, overflow) = base.addingReportingOverflow(delta)
            guard !overflow, sum <= UInt64(bytes.count) else {
                throw Problem(.malformed, "an offset points outside the file")
            }
            return sum
        }

        func check(_ at: UInt64, _ width: UInt64) throws(Problem) -> Int {
            let (end, overflow) = at.addingReportingOverflow(width)
            guard !overflow, end <= UInt64(bytes.count) else { throw Problem(.malformed, "the file is truncated") }
            return Int(at)
        }

        func u8(_ at: UInt64) throws(Problem) -> UInt8 { bytes[try check(at, 1)] }

        func u16(_ at: UInt64) throws(Problem) -> UInt16 {
            let i = try check(at, 2)
            return UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8
        }

        func u32(_ at: UInt64) throws(Problem) -> UInt32 {
            let i = try check(at, 4)
            var v: UInt32 = 0
            for k in 0..<4 { v |= UInt32(bytes[i + k]) << (8 * UInt32(k)) }
            return v
        }

        func u64(_ at: UInt64) throws(Problem) -> UInt64 {
            let i = try check(at, 8)
            var v: UInt64 = 0
            for k in 0..<8 { v |= UInt64(bytes[i + k]) << (8 * UInt64(k)) }
            return v
        }

        /// True when the bytes at `at` are `expected` (reads at most `expected.count` bytes).
        func equals(_ at: UInt64, _ expected: [UInt8]) throws(Problem) -> Bool {
            let i = try check(at, UInt64(expected.count))
            return bytes[i..<i + expected.count].elementsEqual(expected)
        }

        /// A NUL-terminated UTF-8 string starting at `at`, ending before `limit`, of at most
        /// `maximum` bytes (reads at most `maximum + 1` bytes).
        func cString(_ at: UInt64, limit: UInt64, maximum: Int) throws(Problem) -> String {
            let end = min(limit, UInt64(bytes.count), at &+ UInt64(maximum) &+ 1)
            var i = at
            while i < end && bytes[Int(i)] != 0 { i += 1 }
            guard i < end else {
                if i - at > UInt64(maximum) {
                    throw Problem(.stringTooLong, "a string in it is longer than \(maximum) bytes")
                }
                throw Problem(.addressUnmapped, "a string runs past its table")
            }
            guard let s = String(validating: bytes[Int(at)..<Int(i)], as: UTF8.self) else {
                throw Problem(.malformed, "a name in its dynamic section is not UTF-8")
            }
            return s
        }
    }
}

/// `value` in hexadecimal, for messages.
func hex(_ value: UInt64) -> String { String(value, radix: 16) }
