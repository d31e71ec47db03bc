import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The environment a host runs in, built once and handed to everything below it: the host, the
/// requirement checker, the rollback store and every plugin (``PluginContext/environment``).
///
/// It owns the environment variables and what is derived from them — the state, runtime and
/// configuration directories with their fallbacks, the sound-server addresses to probe, and
/// `PATH` lookup — and the working directory relative paths are resolved against, so every part
/// of a host answers these questions the same way, and a host built with an injected environment
/// never consults the process's own variables or working directory.
public struct HostEnvironment: Sendable {
    /// The environment variables.
    public var variables: [String: String]
    /// The ALSA device directory (`/dev/snd`); playback devices are `pcmC*D*p` in it.
    public var soundDeviceDirectory: String
    /// The absolute directory relative paths are resolved against: a relative `vigil.toml` or
    /// `VIGIL_FIRST_PARTY_MANIFESTS`, and the search for the nearest `vigil.toml`.
    public var workingDirectory: String

    /// Creates an environment from explicit values (tests, embedding hosts). Nothing is read from
    /// the process: without `workingDirectory`, relative paths are resolved against `/`.
    public init(variables: [String: String], soundDeviceDirectory: String = "/dev/snd", workingDirectory: String = "/")
    {
        self.variables = variables
        self.soundDeviceDirectory = soundDeviceDirectory
        self.workingDirectory = workingDirectory
    }

    /// This process's environment and working directory: the one place Vigil reads them. Build it
    /// once at the top (the CLI, or a host app's `VigilHost.Options`) and pass it down.
    public static var current: HostEnvironment {
        var vars: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let pair = String(cString: entry)
            if let eq = pair.firstIndex(of: "=") {
                vars[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
            }
            pointer += 1
        }
        return HostEnvironment(variables: vars, workingDirectory: processWorkingDirectory())
    }

    /// `getcwd`, or `/` when it fails (the directory was removed, or its path is too long).
    private static func processWorkingDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "/" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The value of `name`, when set and not empty.
    public subscript(name: String) -> String? {
        guard let value = variables[name], !value.isEmpty else { return nil }
        return value
    }

    /// The value of `name` when it is an absolute path.
    private func absolute(_ name: String) -> String? {
        guard let value = self[name], value.hasPrefix("/") else { return nil }
        return value
    }

    /// `$XDG_STATE_HOME`, else `$HOME/.local/state`; `nil` when neither is an absolute path.
    public var stateHome: String? {
        absolute("XDG_STATE_HOME") ?? absolute("HOME").map { $0 + "/.local/state" }
    }

    /// `$XDG_CONFIG_HOME`, else `$HOME/.config`; `nil` when neither is an absolute path.
    public var configHome: String? {
        absolute("XDG_CONFIG_HOME") ?? absolute("HOME").map { $0 + "/.config" }
    }

    /// `$XDG_RUNTIME_DIR` when it is an absolute path.
    public var runtimeHome: String? { absolute("XDG_RUNTIME_DIR") }

    /// The home directory of this process's account, from the password database (not `$HOME`),
    /// with a trailing `/`; the fallback when an environment names no state directory.
    public static var accountHomeDirectory: String? {
        guard let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir else { return nil }
        let path = String(cString: dir)
        guard path.hasPrefix("/") else { return nil }
        return path.hasSuffix("/") ? path : path + "/"
    }

    /// `$TMPDIR` when it is an absolute path, else `/tmp`.
    public var temporaryDirectory: String { absolute("TMPDIR") ?? "/tmp" }

    /// Vigil's state directory (`STATE_HOME/vigil`): rollback records and plugin state.
    public var vigilStateDirectory: String? { stateHome.map { $0 + "/vigil" } }

    /// The state directory of plugin `name` (`STATE_HOME/vigil/plugins/NAME`).
    public func pluginStateDirectory(_ name: String) -> String? {
        vigilStateDirectory.map { "\($0)/plugins/\(name)" }
    }

    /// The PulseAudio-protocol addresses to try, in order: each entry of `$PULSE_SERVER` (a
    /// space-separated list), then `$XDG_RUNTIME_DIR/pulse/native`.
    public var soundServerAddresses: [String] {
        var out = self["PULSE_SERVER"].map { $0.split(separator: " ").map(String.init) } ?? []
        if let runtime = runtimeHome { out.append("unix:" + runtime + "/pulse/native") }
        return out
    }

    /// The program `name` names, by ``ExecutableLookup``'s rule (the one the supervisor starts
    /// workers by): a bare name is looked up in the absolute directories of `$PATH` (an
    /// environment without `PATH` searches nothing), a relative path with a `/` is resolved against
    /// ``workingDirectory``; it must be a regular file this process may execute.
    public func executablePath(named name: String) -> String? {
        try? ExecutableLookup.resolve(name, searchPath: self["PATH"] ?? "", relativeTo: workingDirectory).get()
    }
}
