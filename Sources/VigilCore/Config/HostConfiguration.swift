import Glibc
import TOMLKit
import VigilBase
public import VigilCrypto
public import VigilPlugin

/// The host's `vigil.toml`: activated plugins, where to find them, which keys are trusted, what
/// the host declares, and each plugin's settings.
///
/// ```toml
/// plugins = ["silent-engine", "supervisor"]
/// plugin_paths = ["manifests"]
/// acknowledge_unsafe_plugins = []
///
/// [host]
/// background_modes = ["audio"]
///
/// [trusted_plugins]
/// silent-engine = "ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4="
///
/// [silent-engine]
/// mode = "sine"
/// ```
public struct HostConfiguration: Sendable {
    /// The file name Vigil looks for.
    public static let fileName = "vigil.toml"
    /// The largest `vigil.toml` accepted, in bytes.
    public static let maxSize = 1 << 20
    /// The tables `vigil.toml` itself defines (never a plugin's settings).
    public static let reservedTables: Set<String> = ["host", "trusted_plugins", "freshness"]
    /// Tables the host reads besides the activated plugins' (`[announce]`): not stray.
    public static let hostTables: Set<String> = ["announce", "metrics", "repository"]

    /// The absolute path of the file this configuration was read from.
    public let path: String
    /// Activated plugins, in order (`plugins`).
    public let plugins: [String]
    /// Trusted signing keys per plugin name (`[trusted_plugins]`): one key, or `threshold` of `keys`.
    public let trustedKeys: [String: TrustedKeys]
    /// The plugins trusted with exactly one key (threshold 1), by name: the plain
    /// `NAME = "ed25519:…"` entries of `[trusted_plugins]`.
    public var trustedPlugins: [String: Fingerprint] {
        trustedKeys.compactMapValues { $0.isSingleKey ? $0.keys[0] : nil }
    }
    /// Plugins allowed to load without a signature (`acknowledge_unsafe_plugins`).
    public let acknowledgedUnsafePlugins: [String]
    /// Absolute directories searched for `NAME/plugin.json`, in order: `plugin_paths` (default
    /// `["manifests"]`, relative to this file), then ``firstPartyManifests(environment:)``.
    public private(set) var pluginPaths: [String]
    /// The `[host]` table.
    public let host: HostDeclarations
    /// `[freshness] grace`: how long before a signed manifest expires `check` and `list` warn.
    public var freshnessGrace: Int64 = Freshness.defaultGrace
    /// Each plugin's settings table (top-level tables named after plugins).
    public let pluginSettings: [String: [String: SettingValue]]

    private let locator: TOMLLocator?

    /// Creates a configuration in memory (no file behind it; ``location(of:)`` returns `nil`).
    ///
    /// - Parameter environment: the host's environment: a relative `path` is resolved against its
    ///   working directory, and it names the first-party manifests directory.
    public init(
        path: String, plugins: [String] = [], trustedPlugins: [String: Fingerprint] = [:],
        trustedKeys: [String: TrustedKeys] = [:], acknowledgedUnsafePlugins: [String] = [],
        pluginPaths: [String]? = nil,
        host: HostDeclarations = HostDeclarations(), pluginSettings: [String: [String: SettingValue]] = [:],
        environment: HostEnvironment
    ) {
        self.path = Path.absolute(path, relativeTo: environment.workingDirectory)
        self.plugins = plugins
        self.trustedKeys = trustedPlugins.mapValues(TrustedKeys.init).merging(trustedKeys) { $1 }
        self.acknowledgedUnsafePlugins = acknowledgedUnsafePlugins
        self.pluginPaths =
            pluginPaths
            ?? Self.resolvePluginPaths(
                ["manifests"], configDirectory: Path.directory(of: self.path),
                firstParty: Self.firstPartyManifests(environment: environment).path)
        self.host = host
        self.pluginSettings = pluginSettings
        self.locator = nil
    }

    /// Where Vigil's own first-party manifests are, and why that directory was chosen.
    public struct FirstPartyManifests: Sendable, Hashable {
        /// How the directory was chosen.
        public enum Origin: String, Sendable, Hashable {
            /// `VIGIL_FIRST_PARTY_MANIFESTS` names it.
            case environment = "VIGIL_FIRST_PARTY_MANIFESTS"
            /// The install location: `share/vigil/manifests` under the executable's prefix
            /// (`PREFIX/bin/vigil` → `PREFIX/share/vigil/manifests`).
            case installed = "installed"
            /// The `manifests/` directory of the Vigil source checkout this binary was built from
            /// (a development build that was not installed).
            case sourceCheckout = "source-checkout"
        }

