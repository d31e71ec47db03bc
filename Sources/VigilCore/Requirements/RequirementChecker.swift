import VigilBase
public import VigilPlugin

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The one host-requirement checker shared by `keepAlive()`, `vigil check`, the build plugin and
/// `vigil plugin list`.
///
/// Declarations (`background-mode`, `service`) are checked against the `[host]` table of
/// `vigil.toml`. Environment requirements (`audio-output`, `executable`, `dbus-session`) are probed
/// on this machine, now: a sound server socket that accepts a connection or an ALSA playback
/// device, an executable file on `PATH`, a session bus socket that accepts a connection.
public struct RequirementChecker: Sendable {
    /// The environment probed: the host's one ``HostEnvironment``.
    public typealias Environment = HostEnvironment

    /// The host's declarations from `[host]`.
    public var declarations: HostDeclarations
    /// The environment probed for environment requirements.
    public var environment: Environment

    /// Creates a checker for a host's declarations and an environment.
    public init(declarations: HostDeclarations, environment: Environment) {
        self.declarations = declarations
        self.environment = environment
    }

    /// Every unmet requirement among `requirements`, in order.
    ///
    /// - Parameter probeEnvironment: false checks only declarations (what a build can know);
    ///   true also probes the environment of this machine.
    public func unmet(_ requirements: [HostRequirement], probeEnvironment: Bool = true) -> [UnmetRequirement] {
        requirements.compactMap { requirement in
            if requirement.isDeclaration || probeEnvironment { check(requirement) } else { nil }
        }
    }

    /// Checks one requirement; `nil` when it is met.
    public func check(_ requirement: HostRequirement) -> UnmetRequirement? {
        switch requirement.kind {
        case .backgroundMode(let mode):
            return undeclared(requirement, mode, in: "background_modes", declarations.backgroundModes)
        case .service(let service):
            return undeclared(requirement, service, in: "services", declarations.services)
        case .audioOutput:
            return probeAudioOutput(requirement)
        case .executable(let name):
            return probeExecutable(name, requirement)
        case .dbusSession:
            return probeSessionBus(requirement)
        }
    }

    /// `nil` when `value` is among the `declared` values of the `[host]` key `key`; else what to
    /// add to vigil.toml.
    private func undeclared(
        _ requirement: HostRequirement, _ value: String, in key: String, _ declared: [String]
    ) -> UnmetRequirement? {
        if declared.contains(value) { return nil }
        let list = (declared + [value]).map { "\"\($0)\"" }.joined(separator: ", ")
        return UnmetRequirement(
            requirement: requirement, problem: "requires \(key) to include \"\(value)\"",
            remedy: "add it under [host] in vigil.toml: \(key) = [\(list)]")
    }

    // MARK: audio-output

    private func probeAudioOutput(_ requirement: HostRequirement) -> UnmetRequirement? {
        var tried: [String] = []
        if let server = environment.variables["PULSE_SERVER"], !server.isEmpty {
            // PULSE_SERVER is a space-separated list of addresses; any one that answers is enough.
            for address in server.split(separator: " ").map(String.init) {
                if let path = Self.unixPath(ofPulseAddress: address) {
                    if SocketProbe.connectUnix(path: path) { return nil }
                    tried.append("\(path) (PULSE_SERVER)")
                } else if let (host, port) = Self.tcpTarget(ofPulseAddress: address) {
                    if SocketProbe.connectTCP(host: host, port: port) { return nil }
                    tried.append("\(host):\(port) (PULSE_SERVER)")
                } else {
                    tried.append("\"\(address)\" (PULSE_SERVER, not an address Vigil can probe)")
                }
            }
        }
        if let runtime = environment.variables["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            let path = runtime + "/pulse/native"
            if SocketProbe.connectUnix(path: path) { return nil }
            tried.append("\(path) ($XDG_RUNTIME_DIR/pulse/native)")
        } else {
            tried.append("$XDG_RUNTIME_DIR/pulse/native (XDG_RUNTIME_DIR is not set)")
        }
        let devices = alsaPlaybackDevices()
        if !devices.isEmpty { return nil }
        tried.append("ALSA playback devices in \(environment.soundDeviceDirectory) (none)")
        return UnmetRequirement(
            requirement: requirement,
            problem: "needs an audio output, but none is reachable: tried \(tried.joined(separator: ", "))",
            remedy:
                "start the user's sound server (PulseAudio or PipeWire), point PULSE_SERVER at one, "
                + "or attach a sound card")
    }

