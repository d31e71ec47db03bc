import Foundation

extension TestDirectory {
    /// The environment of a `vigil` run in this directory: the runtime directory `run/` (which
    /// the caller creates, 0700), the state directory `state/` and HOME here, no sound server and
    /// no session bus, and the repository's first-party manifests.
    public var cliEnvironment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["XDG_RUNTIME_DIR"] = path + "/run"
        env["XDG_STATE_HOME"] = path + "/state"
        env["HOME"] = path
        env["PULSE_SERVER"] = "unix:" + path + "/no-such-pulse-socket"
        env["VIGIL_FIRST_PARTY_MANIFESTS"] = VigilExecutable.packageRoot + "/manifests"
        env.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
        return env
    }
}
