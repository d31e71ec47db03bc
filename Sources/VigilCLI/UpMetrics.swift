import ArgumentParser
import Logging
import ServiceLifecycle
import Vigil
import VigilCheckCommands
import VigilMetrics
import VigilMetricsExport

/// `[metrics]` for `vigil up`: the CLI bootstraps the metrics (libraries never do) by giving the
/// host a Prometheus registry of its own, and runs the textfile writer and the endpoints beside it.
enum UpMetrics {
    /// The registry for the host's options when `[metrics]` turns either way out on; nil otherwise
    /// (the host then records into swift-metrics' no-op). A `vigil.toml` that cannot be read gives
    /// nil here: building the host reports it.
    static func export(configPath: String?) -> PrometheusExport? {
        let settings = (try? VigilHost.metricsSettings(configPath: configPath, environment: CLI.environment))
        return settings?.isEnabled == true ? PrometheusExport() : nil
    }

    /// The services to run BEFORE the host in its group (stopped after it, so its last states are
    /// exported).
    static func services(export: PrometheusExport?, host: VigilHost, logger: Logger)
        -> [ServiceGroupConfiguration.ServiceConfiguration]
    {
        guard let export else { return [] }
        return MetricsExporter.services(settings: host.metricsSettings, export: export, host: host, logger: logger)
            .map { .init(service: $0) }
    }

    /// Says why the endpoints could not be served (`[metrics] listen` in use, no such address),
    /// with the code, and ends `vigil up` with 69 (EX_UNAVAILABLE: docs/exit-codes.md): another
    /// try may work once the address is free, so systemd restarts it.
    static func exit(_ failure: MetricsExportError) -> ExitCode {
        CLI.printErrorLine("error: \(failure.code.rawValue): \(failure.message)")
        return ExitCode(ExitCodes.unavailable)
    }
}