    static func unixPath(ofPulseAddress address: String) -> String? {
        var rest = Substring(address)
        if rest.hasPrefix("{") {  // "{machine-id}unix:/path": only for that machine; probe anyway
            guard let close = rest.firstIndex(of: "}") else { return nil }
            rest = rest[rest.index(after: close)...]
        }
        if rest.hasPrefix("unix:") { return String(rest.dropFirst(5)) }
        if rest.hasPrefix("/") { return String(rest) }
        return nil
    }

    static func tcpTarget(ofPulseAddress address: String) -> (String, UInt16)? {
        var rest = Substring(address)
        if rest.hasPrefix("tcp4:") {
            rest = rest.dropFirst(5)
        } else if rest.hasPrefix("tcp:") {
            rest = rest.dropFirst(4)
        } else {
            return nil
        }
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
        guard let host = parts.first, !host.isEmpty else { return nil }
        if parts.count == 2, let port = UInt16(parts[1]) { return (String(host), port) }
        if parts.count == 1 { return (String(host), 4713) }
        return nil
    }

    private func alsaPlaybackDevices() -> [String] {
        (Directory.names(in: environment.soundDeviceDirectory) ?? []).filter {
            $0.hasPrefix("pcmC") && $0.hasSuffix("p")
        }
    }

    // MARK: executable

    private func probeExecutable(_ name: String, _ requirement: HostRequirement) -> UnmetRequirement? {
        if environment.executablePath(named: name) != nil { return nil }
        if name.contains("/") {
            return UnmetRequirement(
                requirement: requirement,
                problem: "needs the executable \(name), which does not exist or is not executable",
                remedy: "install it or fix the path")
        }
        let path = environment["PATH"] ?? ""
        return UnmetRequirement(
            requirement: requirement,
            problem: "needs the executable \"\(name)\" on PATH, but it is not there"
                + (path.isEmpty ? " (PATH is empty)" : ""),
            remedy: "install the package that provides \(name), or add its directory to PATH")
    }

    // MARK: dbus-session

    private func probeSessionBus(_ requirement: HostRequirement) -> UnmetRequirement? {
        guard let address = environment.variables["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
            return UnmetRequirement(
                requirement: requirement,
                problem: "needs a D-Bus session bus, but DBUS_SESSION_BUS_ADDRESS is not set",
                remedy:
                    "run inside a user session (systemd --user starts one), or wrap the host in `dbus-run-session --`")
        }
        // A list of `transport:key=value,…` separated by `;`; the first that connects wins.
        for entry in address.split(separator: ";") {
            guard entry.hasPrefix("unix:") else { continue }
            var options: [Substring: Substring] = [:]
            for pair in entry.dropFirst(5).split(separator: ",") {
                if let eq = pair.firstIndex(of: "=") { options[pair[..<eq]] = pair[pair.index(after: eq)...] }
            }
            if let path = options["path"], SocketProbe.connectUnix(path: Self.unescapeDBus(path)) { return nil }
            if let name = options["abstract"], SocketProbe.connectUnix(path: Self.unescapeDBus(name), abstract: true) {
                return nil
            }
        }
        return UnmetRequirement(
            requirement: requirement,
            problem:
                "needs a D-Bus session bus, but nothing accepts a connection at DBUS_SESSION_BUS_ADDRESS=\(address)",
            remedy: "start the session bus (systemctl --user start dbus) or fix DBUS_SESSION_BUS_ADDRESS")
    }

    /// D-Bus addresses %-escape bytes outside `[-0-9A-Za-z_/.\*]`.
    static func unescapeDBus(_ value: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(value.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let hi = iterator.next(), let lo = iterator.next(),
                let value = UInt8(String(decoding: [hi, lo], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
