import VigilCore
import VigilMetrics

extension HostCheck {
    /// `[metrics]`'s refusal as an error diagnostic, with its code (`metrics-listen-not-loopback`…).
    func metricsDiagnostics(_ configuration: HostConfiguration, located: ([String]) -> SourceLocation?)
        -> [Diagnostic]
    {
        do throws(MetricsSettingsError) {
            _ = try MetricsSettings(table: configuration.pluginSettings["metrics"])
            return []
        } catch {
            let key = ["listen", "textfile", "allow_non_loopback"].first { error.message.contains("] \($0) =") }
            return [
                Diagnostic(
                    severity: .error, location: located(["metrics"] + (key.map { [$0] } ?? [])), plugin: nil,
                    message: "\(error.message) (\(error.code))")
            ]
        }
    }
}
