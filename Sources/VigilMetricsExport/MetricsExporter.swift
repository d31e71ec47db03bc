public import Logging
public import ServiceLifecycle
public import Vigil
public import VigilMetrics

/// What `[metrics]` asks for, as services to run beside a host: the textfile writer and the
/// HTTP endpoints, each only when configured.
public enum MetricsExporter {
    /// The services for `settings` (none when both ways out are off). Put them BEFORE the host in a
    /// `ServiceGroup`: it stops services in reverse order, so the host's last states are exported.
    public static func services(
        settings: MetricsSettings, export: PrometheusExport, host: VigilHost, logger: Logger
    ) -> [any Service] {
        var services: [any Service] = []
        if let path = settings.textfile {
            services.append(MetricsTextfile(path: path, export: export, logger: logger))
        }
        if let address = settings.listen {
            services.append(MetricsServer(address: address, export: export, host: host, logger: logger))
        }
        return services
    }
}
