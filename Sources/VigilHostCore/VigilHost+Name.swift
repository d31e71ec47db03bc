import VigilCore
import VigilHostCheck
import VigilPlugin

extension VigilHost {
    /// The ``hostName`` a host made from `configPath` (found as ``init(configPath:registry:options:logger:)``
    /// finds it) will have: `[host] name`, else the executable's name. For a process that sets up
    /// its logging before it makes the host (the journal's `SYSLOG_IDENTIFIER`); a file that does
    /// not read gives the executable's name (the host's init then says what is wrong with it).
    public static func name(configPath: String?, environment: HostEnvironment) -> String {
        let declared = try? HostConfiguration.load(
            path: resolveConfigPath(configPath, environment: environment), environment: environment
        ).host.name
        return declared ?? executableName()
    }
}
