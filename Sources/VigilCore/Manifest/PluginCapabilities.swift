/// What a plugin may do beyond running its own code: the `"capabilities"` object of its signed
/// `plugin.json` (docs/signing.md, "Capabilities").
///
/// The declaration is part of the verified bytes, so what the trust review, `vigil plugin list`
/// and `vigil check` show is what confinement enforces. A manifest without `"capabilities"` asks
/// for nothing (``none``). Values are canonical: files, ports and executables are sorted and
/// unique, paths normalised (``normalizedPath(_:)``), so two declarations that grant the same are
/// equal.
public struct PluginCapabilities: Sendable, Equatable, Hashable {
    /// How a file may be used.
    public enum FileAccess: String, Sendable, Hashable, CaseIterable {
        /// Read (and map) only.
        case read
        /// Read, write, create and remove.
        case readWrite = "read-write"

        /// True when this access allows everything `other` allows.
        public func covers(_ other: FileAccess) -> Bool { self == .readWrite || other == .read }
    }

    /// One declared file or directory tree.
    public struct FileGrant: Sendable, Hashable {
        /// The normalised path: relative paths are inside the plugin's state directory (``stateDirectory``
        /// is the directory itself), absolute ones are on the host; a trailing `/` is the directory tree.
        public let path: String
        /// What the plugin may do with it.
        public let access: FileAccess

        /// Creates a grant; `path` must already be normalised (``PluginCapabilities/normalizedPath(_:)``).
        public init(path: String, access: FileAccess) {
            self.path = path
            self.access = access
        }

        /// True for a path relative to the plugin's state directory.
        public var isInStateDirectory: Bool { !path.hasPrefix("/") }
        /// True for a directory tree (the path ends in `/`).
        public var isDirectory: Bool { path.hasSuffix("/") }

        /// True when this grant allows everything `other` allows: the same path (or a directory
        /// tree holding it) with at least its access.
        public func covers(_ other: FileGrant) -> Bool {
            guard access.covers(other.access), isInStateDirectory == other.isInStateDirectory else { return false }
            if path == other.path || path == PluginCapabilities.stateDirectory { return true }
            return isDirectory && other.path.hasPrefix(path)
        }
    }

    /// Which network connections the plugin may make.
    public enum Network: Sendable, Hashable {
        /// No network at all (the default).
        case none
        /// Any connection.
        case any
        /// Outgoing TCP connections to these ports only (sorted, unique, 1–65535).
        case tcpConnect([UInt16])
    }

    /// A D-Bus message bus.
    public enum Bus: String, Sendable, Hashable, CaseIterable, Comparable {
        /// The user's session bus.
        case session
        /// The system bus.
        case system

        public static func < (a: Bus, b: Bus) -> Bool { a.rawValue < b.rawValue }
    }

    /// The one spelling of "the plugin's whole state directory" in `"files"`.
    public static let stateDirectory = "./"

    /// Files and directory trees, sorted by path.
    public var files: [FileGrant]
    /// The PulseAudio/PipeWire native socket.
    public var soundServer: Bool
    /// The buses it may connect to.
    public var buses: Set<Bus>
    /// Its network connections.
    public var network: Network
    /// Absolute paths of the executables it may run, sorted.
    public var spawn: [String]

    /// A plugin that asks for nothing beyond running its own code.
    public static let none = PluginCapabilities()

    /// Creates a declaration, in canonical form (sorted, duplicates merged, a file's strongest access kept).
    public init(
        files: [FileGrant] = [], soundServer: Bool = false, buses: Set<Bus> = [], network: Network = .none,
        spawn: [String] = []
    ) {
        var strongest: [String: FileAccess] = [:]
        for grant in files where strongest[grant.path] != .readWrite { strongest[grant.path] = grant.access }
        self.files = strongest.keys.sorted().map { FileGrant(path: $0, access: strongest[$0]!) }
        self.soundServer = soundServer
        self.buses = buses
        if case .tcpConnect(let ports) = network {
            self.network = .tcpConnect(Array(Set(ports)).sorted())
        } else {
            self.network = network
        }
        self.spawn = Array(Set(spawn)).sorted()
    }

    /// True when the plugin asks for nothing.
    public var isEmpty: Bool { self == .none }

    /// What the plugin may do, one line each, in plain words ("read and write heartbeat.txt in its
    /// state directory", "connect to TCP ports 443 and 8080"); "nothing beyond running its own code"
    /// when it asks for nothing. The lines hold paths from the manifest: escape them
    /// (`Sanitizer.display`) before a terminal.
    public var plainWords: [String] {
        let words = lines(network: network)
        return words.isEmpty ? ["nothing beyond running its own code"] : words
    }

    /// The lines of ``plainWords`` this declaration asks for that `trusted` did not allow: a new
    /// file (or stronger access), bus, executable, the sound server, or more network. Empty when
    /// it asks for no more than `trusted` (fewer or equal capabilities).
    public func added(since trusted: PluginCapabilities) -> [String] {
        var grown = PluginCapabilities()
        grown.files = files.filter { grant in !trusted.files.contains { $0.covers(grant) } }
        grown.soundServer = soundServer && !trusted.soundServer
        grown.buses = buses.subtracting(trusted.buses)
        grown.spawn = spawn.filter { !trusted.spawn.contains($0) }
        var network = PluginCapabilities.Network.none
        switch (self.network, trusted.network) {
        case (.none, _), (_, .any): break
        case (.any, _): network = .any
        case (.tcpConnect(let ports), .none): network = .tcpConnect(ports)
        case (.tcpConnect(let ports), .tcpConnect(let old)):
            let new = ports.filter { !old.contains($0) }
            if !new.isEmpty { network = .tcpConnect(new) }
        }
        return grown.lines(network: network)
    }