        /// The directory (absolute); it may not exist when nothing is installed.
        public let path: String
        /// How it was chosen.
        public let origin: Origin
    }

    /// Vigil's own first-party manifests, in this order: `VIGIL_FIRST_PARTY_MANIFESTS`; else
    /// `../share/vigil/manifests` relative to the running executable's directory (the install
    /// location, `PREFIX/share/vigil/manifests` for `PREFIX/bin/vigil`); else, for a development
    /// build that was never installed, the source checkout's `manifests/` when it exists. A binary
    /// `make` built for installation (``VigilVersion/isInstallBuild``) never looks at the checkout.
    /// When none exists the install location is returned, so errors name where to install.
    public static func firstPartyManifests(environment: HostEnvironment) -> FirstPartyManifests {
        // …/Sources/VigilCore/…/HostConfiguration.swift: the package root is what precedes the
        // last "/Sources/", at whatever depth this file sits.
        let components = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        let sources = components.lastIndex(of: "Sources") ?? 1
        return firstPartyManifests(
            environment: environment,
            executable: SystemCall.executablePath(fallback: Path.join(environment.workingDirectory, "vigil")),
            checkout: VigilVersion.isInstallBuild ? nil : components[..<sources].joined(separator: "/"))
    }

    /// ``firstPartyManifests(environment:)`` with its inputs given: the running executable's path
    /// and the root of the source checkout a development build may fall back to (`nil` for a
    /// binary built for installation).
    package static func firstPartyManifests(
        environment: HostEnvironment, executable: String, checkout: String?
    ) -> FirstPartyManifests {
        if let override = environment["VIGIL_FIRST_PARTY_MANIFESTS"] {
            return FirstPartyManifests(
                path: Path.absolute(override, relativeTo: environment.workingDirectory), origin: .environment)
        }
        let installed = FirstPartyManifests(
            path: Path.absolute("../share/vigil/manifests", relativeTo: Path.directory(of: executable)),
            origin: .installed)
        if SystemCall.isDirectory(installed.path) { return installed }
        if let checkout, case let manifests = Path.join(checkout, "manifests"), SystemCall.isDirectory(manifests) {
            return FirstPartyManifests(path: manifests, origin: .sourceCheckout)
        }
        return installed
    }

    /// The nearest `vigil.toml` in `directory` or one of its parents, or `nil`.
    ///
    /// A `vigil.toml` that exists but is not a regular file (a directory, FIFO, device, socket, or
    /// a symbolic link to none of these or to nothing) stops the search with an error naming it:
    /// skipping it would silently use — and let `vigil plugin trust` edit — a parent's file.
    ///
    /// - Parameter environment: a relative `directory` is resolved against its working directory.
    /// - Throws: ``CoreError`` `.notRegularFile`.
    public static func find(startingAt directory: String, environment: HostEnvironment) throws(CoreError) -> String? {
        var current = Path.absolute(directory, relativeTo: environment.workingDirectory)
        while true {
            let candidate = Path.join(current, fileName)
            var st = stat()
            if lstat(candidate, &st) == 0 {
                var target = st
                let isLink = (st.st_mode & S_IFMT) == S_IFLNK
                let resolved = !isLink || stat(candidate, &target) == 0
                if resolved, (target.st_mode & S_IFMT) == S_IFREG { return candidate }
                let kind =
                    !resolved
                    ? "symbolic link to nothing"
                    : isLink
                        ? "symbolic link to a \(SafeFile.fileKind(target.st_mode))" : SafeFile.fileKind(st.st_mode)
                throw CoreError(
                    code: .notRegularFile,
                    message: "\(candidate) is a \(kind), not a regular file; Vigil stops looking for \(fileName) "
                        + "there rather than use a parent directory's — remove it or replace it with the real file, "
                        + "or pass --config PATH")
            }
            if current == "/" { return nil }
            current = Path.directory(of: current)
        }
    }

