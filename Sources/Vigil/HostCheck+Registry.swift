public import VigilCore
public import VigilHostCheck
public import VigilPlugin

extension HostCheck {
    /// Creates a checker for a host that runs the implementations in `registry`.
    public init(
        registry: PluginRegistry, environment: RequirementChecker.Environment = .current, probeEnvironment: Bool = true
    ) {
        self.init(entries: Set(registry.entries), environment: environment, probeEnvironment: probeEnvironment)
    }
}
