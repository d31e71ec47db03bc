import Glibc

/// Signed expiry and the clock ratchet: what decides whether a *change* (trusting, updating,
/// rotating) may be accepted now. Expiry never stops a plugin this host already accepted.
public struct Freshness: Sendable, Hashable {
    /// How far the clock may be behind the latest trustworthy time seen before changes are refused
    /// (NTP steps and a drifting RTC stay well within it).
    public static let clockTolerance: Int64 = 3600
    /// The default warning window before a signature expires (`[freshness] grace`).
    public static let defaultGrace: Int64 = 7 * 86400

    /// The time now, in seconds since the Unix epoch (injected; ``systemNow()`` in production).
    public let now: Int64
    /// How long before expiry `check` and `list` warn.
    public let grace: Int64

    /// A policy at `now`.
    public init(now: Int64, grace: Int64 = defaultGrace) {
        self.now = now
        self.grace = grace
    }

    /// The system clock, in whole seconds since the epoch.
    public static func systemNow() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec)
    }

    /// Parses an RFC 3339 date-time (`2027-01-31T12:00:00Z`, `…+02:00`, optional fraction, which is
    /// ignored) into seconds since the epoch; `nil` for anything else (a date without a time or
    /// offset, an impossible date, lower-case separators are accepted as RFC 3339 allows).
    public static func parseRFC3339(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func digits(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= b.count else { return nil }
            var value: Int64 = 0
            for i in range {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                value = value * 10 + Int64(b[i] - 0x30)
            }
            return value
        }
        guard b.count >= 20, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54 || b[10] == 0x74, b[13] == 0x3A,
            b[16] == 0x3A, let year = digits(0..<4), let month = digits(5..<7), let day = digits(8..<10),
            let hour = digits(11..<13), let minute = digits(14..<16), let second = digits(17..<19)
        else { return nil }
        var i = 19
        if b[i] == 0x2E {
            i += 1
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1 }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offset: Int64 = 0
        if b[i] == 0x5A || b[i] == 0x7A {
            i += 1
        } else if b[i] == 0x2B || b[i] == 0x2D {
            guard b.count >= i + 6, b[i + 3] == 0x3A, let oh = digits(i + 1..<i + 3), let om = digits(i + 4..<i + 6),
                oh < 24, om < 60
            else { return nil }
            offset = (oh * 3600 + om * 60) * (b[i] == 0x2B ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count, (1...12).contains(month), hour < 24, minute < 60, second <= 60 else { return nil }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths: [Int64] = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day >= 1, day <= lengths[Int(month) - 1] else { return nil }
        return daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + min(second, 59) - offset
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the epoch.
    public static func formatRFC3339(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let rest = seconds - days * 86400
        let (y, m, d) = civilFromDays(days)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let year = String(y)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-\(two(m))-\(two(d))T"
            + "\(two(rest / 3600)):\(two(rest % 3600 / 60)):\(two(rest % 60))Z"
    }

    /// A duration for people: `3d 4h`, `5h 10m`, `42s`.
    public static func formatDuration(_ seconds: Int64) -> String {
        let s = max(0, seconds)
        if s >= 86400 { return "\(s / 86400)d \(s % 86400 / 3600)h" }
        if s >= 3600 { return "\(s / 3600)h \(s % 3600 / 60)m" }
        if s >= 60 { return "\(s / 60)m" }
        return "\(s)s"
    }

    /// Parses `7d`, `12h`, `30m`, `90s` (a whole number and one unit) into seconds.
    public static func parseDuration(_ text: String) -> Int64? {
        guard let unit = text.last, let value = Int64(text.dropLast()), value >= 0, text.first != "+" else {
            return nil
        }
        let scale: Int64
        switch unit {
        case "d": scale = 86400
        case "h": scale = 3600
        case "m": scale = 60
        case "s": scale = 1
        default: return nil
        }
        let (result, overflow) = value.multipliedReportingOverflow(by: scale)
        return overflow ? nil : result
    }

    // Howard Hinnant's civil-date algorithms.
    static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func civilFromDays(_ z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// Refuses a change (trusting, updating or rotating to `manifest`) that the clock or the
    /// manifest's signed expiry does not allow.
    ///
    /// - Parameter ratchet: the latest trustworthy time this host has seen.
    /// - Throws: ``CoreError`` `.clockRolledBack` when the clock is more than
    ///   ``clockTolerance`` behind `ratchet`; `.expired` when `expires` is not after the later of
    ///   the clock and the ratchet.
    public func checkChange(
        plugin: String, version: SemanticVersion, expires: Int64?, ratchet: Int64?, what: String
    ) throws(CoreError) {
        if let ratchet, now + Self.clockTolerance < ratchet {
            throw CoreError(
                code: .clockRolledBack, plugin: plugin,
                message: "the system clock (\(Self.formatRFC3339(now))) is behind the latest time this host has "
                    + "already seen (\(Self.formatRFC3339(ratchet))) by more than \(Self.formatDuration(Self.clockTolerance)), "
                    + "so \(what) is refused (a clock set back could revive an expired release); the plugin keeps "
                    + "running as it was — fix the clock (timedatectl, NTP) and try again")
        }
        let effective = max(now, ratchet ?? now)
        if let expires, expires <= effective {
            throw CoreError(
                code: .expired, plugin: plugin,
                message: "its signed manifest (version \(version)) expired at \(Self.formatRFC3339(expires)), so "
                    + "\(what) is refused (an expired release could be a frozen, outdated copy); an already "
                    + "accepted version keeps running — install a current release from the publisher, who re-signs "
                    + "with a later \"expires\"")
        }
    }
}
