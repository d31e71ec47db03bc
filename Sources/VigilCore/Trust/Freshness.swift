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

    /// Refuses a change (trusting, updating or rotating) while the plugin's signed revocation list
    /// has expired: a list that is no longer fresh may be withholding a newer revocation (a freeze
    /// attack), so nothing new is accepted under it. Like the manifest's own expiry, this never
    /// stops a version this host already accepted, and an expired list still revokes what it names.
    ///
    /// - Throws: ``CoreError`` `.revocationExpired` when the list's `expires` is not after the later
    ///   of the clock and `ratchet`.
    public func checkRevocations(
        plugin: String, list: RevocationList?, ratchet: Int64?, what: String
    ) throws(CoreError) {
        guard let list, let expires = list.expires, expires <= max(now, ratchet ?? now) else { return }
        throw CoreError(
            code: .revocationExpired, plugin: plugin,
            message: "its signed revocation list (version \(list.version)) expired at \(Self.formatRFC3339(expires)), "
                + "so \(what) is refused (an expired list could be hiding a newer revocation); the accepted version "
                + "keeps running — the publisher re-signs the list with a later \"expires\" (`vigil plugin revoke "
                + "--expires`), then install it with the plugin")
    }
}

/// How long a plugin's signature stays fresh: its signed manifest's `expires` and the host's
/// `[freshness] grace`, as `vigil status`, `vigil check` and `vigil plugin list` show them.
public struct SignatureFreshness: Sendable, Hashable {
    /// Where the signature is at a given time.
    public enum Stage: String, Sendable, Hashable {
        /// More than the grace period left.
        case fresh
        /// Within the grace period: still accepted, renew soon.
        case expiring
        /// Expired: the accepted version keeps running, changes are refused.
        case expired
    }

    /// When the signed manifest stops being fresh (seconds since the epoch).
    public let expires: Int64
    /// `[freshness] grace`, in seconds.
    public let grace: Int64

    /// A signature expiring at `expires`, warned about `grace` seconds before.
    public init(expires: Int64, grace: Int64) {
        self.expires = expires
        self.grace = grace
    }

    /// Seconds left at `now` (0 once expired).
    public func remaining(now: Int64) -> Int64 { max(0, expires - now) }

    /// The stage at `now`.
    public func stage(now: Int64) -> Stage {
        expires <= now ? .expired : expires - now <= grace ? .expiring : .fresh
    }

    /// One line for people: `fresh for 3d 4h (until 2027-01-31T12:00:00Z)`, with the grace
    /// warning or what expiry means.
    public func summary(now: Int64) -> String {
        let until = Freshness.formatRFC3339(expires)
        switch stage(now: now) {
        case .fresh:
            return "signature fresh for \(Freshness.formatDuration(expires - now)) (until \(until))"
        case .expiring:
            return "signature fresh for \(Freshness.formatDuration(expires - now)) (until \(until)) — warning: "
                + "within [freshness] grace (\(Freshness.formatDuration(grace))); ask the publisher for a re-signed release"
        case .expired:
            return "signature expired at \(until) — it keeps running, but updates, re-trusting and key rotations "
                + "are refused until the publisher re-signs with a later \"expires\""
        }
    }
}
