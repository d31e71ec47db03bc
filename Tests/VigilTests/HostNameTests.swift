import Logging
import Testing
import Vigil
import VigilTestSupport

/// `VigilHost.name(configPath:environment:)`: the host's name before the host is made (the
/// journal's SYSLOG_IDENTIFIER from the first entry on, docs/logs.md), the same as `hostName`.
@Suite("the host's name before the host")
struct HostNameTests {
    private static func host(_ project: HostProject) throws -> VigilHost {
        try VigilHost(
            configPath: project.configPath,
            options: VigilHost.Options(publishStatus: false, environment: project.environment),
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
    }

    @Test("[host] name, else the executable's name (also when the file does not read): as hostName")
    func nameAsTheHostHasIt() throws {
        let project = try HostProject()
        defer { project.remove() }
        try project.config("plugins = []\n\n[host]\nname = \"journal-app\"\n")
        #expect(VigilHost.name(configPath: project.configPath, environment: project.environment) == "journal-app")
        #expect(try Self.host(project).hostName == "journal-app")
        try project.config("plugins = []\n")
        let unnamed = try Self.host(project).hostName
        #expect(VigilHost.name(configPath: project.configPath, environment: project.environment) == unnamed)
        #expect(
            VigilHost.name(configPath: project.dir.path + "/missing.toml", environment: project.environment) == unnamed)
        try project.config("plugins = [\n")
        #expect(VigilHost.name(configPath: project.configPath, environment: project.environment) == unnamed)
    }
}