    private func lines(network: Network) -> [String] {
        var out: [String] = []
        for grant in files {
            let verb = grant.access == .readWrite ? "read and write" : "read"
            if grant.path == Self.stateDirectory {
                out.append("\(verb) every file in its state directory")
            } else if grant.isInStateDirectory {
                let what = grant.isDirectory ? "the directory \(grant.path) (and everything in it)" : grant.path
                out.append("\(verb) \(what) in its state directory")
            } else if grant.isDirectory {
                out.append("\(verb) \(grant.path) and everything in it")
            } else {
                out.append("\(verb) \(grant.path)")
            }
        }
        if soundServer { out.append("use the sound server (PulseAudio or PipeWire)") }
        for bus in buses.sorted() { out.append("talk on the \(bus.rawValue) D-Bus") }
        switch network {
        case .none: break
        case .any: out.append("connect to any network address")
        case .tcpConnect(let ports):
            let list = ports.map(String.init)
            let words =
                list.count == 1 ? list[0] : list.dropLast().joined(separator: ", ") + " and " + list.last!
            out.append("connect to TCP port\(list.count == 1 ? "" : "s") \(words)")
        }
        for path in spawn { out.append("run \(path)") }
        return out
    }

    /// A declared path in its one spelling, or why it is refused: `.`/empty components dropped
    /// (`/etc//hostname` is `/etc/hostname`), a trailing `/` kept (a directory tree), the state
    /// directory itself ``stateDirectory``. Refused: an empty path, a `..` component, a glob
    /// character (`*`, `?`, `[`), a control character or backslash, more than 1024 bytes.
    public static func normalizedPath(_ path: String) -> Result<String, PathProblem> {
        if path.isEmpty { return .failure(PathProblem("the path is empty")) }
        if path.utf8.count > 1024 { return .failure(PathProblem("the path is longer than 1024 bytes")) }
        if path.unicodeScalars.contains(where: { Sanitizer.isUnsafe($0) || $0 == "\\" }) {
            return .failure(
                PathProblem("the path contains a control character (C0, C1), a bidirectional control or a backslash"))
        }
        if path.unicodeScalars.contains(where: { $0 == "*" || $0 == "?" || $0 == "[" }) {
            return .failure(
                PathProblem(
                    "the path contains a glob character (*, ? or [); globs are not supported — list each file, "
                        + "or a directory with a trailing \"/\""))
        }
        let absolute = path.hasPrefix("/")
        var components: [Substring] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: true) where component != "." {
            if component == ".." {
                return .failure(
                    PathProblem("the path has a '..' component; name the file or directory itself"))
            }
            components.append(component)
        }
        let directory = path.hasSuffix("/") || path.hasSuffix("/.") || path == "."
        if components.isEmpty { return .success(absolute ? "/" : stateDirectory) }
        let joined = (absolute ? "/" : "") + components.joined(separator: "/")
        return .success(directory ? joined + "/" : joined)
    }

    /// Why a declared path is refused.
    public struct PathProblem: Error, Sendable, Hashable {
        /// The reason, one clause.
        public let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}

extension PluginCapabilities {
    /// The declaration in the manifest's own vocabulary (`{"files": [{"path", "access"}], "sound_server",
    /// "bus", "network", "spawn"}`), only the members that ask for something; `{}` for ``none``.
    /// The `--json` documents and the rollback state's record of what an operator accepted use it,
    /// and ``ManifestDecoder/capabilities(_:plugin:)`` reads it back.
    public var jsonValue: JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if !files.isEmpty {
            members.append(
                (
                    "files",
                    .array(
                        files.map { grant -> JSONValue in
                            .object([("path", .string(grant.path)), ("access", .string(grant.access.rawValue))])
                        })
                ))
        }
        if soundServer { members.append(("sound_server", .bool(true))) }
        if !buses.isEmpty { members.append(("bus", .array(buses.sorted().map { .string($0.rawValue) }))) }
        switch network {
        case .none: break
        case .any: members.append(("network", .string("any")))
        case .tcpConnect(let ports):
            members.append(
                ("network", .object([("tcp_connect", .array(ports.map { .number(String($0)) }))])))
        }
        if !spawn.isEmpty { members.append(("spawn", .array(spawn.map(JSONValue.string)))) }
        return .object(members)
    }
}

extension PluginManifest {
    /// True when the plugin runs inside the host process (a built-in `entry`): nothing confines it,
    /// whatever it declares. A shared-library plugin runs in a confined helper process.
    public var runsInHostProcess: Bool { sharedLibrary == nil }

    /// What the trust review, `vigil plugin list` and `vigil check` show of the plugin's
    /// capabilities, one line each: the declaration in plain words, after a note that nothing is
    /// enforced for a plugin that runs in the host process. Escape before a terminal.
    public var capabilityLines: [String] {
        guard runsInHostProcess else { return capabilities.plainWords }
        return ["anything the host process may do (it runs in the host process: not enforced)"]
            + (capabilities.isEmpty ? [] : capabilities.plainWords.map { "declared, not enforced: \($0)" })
    }

    /// `{"declared": {…the manifest's vocabulary…}, "plain_words": [...], "in_host_process": bool}`,
    /// the `capabilities` member of the `--json` documents.
    public var capabilitiesJSON: JSONValue {
        .object([
            ("declared", capabilities.jsonValue),
            ("plain_words", .array(capabilities.plainWords.map(JSONValue.string))),
            ("in_host_process", .bool(runsInHostProcess)),
        ])
    }
}
