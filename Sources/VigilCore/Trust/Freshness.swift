import Glibc
import VigilBase

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
    /// ignored; a leap second counts as second 59) into seconds since the epoch; `nil` for anything
    /// else (a date without a time or offset, an impossible date, a space for `T`); lower-case
    /// separators are accepted as RFC 3339 allows.
    public static func parseRFC3339(_ text: String) -> Int64? {
        RFC3339.parse(text, syntax: [.lowercase, .fraction, .offset, .leapSecond])?.seconds
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the epoch (a time outside the years 0000 to 9999 as
    /// the nearest end of that range).
    public static func formatRFC3339(_ seconds: Int64) -> String {
        RFC3339.string(fromSecondsSince1970: Double(seconds), milliseconds: false)
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
