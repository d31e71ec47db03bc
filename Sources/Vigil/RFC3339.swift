#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// RFC 3339 times in UTC with milliseconds (`2026-11-23T04:05:06.789Z`), through the C library's
/// calendar. Foundation's `ISO8601DateFormatter` would do the same through ICU, whose time-zone
/// data it loads on first use: about 5 MB more resident memory in every host, for one format.
enum RFC3339 {
    /// The seconds since 1970 of the years 0000 to 9999, the times this format can write.
    static let representable = -62_167_219_200.0...253_402_300_799.0

    /// `seconds` since 1970 as `YYYY-MM-DDTHH:MM:SS.mmmZ`, rounded to the millisecond; a time
    /// outside ``representable`` (or NaN) is written as the nearest end of that range.
    static func string(fromSecondsSince1970 seconds: Double) -> String {
        let seconds = seconds.isNaN ? 0 : min(max(seconds, representable.lowerBound), representable.upperBound)
        var whole = seconds.rounded(.down)
        var millis = Int(((seconds - whole) * 1000).rounded())
        if millis == 1000 {
            whole += 1
            millis = 0
        }
        var time = time_t(whole)
        var parts = tm()
        gmtime_r(&time, &parts)
        return "\(digits(Int(parts.tm_year) + 1900, 4))-\(digits(Int(parts.tm_mon) + 1, 2))-"
            + "\(digits(Int(parts.tm_mday), 2))T\(digits(Int(parts.tm_hour), 2)):\(digits(Int(parts.tm_min), 2)):"
            + "\(digits(Int(parts.tm_sec), 2)).\(digits(millis, 3))Z"
    }

    /// Seconds since 1970 for an RFC 3339 time (`2026-11-23T04:05:06Z`, with or without a
    /// fraction, `Z` or a `±HH:MM` offset; `t`, `z` and a space for `T` accepted as the RFC
    /// allows), or `nil` when `text` is not one.
    static func secondsSince1970(from text: String) -> Double? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.number(4), scanner.skip("-"), let month = scanner.number(2), scanner.skip("-"),
            let day = scanner.number(2), scanner.skip("T") || scanner.skip("t") || scanner.skip(" "),
            let hour = scanner.number(2), scanner.skip(":"), let minute = scanner.number(2), scanner.skip(":"),
            let second = scanner.number(2), (1...12).contains(month), (1...31).contains(day), hour < 24,
            minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if scanner.skip(".") {
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
        if scanner.skip("Z") || scanner.skip("z") {
            offset = 0
        } else if let sign = scanner.sign(), let hours = scanner.number(2), scanner.skip(":"),
            let minutes = scanner.number(2), hours < 24, minutes < 60
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
        parts.tm_sec = Int32(second)
        let utc = timegm(&parts)
        // timegm normalises out-of-range fields (February 30th): such a date is not valid.
        guard parts.tm_mday == Int32(day), parts.tm_mon == Int32(month - 1) else { return nil }
        return Double(utc - offset) + fraction
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
