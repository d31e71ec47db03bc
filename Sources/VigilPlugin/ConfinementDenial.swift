import VigilBase

/// An operation the kernel refused a confined plugin, as its helper reported it: what was tried and
/// the capability that would have allowed it.
public struct ConfinementDenial: Sendable, Hashable, CustomStringConvertible {
    /// What would allow the operation.
    public enum Capability: Sendable, Hashable {
        /// Reading the file or tree at the path (`"files": [{"path": …, "access": "read"}]`).
        case fileRead(String)
        /// Writing the file or tree at the path (`"access": "read-write"`).
        case fileWrite(String)
        /// Connecting to the TCP port (`"network": {"tcp_connect": [PORT]}`).
        case tcpConnect(UInt16)
        /// A socket of this address family (`"network"`: AF_INET 2, AF_INET6 10).
        case network(family: Int)
        /// A UNIX-domain socket (`"sound_server": true` or `"bus"`).
        case unixSocket
        /// Executing the program (`"spawn": [PATH]`).
        case spawn(String)
        /// Nothing a manifest can declare allows it (another process's memory or signals,
        /// namespaces, mounts, BPF, …).
        case none
    }

    /// The refused call (`open`, `connect`, `execve`, `ptrace`, `kill`, `socket`, …).
    public let operation: String
    public let capability: Capability
    /// Free text from the helper (the error, the system call number).
    public let detail: String

    public init(operation: String, capability: Capability, detail: String) {
        self.operation = operation
        self.capability = capability
        self.detail = detail
    }

    /// Parses one report line (without or with its line feed); `nil` for a line that is not a
    /// well-formed denial (the report descriptor carries the plugin's untrusted bytes too).
    public init?(reportLine line: Substring) {
        var line = line
        if line.last == "\n" { line = line.dropLast() }
        let raw = line.split(separator: "\t", omittingEmptySubsequences: false)
        let fields = raw.compactMap(Self.unescape)
        guard raw.count == 5, fields.count == 5, fields[0] == "denial", !fields[1].isEmpty else { return nil }
        let (operation, kind, argument, detail) = (fields[1], fields[2], fields[3], fields[4])
        let capability: Capability
        switch kind {
        case "file-read" where argument.hasPrefix("/"): capability = .fileRead(argument)
        case "file-write" where argument.hasPrefix("/"): capability = .fileWrite(argument)
        case "spawn": capability = .spawn(argument)
        case "tcp-connect":
            guard let port = UInt16(argument) else { return nil }
            capability = .tcpConnect(port)
        case "network":
            guard let family = Int(argument) else { return nil }
            capability = .network(family: family)
        case "unix-socket": capability = .unixSocket
        case "none": capability = .none
        default: return nil
        }
        self.init(operation: operation, capability: capability, detail: detail)
    }

    /// Every well-formed denial in `text` (the report descriptor's bytes), in order.
    public static func parse(_ text: String) -> [ConfinementDenial] {
        text.split(separator: "\n").compactMap { ConfinementDenial(reportLine: $0) }
    }

    /// `\t`, `\n` and `\\` back to their characters; `nil` for an escape JSON and TOML do not share.
    private static func unescape(_ field: Substring) -> String? {
        guard field.contains("\\") else { return String(field) }
        var result = ""
        var escaped = false
        for character in field {
            if escaped {
                // The helper writes \t, \n and \\ (the escapes JSON and TOML share).
                guard let letter = character.asciiValue, let scalar = StringEscape.scalar(for: letter) else {
                    return nil
                }
                result.unicodeScalars.append(scalar)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return escaped ? nil : result
    }

    /// What a manifest would declare to allow it, relative paths inside `stateDirectory` written as
    /// the manifest writes them; "no capability allows this" for ``Capability/none``.
    public func declaration(stateDirectory: String? = nil) -> String {
        func manifestPath(_ path: String) -> String {
            guard let directory = stateDirectory?.trimmingSuffix("/"), path.hasPrefix(directory + "/") else {
                return path
            }
            return String(path.dropFirst(directory.count + 1))
        }
        switch capability {
        case .fileRead(let path):
            return #""files": [{"path": "\#(manifestPath(path))", "access": "read"}]"#
        case .fileWrite(let path):
            return #""files": [{"path": "\#(manifestPath(path))", "access": "read-write"}]"#
        case .tcpConnect(let port): return #""network": {"tcp_connect": [\#(port)]}"#
        case .network: return #""network": "any" (or "tcp_connect")"#
        case .unixSocket: return #""sound_server": true or "bus""#
        case .spawn(let path): return #""spawn": ["\#(path)"]"#
        case .none: return "no capability allows this"
        }
    }

    public var description: String {
        let allowing = capability == .none ? "no capability allows it" : "it would need \(declaration())"
        return "\(operation) refused (\(detail)); \(allowing)"
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: Character) -> String {
        var result = self
        while result.count > 1, result.last == suffix { result.removeLast() }
        return result
    }
}
