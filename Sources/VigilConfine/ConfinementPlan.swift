internal import CVigilConfine
public import VigilCore

/// A plugin's declared capabilities as the kernel policy its helper process applies to itself
/// before it maps the plugin (`vigil_confine_apply`): Landlock rules on resolved absolute paths and
/// TCP ports, which socket families and programs seccomp lets through, and the baseline every
/// confined plugin gets without declaring it.
public struct ConfinementPlan: Sendable, Hashable {
    /// What a filesystem rule grants.
    public enum Access: String, Sendable, Hashable {
        /// Read and map (a trailing `/` on the path: the directory tree, listing included).
        case read
        /// Read, write, truncate; in a tree also create, rename and remove.
        case write
        /// Read and execute.
        case exec
    }

    /// One filesystem rule: an absolute path (a trailing `/` is the directory tree).
    public struct Rule: Sendable, Hashable {
        public var path: String
        public var access: Access

        public init(path: String, access: Access) {
            self.path = path
            self.access = access
        }
    }

    /// The plugin's state directory (absolute): relative file grants resolve inside it.
    public var stateDirectory: String
    /// The baseline's rules, then the declared ones.
    public var rules: [Rule]
    /// Its network: Landlock TCP rules for `tcpConnect`, no INET socket at all for `none`.
    public var network: PluginCapabilities.Network
    /// AF_UNIX sockets allowed (the sound server or a bus is declared).
    public var unixSockets: Bool
    /// Programs it may execute (the helper adds an ``Access/exec`` rule for each).
    public var spawn: [String]
    /// Apply what the kernel can enforce instead of refusing (the operator acknowledged it).
    public var allowUnenforced: Bool

    /// The policy for `capabilities`, with relative grants inside `stateDirectory` and the baseline
    /// (``baseline(runtimeDirectories:)``).
    /// - Throws: ``ConfinementError`` (``ConfinementErrorCode/pathUnencodable``) for a path the
    ///   policy cannot carry (a line break or NUL), or a state directory that is not absolute.
    public init(
        capabilities: PluginCapabilities, stateDirectory: String,
        runtimeDirectories: [String] = ConfinementPlan.swiftRuntimeDirectories(), allowUnenforced: Bool = false
    ) throws(ConfinementError) {
        let state = Self.withoutTrailingSlashes(stateDirectory)
        guard state.hasPrefix("/") else {
            throw ConfinementError(
                code: .pathUnencodable,
                message: "the state directory \(stateDirectory) is not absolute — give the host an absolute state "
                    + "directory (XDG_STATE_HOME)")
        }
        var rules = Self.baseline(runtimeDirectories: runtimeDirectories)
        for grant in capabilities.files {
            let path: String
            if grant.path == PluginCapabilities.stateDirectory {
                path = state + "/"
            } else if grant.isInStateDirectory {
                path = state + "/" + grant.path
            } else {
                path = grant.path
            }
            rules.append(Rule(path: path, access: grant.access == .readWrite ? .write : .read))
        }
        if !capabilities.spawn.isEmpty {
            // execve opens the program's interpreter with the execute right too.
            rules.append(contentsOf: Self.loaderPaths.map { Rule(path: $0, access: .exec) })
        }
        self.stateDirectory = state
        self.rules = rules
        self.network = capabilities.network
        self.unixSockets = capabilities.soundServer || !capabilities.buses.isEmpty
        self.spawn = capabilities.spawn
        self.allowUnenforced = allowUnenforced
        for path in [state] + rules.map(\.path) where path.contains("\n") || path.contains("\0") {
            throw ConfinementError(
                code: .pathUnencodable,
                message: "the path \(path.debugDescription) holds a line break or NUL, which the confinement "
                    + "policy cannot carry — rename it")
        }
    }

    /// What every confined plugin may do without declaring it: read and map the loader's
    /// libraries and the Swift runtime, read its own `/proc/self`, the system's time zone and CPU
    /// list, `/dev/null` (read-write), `/dev/zero` and `/dev/urandom`.
    public static func baseline(runtimeDirectories: [String]) -> [Rule] {
        let system = ["/usr/lib/", "/lib/", "/usr/lib64/", "/lib64/", "/etc/ld.so.cache"]
        let process = [
            "/proc/self/", "/sys/devices/system/cpu/", "/etc/localtime", "/usr/share/zoneinfo/", "/dev/zero",
            "/dev/urandom",
        ]
        return (system + runtimeDirectories.map { withoutTrailingSlashes($0) + "/" } + process).map {
            Rule(path: $0, access: .read)
        } + [Rule(path: "/dev/null", access: .write)]
    }

    /// The dynamic loader, which execve opens for execution when a program is dynamically linked.
    static let loaderPaths = ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"]

    /// The directories of the Swift runtime libraries this process has mapped (`libswiftCore.so`),
    /// which a Swift plugin's loader needs; empty when none is mapped.
    public static func swiftRuntimeDirectories() -> [String] {
        guard let maps = FileIO.contents(ofFile: "/proc/self/maps", limit: 4 << 20) else { return [] }
        var directories: [String] = []
        for line in String(decoding: maps, as: UTF8.self).split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/"), line.hasSuffix("/libswiftCore.so") else { continue }
            let path = line[slash...]
            let directory = String(path[..<path.lastIndex(of: "/")!])
            if !directories.contains(directory) { directories.append(directory) }
        }
        return directories
    }

    /// The policy's wire encoding (vigil_confine.h), which the helper decodes with
    /// `vigil_confine_decode`.
    public var encoded: [UInt8] {
        var lines = ["vigil-confine \(VIGIL_CONFINE_WIRE_VERSION)", "state \(stateDirectory)"]
        lines += rules.map { "\($0.access.rawValue) \($0.path)" }
        switch network {
        case .none: lines.append("network none")
        case .any: lines.append("network any")
        case .tcpConnect(let ports):
            lines.append("network tcp")
            lines += ports.map { "tcp-connect \($0)" }
        }
        if unixSockets { lines.append("unix") }
        lines += spawn.map { "spawn \($0)" }
        if allowUnenforced { lines.append("allow-unenforced") }
        lines.append("end")
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// `nil` when `vigil_confine_decode` accepts `bytes`, else its message.
    static func decodingError(_ bytes: [UInt8]) -> String? {
        var error = [CChar](repeating: 0, count: 256)
        var policy: UnsafeMutablePointer<vigil_confine_policy>?
        let result = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                vigil_confine_decode($0.baseAddress, $0.count, &policy, &error, error.count)
            }
        }
        vigil_confine_policy_free(policy)
        return result == 0
            ? nil : String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func withoutTrailingSlashes(_ path: String) -> String {
        var path = path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        return path
    }
}
