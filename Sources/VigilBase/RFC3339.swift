#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// RFC 3339 times in UTC, read and written through the C library's calendar: the one copy of
/// this code for status documents (milliseconds), signed manifests' and revocation lists'
/// `expires`, and TUF metadata's `expires`. Foundation's `ISO8601DateFormatter` would do the
/// same through ICU, whose time-zone data it loads on first use: about 5 MB more resident memory
/// in every host, for one format.
///
/// Readers differ only in what they accept beyond the strict `YYYY-MM-DDTHH:MM:SSZ` form (a
/// ``Syntax``), never in how a time they accept is computed.
package enum RFC3339 {
    /// What a reader accepts beyond `YYYY-MM-DDTHH:MM:SSZ`.
    package struct Syntax: OptionSet, Sendable {
        package let rawValue: Int
        package init(rawValue: Int) { self.rawValue = rawValue }

        /// `t` for `T` and `z` for `Z` (RFC 3339 5.6 allows them).
        package static let lowercase = Syntax(rawValue: 1 << 0)
        /// A space for `T` (RFC 3339 5.6's note).
        package static let spaceSeparator = Syntax(rawValue: 1 << 1)
        /// A fraction of a second (`.5`, `.789`).
        package static let fraction = Syntax(rawValue: 1 << 2)
        /// A `±HH:MM` offset instead of `Z`.
        package static let offset = Syntax(rawValue: 1 << 3)
        /// A leap second (`:60`), read as second 59 of its minute.
        package static let leapSecond = Syntax(rawValue: 1 << 4)

        /// Everything RFC 3339 allows.
        package static let full: Syntax = [.lowercase, .spaceSeparator, .fraction, .offset, .leapSecond]
    }

    /// The seconds since 1970 of the years 0000 to 9999, the times this format can write.
    package static let representable = -62_167_219_200.0...253_402_300_799.0

    /// `seconds` since 1970 as `YYYY-MM-DDTHH:MM:SS.mmmZ`, rounded to the millisecond (with
    /// `milliseconds` false, `YYYY-MM-DDTHH:MM:SSZ`, the whole second it falls in); a time outside
    /// ``representable`` (or NaN) is written as the nearest end of that range.
    package static func string(fromSecondsSince1970 seconds: Double, milliseconds: Bool = true) -> String {
        let seconds = seconds.isNaN ? 0 : min(max(seconds, representable.lowerBound), representable.upperBound)
        var whole = seconds.rounded(.down)
        var millis = milliseconds ? Int(((seconds - whole) * 1000).rounded()) : 0
        if millis == 1000 {
            whole += 1
            millis = 0
        }
        var time = time_t(whole)
        var parts = tm()
        gmtime_r(&time, &parts)
        return "\(digits(Int(parts.tm_year) + 1900, 4))-\(digits(Int(parts.tm_mon) + 1, 2))-"
            + "\(digits(Int(parts.tm_mday), 2))T\(digits(Int(parts.tm_hour), 2)):\(digits(Int(parts.tm_min), 2)):"
            + "\(digits(Int(parts.tm_sec), 2))" + (milliseconds ? ".\(digits(millis, 3))Z" : "Z")
    }

    /// Seconds since 1970 for an RFC 3339 time (`2026-11-23T04:05:06Z`, with or without a
    /// fraction, `Z` or a `±HH:MM` offset; `t`, `z` and a space for `T` accepted as the RFC
    /// allows), or `nil` when `text` is not one.
    package static func secondsSince1970(from text: String) -> Double? {
        parse(text, syntax: .full).map { Double($0.seconds) + $0.fraction }
    }

    /// The time `text` names, as whole seconds since 1970 and the fraction of a second after
    /// them, or `nil` when `text` is not an RFC 3339 time in `syntax` or names no real date
    /// (February 30th).
    package static func parse(_ text: String, syntax: Syntax) -> (seconds: Int64, fraction: Double)? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.number(4), scanner.skip("-"), let month = scanner.number(2), scanner.skip("-"),
            let day = scanner.number(2),
            scanner.skip("T") || (syntax.contains(.lowercase) && scanner.skip("t"))
                || (syntax.contains(.spaceSeparator) && scanner.skip(" ")),
            let hour = scanner.number(2), scanner.skip(":"), let minute = scanner.number(2), scanner.skip(":"),
            let second = scanner.number(2), (1...12).contains(month), (1...31).contains(day), hour < 24,
            minute < 60, second < (syntax.contains(.leapSecond) ? 61 : 60)
        else { return nil }
        var fraction = 0.0
        if syntax.contains(.fraction), scanner.skip(".") {
            var scale = 0.1
            var any = false
            while let digit = scanner.digit() {
                fraction += Double(digit) * scale
                scale /= 10
                any = true
            }
            guard any else { return nil }
        }
        var offset = 0
        if scanner.skip("Z") || (syntax.contains(.lowercase) && scanner.skip("z")) {
            offset = 0
        } else if syntax.contains(.offset), let sign = scanner.sign(), let hours = scanner.number(2),
            scanner.skip(":"), let minutes = scanner.number(2), hours < 24, minutes < 60
        {
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard scanner.atEnd else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(min(second, 59))
        let utc = timegm(&parts)
        // timegm normalises out-of-range fields (February 30th): such a date is not valid.
        guard parts.tm_mday == Int32(day), parts.tm_mon == Int32(month - 1) else { return nil }
        // Digits past double precision can sum to 1: the fraction stays inside its second.
        return (Int64(utc) - Int64(offset), min(fraction, 1.0.nextDown))
    }

    /// `value` in decimal, zero-padded to `width` digits.
    private static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    /// Reads ASCII digits and separators from the front of a byte array.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        mutating func digit() -> Int? {
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
                return nil
            }
            defer { index += 1 }
            return Int(bytes[index] - UInt8(ascii: "0"))
        }

        /// Exactly `count` digits.
        mutating func number(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        mutating func sign() -> Int? {
            if skip("+") { return 1 }
            if skip("-") { return -1 }
            return nil
        }
    }
}
