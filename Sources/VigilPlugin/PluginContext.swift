public import CoreMetrics
public import Logging

/// Everything the host hands a plugin instance when it creates it.
public struct PluginContext: Sendable {
    /// The plugin's name, as in its manifest and `vigil.toml` (for example `"silent-engine"`).
    public let pluginName: String

    /// The host application's name, used to identify streams, notifications and log lines
    /// (`name` in `vigil.toml`'s `[host]` table, else the executable's name).
    public let hostName: String

    /// The manifest's `settings` defaults overlaid by the plugin's table in `vigil.toml`.
    public let settings: PluginSettings

    /// The logger to use; the host has already attached `plugin.name` metadata.
    public let logger: Logger

    /// Where `run()` reports readiness (``PluginReporter/ready()``) and every later change.
    public let reporter: PluginReporter

    /// A directory the plugin may keep state in (created 0700 on first use by the plugin; for a
    /// shared-library plugin, by the host before its helper process confines itself),
    /// below `$XDG_STATE_HOME/vigil/plugins/NAME`.
    public let stateDirectory: String

    /// The host's environment (variables, directories, `PATH` lookup). A plugin reads this, never
    /// the process environment, so a host built with an injected environment is obeyed.
    public let environment: HostEnvironment

    /// Where to record metrics (swift-metrics), as ``logger`` is where to log: the host's factory
    /// (a no-op unless the host exports metrics). A plugin never bootstraps `MetricsSystem`.
    public let metrics: any MetricsFactory

    /// Creates a context whose ``metrics`` are swift-metrics' no-op (plugin tests; hosts that
    /// record no metrics).
    public init(
        pluginName: String,
        hostName: String,
        settings: PluginSettings,
        logger: Logger,
        reporter: PluginReporter,
        stateDirectory: String,
        environment: HostEnvironment
    ) {
        self.init(
            pluginName: pluginName, hostName: hostName, settings: settings, logger: logger, reporter: reporter,
            stateDirectory: stateDirectory, environment: environment, metrics: NOOPMetricsHandler.instance)
    }

    /// Creates a context. Hosts create these (with their own environment); plugin tests may too.
    public init(
        pluginName: String,
        hostName: String,
        settings: PluginSettings,
        logger: Logger,
        reporter: PluginReporter,
        stateDirectory: String,
        environment: HostEnvironment,
        metrics: any MetricsFactory
    ) {
        self.environment = environment
        self.metrics = metrics
        self.pluginName = pluginName
        self.hostName = hostName
        self.settings = settings
        self.logger = logger
        self.reporter = reporter
        self.stateDirectory = stateDirectory
    }
}
