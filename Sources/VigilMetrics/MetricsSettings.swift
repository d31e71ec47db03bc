public import VigilBase
public import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

/// A ``MetricsSettingsError``'s kind: each refusal of `[metrics]` has its own code.
public enum MetricsSettingsCode: String, ErrorCode {
    /// A key of `[metrics]` is unknown or has the wrong type.
    case invalid = "metrics-invalid"
    /// `listen` is neither `HOST:PORT` (an IP address or `localhost`) nor `unix:/ABSOLUTE/PATH`.
    case listenInvalid = "metrics-listen-invalid"
    /// `listen` names an address other than loopback without `allow_non_loopback = true`.
    case listenNotLoopback = "metrics-listen-not-loopback"
    /// `textfile` is not an absolute path ending in `.prom`.
    case textfileInvalid = "metrics-textfile-invalid"
}

/// A refusal of `[metrics]` in `vigil.toml`.
public typealias MetricsSettingsError = CodedError<MetricsSettingsCode>

/// Where the `/metrics`, `/healthz` and `/readyz` endpoints listen.
public enum MetricsListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// A TCP address: an IPv4 or IPv6 literal or `localhost`, and a port.
    case inet(host: String, port: Int)
    /// A Unix stream socket at an absolute path.
    case unix(path: String)

    public var description: String {
        switch self {
        case .inet(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        }
    }

    /// True for a Unix socket, `localhost`, 127.0.0.0/8 and ::1.
    public var isLoopback: Bool {
        switch self {
        case .unix: return true
        case .inet(let host, _):
            if host == "localhost" || host == "::1" { return true }
            var v4 = in_addr()
            guard inet_pton(AF_INET, host, &v4) == 1 else { return false }
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
    }

    /// Reads `HOST:PORT`, `[V6]:PORT` or `unix:/PATH`.
    /// - Throws: ``MetricsSettingsCode/listenInvalid`` with the reason and the fix.
    static func parse(_ text: String) throws(MetricsSettingsError) -> MetricsListenAddress {
        func failure(_ reason: String) -> MetricsSettingsError {
            MetricsSettingsError(
                code: .listenInvalid, message: "[metrics] listen = \(String(reflecting: text)): \(reason)")
        }
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst(5))
            guard path.hasPrefix("/"), path.utf8.count < 108, !path.contains("\0") else {
                throw failure("a Unix socket needs an absolute path shorter than 108 bytes (unix:/run/NAME.sock)")
            }
            return .unix(path: path)
        }
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw failure("an IPv6 address is written [ADDRESS]:PORT, as in [::1]:9464")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw failure("expected HOST:PORT (such as 127.0.0.1:9464) or unix:/PATH")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw failure("the port must be a number from 1 to 65535")
        }
        let name = String(host)
        var v4 = in_addr()
        var v6 = in6_addr()
        guard name == "localhost" || inet_pton(AF_INET, name, &v4) == 1 || inet_pton(AF_INET6, name, &v6) == 1
        else {
            throw failure(
                "\(String(reflecting: name)) is not an IP address or localhost (host names are not resolved)")
        }
        return .inet(host: name, port: port)
    }
}

/// `[metrics]` in `vigil.toml`: both ways out are off unless named.
///
/// ```toml
/// [metrics]
/// textfile = "/var/lib/prometheus/node-exporter/vigil.prom"
/// listen = "127.0.0.1:9464"
/// ```
public struct MetricsSettings: Sendable, Hashable {
    /// The node_exporter textfile to keep up to date (`nil`: none).
    public var textfile: String?
    /// Where `/metrics`, `/healthz` and `/readyz` are served (`nil`: nowhere).
    public var listen: MetricsListenAddress?
    /// The operator's opt-in to a `listen` address other than loopback.
    public var allowNonLoopback = false

    /// The keys `[metrics]` accepts.
    public static let keys = ["textfile", "listen", "allow_non_loopback"]

    /// True when either way out is on.
    public var isEnabled: Bool { textfile != nil || listen != nil }

    /// No metrics (the default).
    public init() {}

    /// Reads a `[metrics]` table (`nil`: the defaults).
    /// - Throws: a ``MetricsSettingsError`` naming the key, what is wrong and how to fix it.
    public init(table: [String: SettingValue]?) throws(MetricsSettingsError) {
        guard let table else { return }
        let settings = PluginSettings(pluginName: "metrics", values: table)
        do {
            try settings.refuseUnknownKeys(known: Self.keys, kind: "key")
            allowNonLoopback = try settings.bool("allow_non_loopback", default: false)
            textfile = try settings.nonEmptyString("textfile")
            let listenText = try settings.nonEmptyString("listen")
            if let listenText { listen = try MetricsListenAddress.parse(listenText) }
        } catch let error as MetricsSettingsError {
            throw error
        } catch let error as PluginError {
            throw MetricsSettingsError(code: .invalid, message: error.message, cause: ErrorCause(error))
        } catch {
            throw MetricsSettingsError(code: .invalid, message: "[metrics]: \(error)")
        }
        if let listen, !listen.isLoopback, !allowNonLoopback {
            throw MetricsSettingsError(
                code: .listenNotLoopback,
                message: "[metrics] listen = \"\(listen)\" is not a loopback address: anyone who reaches it reads "
                    + "the host's metrics — listen on 127.0.0.1 or a Unix socket, or set allow_non_loopback = true")
        }
        if let textfile, !textfile.hasPrefix("/") || !textfile.hasSuffix(".prom") || textfile.contains("\0") {
            throw MetricsSettingsError(
                code: .textfileInvalid,
                message:
                    "[metrics] textfile = \(String(reflecting: textfile)): expected an absolute path ending in .prom (node_exporter's "
                    + "textfile collector reads only *.prom), such as /var/lib/prometheus/node-exporter/vigil.prom")
        }
    }
}
