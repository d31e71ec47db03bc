import VigilCore
public import VigilMetrics
public import VigilPlugin

extension VigilHost {
    /// `[metrics]` of the `vigil.toml` this host was built from (both ways out off by default).
    public nonisolated var metricsSettings: MetricsSettings { options.metricsSettings }

    /// `[metrics]` of the `vigil.toml` that ``init(configPath:registry:options:logger:)`` would read,
    /// for a host that must choose its metrics factory before it builds the host (`vigil up`).
    /// - Throws: ``VigilError/Code/configuration`` when the file cannot be read or `[metrics]` is invalid.
    public static func metricsSettings(configPath: String?, environment: HostEnvironment) throws(VigilError)
        -> MetricsSettings
    {
        let path = try resolveConfigPath(configPath, environment: environment)
        let configuration: HostConfiguration
        do throws(CoreError) {
            configuration = try HostConfiguration.load(path: path, environment: environment)
        } catch {
            throw VigilError(code: .configuration, message: error.description, cause: error)
        }
        do throws(MetricsSettingsError) {
            return try MetricsSettings(table: configuration.pluginSettings["metrics"])
        } catch {
            throw VigilError(code: .configuration, message: "\(configuration.path): \(error.message)")
        }
    }
}

extension VigilHost {
    /// Whether the host is alive, for a health probe (`/healthz`): the host's loop answers — asked
    /// for the plugins' details as ``status()`` asks, so a loop held up (by a plugin whose details
    /// call does not return) does not answer — and ``keepAlive()``, not ``stop()``, is the latest
    /// request. The caller puts its own deadline on the answer.
    public func isAlive() async -> Bool {
        _ = await status()
        return machine.desiredUp
    }
}
