import Foundation
import Testing
import VigilCore
import VigilHostCheck
import VigilLibraryCheck
import VigilPlugin
import VigilTestSupport

@testable import Vigil
@testable import VigilHostCore

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
                    publishStatus: false, environment: project.environment),
                logger: TestPlugins.quietLogger)
            Issue.record("an invalid configuration was accepted")
        } catch {
            #expect(error.code == .configuration)
            #expect(error.cause?.code == .configInvalid)
            #expect(error.cause?.location == SourceLocation(path: project.configPath, line: 3, column: 1))
        }
        // The check shows the location with the path as given, from the same field.
        let relative = HostCheck(environment: project.environment)
            .run(configPath: project.configPath)
        let diagnostic = try #require(relative.diagnostics.first)
        #expect(diagnostic.location == SourceLocation(path: project.configPath, line: 3, column: 1))
        #expect(diagnostic.message.hasPrefix("bogus: unknown key"))
        #expect(diagnostic.description.hasPrefix("\(project.configPath):3:1: error: bogus: unknown key"))
    }
}

/// A plugin's failure keeps its typed code through the status file: every code a failure can
/// have reads back as itself, and a code this `vigil` does not know is refused, not guessed.
@Suite struct PluginFailureCodeTests {
    static func status(_ failure: PluginFailure) -> HostStatus {
        HostStatus(
            pid: 1, hostName: "h", configPath: nil,
            plugins: [PluginStatus(name: "p", version: nil, state: .failed(failure), since: 0, details: [:])],
            sleep: nil)
    }

    @Test func everyCodeReadsBackFromTheStatusFile() throws {
        let codes: [PluginFailure.Code] =
            CoreError.Code.Kind.allCases.map { .refused(CoreError.Code($0)) }
            + [.plugin(.invalidSetting), .plugin(.unknownEntry), .plugin(.startFailed), .plugin(.resumeFailed)]
            + [.sharedLibrary(.malformedLibrary), .sharedLibrary(.missingSoname)]
        for code in codes {
            #expect(PluginFailure.Code(code.description) == code, "\(code)")
            let failure = PluginFailure(code: code, plugin: "p", message: "why — fix")
            let read = try HostStatus(jsonData: Self.status(failure).jsonData())
            #expect(read.plugins.first?.state == .failed(failure), "\(code)")
        }
        #expect(PluginFailure.Code("no-such-code") == nil)
    }

    @Test func anUnknownCodeInAStatusFileIsRefused() throws {
        let failure = PluginFailure(code: .plugin(.startFailed), plugin: "p", message: "why")
        let text = String(decoding: Self.status(failure).jsonData(), as: UTF8.self)
        #expect(text.contains(#""code":"start-failed""#))
        let future = Data(text.replacingOccurrences(of: "start-failed", with: "from-a-newer-vigil").utf8)
        let error = #expect(throws: VigilError.self) { try HostStatus(jsonData: future) }
        #expect(error?.code == .statusUnreadable)
        #expect(error?.message.contains("from-a-newer-vigil") == true)
    }
}