    /// Reads and validates the configuration at `path`.
    ///
    /// - Throws: ``CoreError`` `.configInvalid` with `path:line:column` for a TOML syntax error, an
    ///   unknown key, a value of the wrong type, an invalid plugin name or fingerprint;
    ///   `.configNotFound` when the file does not exist.
    /// - Parameter environment: the host's environment: a relative `path` is resolved against its
    ///   working directory, and it names the first-party manifests directory.
    public static func load(path: String, environment: HostEnvironment) throws(CoreError) -> HostConfiguration {
        let absolute = Path.absolute(path, relativeTo: environment.workingDirectory)
        let bytes = try readConfig(absolute)
        return try HostConfiguration(
            path: absolute, bytes: bytes, firstParty: firstPartyManifests(environment: environment).path)
    }

    /// Parses configuration text; `path` is used for locations and relative plugin paths.
    public static func parse(
        _ bytes: [UInt8], path: String, environment: HostEnvironment
    ) throws(CoreError) -> HostConfiguration {
        try HostConfiguration(
            path: Path.absolute(path, relativeTo: environment.workingDirectory), bytes: bytes,
            firstParty: firstPartyManifests(environment: environment).path)
    }

    static func readConfig(_ absolute: String) throws(CoreError) -> [UInt8] {
        let fd = open(absolute, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT {
                throw CoreError(
                    code: .configNotFound,
                    message: "\(absolute) does not exist — create it, or pass another file with --config")
            }
            throw CoreError.io("open", path: absolute, errno: e, call: "open")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CoreError.io("stat", path: absolute, errno: errno, call: "fstat") }
        if (st.st_mode & S_IFMT) == S_IFREG {
            try checkOwnership(st, of: absolute, isDirectory: false)
            try checkDirectory(of: absolute)
        }
        return try SafeFile.read(fd: fd, path: absolute, cap: maxSize, what: "host configuration", plugin: nil)
    }

    /// Refuses a configuration directory that others could use to replace `vigil.toml`: the
    /// directory holding `path` (after resolving symbolic links) must be owned by this user or
    /// root and not writable by group or others, unless it has the sticky bit (as `/tmp` has).
    /// The rule is sshd's StrictModes: `vigil.toml` decides which keys are trusted and which
    /// commands the supervisor runs.
    ///
    /// - Throws: ``CoreError`` `.configUnsafe`.
    static func checkDirectory(of path: String, holding: String = fileName) throws(CoreError) {
        var real = path
        if let resolved = realpath(path, nil) {
            real = String(cString: resolved)
            free(resolved)
        }
        let directory = Path.directory(of: real)
        var st = stat()
        guard stat(directory, &st) == 0 else { throw CoreError.io("stat", path: directory, errno: errno, call: "stat") }
        try checkOwnership(st, of: directory, isDirectory: true, holding: holding)
    }

    static func checkOwnership(_ st: stat, of path: String, isDirectory: Bool, holding: String = fileName)
        throws(CoreError)
    {
        let what = isDirectory ? "the directory \(path), which holds \(holding)," : path
        let me = geteuid()
        if st.st_uid != me && st.st_uid != 0 {
            throw CoreError(
                code: .configUnsafe,
                message: "\(what) is owned by uid \(st.st_uid), not by you (uid \(me)) or root; it decides which "
                    + "plugin keys are trusted, so Vigil does not use it — `chown \(me) \(path)`, or use your own copy")
        }
        let sticky = isDirectory && st.st_mode & S_ISVTX != 0
        if st.st_mode & 0o022 != 0 && !sticky {
            throw CoreError(
                code: .configUnsafe,
                message: "\(what) is writable by group or others (mode \(String(st.st_mode & 0o7777, radix: 8))); "
                    + "it decides which plugin keys are trusted and which commands run, so Vigil does not use it "
                    + "— `chmod go-w \(path)`")
        }
    }

