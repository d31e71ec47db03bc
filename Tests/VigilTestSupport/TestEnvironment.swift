public import VigilPlugin

extension TestDirectory {
    /// A host environment made of this directory alone, for hosts, checks and configurations under
    /// test: `HOME` is the directory, state goes to `state/`, the runtime directory is `run/`, the
    /// working directory is the directory itself and there are no sound devices. `extra` adds or
    /// replaces variables. Nothing of the test process's own environment is in it.
    public func environment(_ extra: [String: String] = [:]) -> HostEnvironment {
        let variables = ["XDG_STATE_HOME": url("state"), "XDG_RUNTIME_DIR": url("run"), "HOME": path]
        return HostEnvironment(
            variables: variables.merging(extra) { $1 }, soundDeviceDirectory: "/nonexistent-vigil-snd",
            workingDirectory: path)
    }
}
