import ArgumentParser
import Logging
import ServiceLifecycle
import Vigil
import VigilCheckCommands
import VigilMetrics
import VigilMetricsExport

/// `[metrics]` for `vigil up`: the CLI bootstraps the metrics (libraries never do) by giving the
/// host a Prometheus registry of its own, and runs the textfile writer and the endpoints beside it,
/// moved by a reload that changes `[metrics]`.
enum UpMetrics {
    /// The registry the host records into, and the way its reloads reach the endpoints. The
    /// registry is made even while both ways out are off, so that a reload that turns one on
    /// exports the counters since the start (recording into it wakes nothing).
    static func export(options: inout VigilHost.Options) -> (PrometheusExport, MetricsEndpoints.Reconfiguration) {
        let export = PrometheusExport()
        let reconfiguration = MetricsEndpoints.Reconfiguration()
        options.metrics = export
        options.applyMetricsSettings = { settings throws(VigilError) in
            do throws(MetricsExportError) {
                try await reconfiguration.apply(settings)
            } catch {
                throw VigilError(
                    code: error.code == .listenFailed ? .metricsListenFailed : .reloadRefused,
                    message: "\(error.message)\n(the host keeps running its previous configuration)")
            }
        }
        return (export, reconfiguration)
    }

    /// The service to run BEFORE the host in its group (stopped after it, so its last states are
    /// exported).
    static func services(
        export: PrometheusExport, reconfiguration: MetricsEndpoints.Reconfiguration, host: VigilHost, logger: Logger
    ) -> [ServiceGroupConfiguration.ServiceConfiguration] {
        [
            .init(
                service: MetricsEndpoints(
                    settings: host.metricsSettings, export: export, host: host, reconfiguration: reconfiguration,
                    logger: logger))
        ]
    }

    /// Says why the endpoints could not be served (`[metrics] listen` in use, no such address),
    /// with the code, and ends `vigil up` with 69 (EX_UNAVAILABLE: docs/exit-codes.md): another
    /// try may work once the address is free, so systemd restarts it.
    static func exit(_ failure: MetricsExportError) -> ExitCode {
        CLI.printErrorLine("error: \(failure.code.rawValue): \(failure.message)")
        return ExitCode(ExitCodes.unavailable)
    }
}
