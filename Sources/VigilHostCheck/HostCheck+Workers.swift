import FoundationEssentials
import VigilCore
import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

extension HostCheck {
    /// The location of a plugin's failure: the `[trusted_plugins]` line when the trusted key is
    /// what is wrong (it is the line to fix), else the plugin's entry in `plugins`.
    static func failureKeyPath(
        plugin name: String, refusal: HostPlan.Refusal, configuration: HostConfiguration
    ) -> [String] {
        if case .core(let error) = refusal, error.code == .keyRotation,
            configuration.location(of: ["trusted_plugins", name]) != nil
        {
            return ["trusted_plugins", name]
        }
        return ["plugins", name]
    }

    /// One diagnostic per supervisor worker whose command cannot be started on this machine,
    /// located at the worker's `command`: an error when the environment is probed (`vigil check`),
    /// a warning when only declarations are checked (the build, which runs on the build machine).
    func workerCommandDiagnostics(
        _ item: HostPlan.Item, located: ([String]) -> SourceLocation?
    ) -> [Diagnostic] {
        guard case .ready(let ready) = item.outcome, ready.loaded.manifest.sharedLibrary == nil,
            ready.loaded.manifest.entry == BuiltinEntries.supervisor
        else { return [] }
        let problems = WorkerCommandCheck.problems(in: ready.settings, hostEnvironment: environment.variables)
        return problems.map { problem in
            Diagnostic(
                severity: probeEnvironment ? .error : .warning,
                location: located([item.name, "workers", "[\(problem.index)]", "command"])
                    ?? located([item.name, "workers"]) ?? located([item.name]),
                plugin: item.name, message: problem.message)
        }
    }
}
