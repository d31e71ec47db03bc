import Foundation
import Testing
import VigilCore
import VigilHostCheck
import VigilPlugin
import VigilTestSupport

@testable import Vigil

/// Errors keep their code and location as fields from the core to the host and `vigil check`;
/// nothing is parsed back out of a message.
@Suite struct StructuredErrorTests {
    @Test func aConfigErrorKeepsItsCodeAndLocationThroughTheHostAndTheCheck() throws {
        let project = try HostProject()
        defer { project.remove() }
        try project.config("plugins = []\n\nbogus = 1\n")
        do {
            _ = try VigilHost(
                configPath: project.configPath,
                options: VigilHost.Options(
                    publishStatus: false, environment: HostEnvironment(variables: project.environment)),
                logger: TestPlugins.quietLogger)
            Issue.record("an invalid configuration was accepted")
        } catch {
            #expect(error.code == .configuration)
            #expect(error.cause?.code == .configInvalid)
            #expect(error.cause?.location == SourceLocation(path: project.configPath, line: 3, column: 1))
        }
        // The check shows the location with the path as given, from the same field.
        let relative = HostCheck(environment: HostEnvironment(variables: project.environment))
            .run(configPath: project.configPath)
        let diagnostic = try #require(relative.diagnostics.first)
        #expect(diagnostic.location == SourceLocation(path: project.configPath, line: 3, column: 1))
        #expect(diagnostic.message.hasPrefix("bogus: unknown key"))
        #expect(diagnostic.description.hasPrefix("\(project.configPath):3:1: error: bogus: unknown key"))
    }
}
