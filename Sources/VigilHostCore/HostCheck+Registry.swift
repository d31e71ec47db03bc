public import VigilCore
public import VigilHostCheck
public import VigilPlugin

extension HostCheck {
    /// Creates a checker for a host that runs the implementations in `registry`, in `environment`
    /// (a library host passes its ``VigilHost/Options/environment``).
    public init(registry: PluginRegistry, environment: RequirementChecker.Environment, probeEnvironment: Bool = true) {
        self.init(entries: Set(registry.entries), environment: environment, probeEnvironment: probeEnvironment)
    }
}