    /// Parses the TOML text, mapping TOMLKit's errors to `.configInvalid` with a location.
    static func parseTOML(_ bytes: [UInt8], path: String) throws(CoreError) -> (TOMLTable, String) {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CoreError(code: .configInvalid, message: "\(path): the file is not valid UTF-8 — save it as UTF-8")
        }
        if let nul = bytes.firstIndex(of: 0) {
            // Not valid TOML: only count lines, never scan its structure.
            let (line, column) = TOMLLocator.lineColumn(of: nul, in: bytes)
            throw CoreError(
                code: .configInvalid, location: SourceLocation(path: path, line: line, column: column),
                message: "the file contains a NUL byte")
        }
        do {
            return (try TOMLTable(string: text), text)
        } catch let error as TOMLParseError {
            throw CoreError(
                code: .configInvalid,
                location: SourceLocation(
                    path: path, line: error.source.begin.line, column: error.source.begin.column),
                message: "\(error.description) — fix the TOML syntax")
        } catch {
            throw CoreError(code: .configInvalid, message: "\(path): \(error)")
        }
    }

    private init(path: String, bytes: [UInt8], firstParty: String) throws(CoreError) {
        let (table, _) = try Self.parseTOML(bytes, path: path)
        let locator = TOMLLocator(bytes)
        self.path = path
        self.locator = locator
        let reader = ConfigReader(path: path, locator: locator)

        var plugins: [String] = []
        var trusted: [String: TrustedKeys] = [:]
        var acknowledged: [String] = []
        var paths: [String] = ["manifests"]
        var host = HostDeclarations()
        var grace = Freshness.defaultGrace
        var settings: [String: [String: SettingValue]] = [:]

        for key in table.keys {
            guard let value = table[key] else { continue }
            switch key {
            case "plugins":
                plugins = try reader.pluginNames(value, at: [key])
            case "acknowledge_unsafe_plugins":
                acknowledged = try reader.pluginNames(value, at: [key])
            case "plugin_paths":
                paths = try reader.strings(value, at: [key])
                for (i, p) in paths.enumerated() where p.isEmpty {
                    throw reader.fail(at: [key, p], fallbackIndex: i, "an empty plugin path")
                }
            case "host":
                host = try reader.host(value)
            case "freshness":
                guard let t = value.table else { throw reader.fail(at: [key], "[freshness] must be a table") }
                for name in t.keys {
                    guard name == "grace" else {
                        throw reader.fail(
                            at: [key, name], "unknown key `\(Sanitizer.display(name))` in [freshness] (known: grace)")
                    }
                    guard let text = t[name]?.string, let seconds = Freshness.parseDuration(text) else {
                        throw reader.fail(
                            at: [key, name], "expected a duration such as \"7d\", \"12h\", \"30m\" or \"90s\"")
                    }
                    grace = seconds
                }
            case "trusted_plugins":
                guard let t = value.table else { throw reader.fail(at: [key], "[trusted_plugins] must be a table") }
                for name in t.keys {
                    if let problem = PluginName.problem(name) { throw reader.fail(at: [key, name], problem) }
                    guard let entry = t[name] else { continue }
                    trusted[name] = try reader.trustedKeys(entry, name: name)
                }
            default:
                guard PluginName.isValid(key), let t = value.table else {
                    throw reader.fail(
                        at: [key],
                        "unknown key `\(Sanitizer.display(key))` — the top level holds plugins, plugin_paths, "
                            + "acknowledge_unsafe_plugins, [host], [trusted_plugins] and one table per plugin "
                            + "named after it")
                }
                settings[key] = try reader.settingsTable(t, at: [key])
            }
        }
        self.plugins = plugins
        self.trustedKeys = trusted
        self.acknowledgedUnsafePlugins = acknowledged
        self.pluginPaths = Self.resolvePluginPaths(
            paths, configDirectory: Path.directory(of: path), firstParty: firstParty)
        self.host = host
        self.freshnessGrace = grace
        self.pluginSettings = settings
    }

    static func resolvePluginPaths(_ paths: [String], configDirectory: String, firstParty: String) -> [String] {
        var out: [String] = []
        for p in paths + [firstParty] {
            let absolute = Path.absolute(p, relativeTo: configDirectory)
            if !out.contains(absolute) { out.append(absolute) }
        }
        return out
    }

    /// This configuration with `paths` (absolute) as its plugin paths: what `vigil plugin install`
    /// reviews a plugin it staged with, before the plugin is in any configured path.
    public func searching(pluginPaths paths: [String]) -> HostConfiguration {
        var copy = self
        copy.pluginPaths = paths
        return copy
    }

    /// Where `keyPath` is written in the file: a key (`["plugins"]`, `["silent-engine", "mode"]`),
    /// a table header (`["host"]`) or a string element of an array (`["plugins", "silent-engine"]`).
    /// `nil` when the configuration has no file or the key is not written in it.
    public func location(of keyPath: [String]) -> SourceLocation? {
        guard let locator, let offset = locator.offset(of: keyPath) else { return nil }
        let (line, column) = locator.lineColumn(of: offset)
        return SourceLocation(path: path, line: line, column: column)
    }
}
