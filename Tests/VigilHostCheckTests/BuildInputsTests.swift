import Foundation
import Testing
import VigilCore
import VigilHostCheck
import VigilTestSupport

/// The build check fails rather than go stale: every file `vigil check` reads must be one of the
/// inputs SwiftPM planned the build with.
@Suite("BuildInputs: the files a check reads against the build's inputs")
struct BuildInputsTests {
    /// A project with one signed plugin, and its configuration as loaded.
    static func project() throws -> (HostProject, HostConfiguration) {
        let project = try HostProject()
        let fp = try project.signedPlugin("engine")
        try project.config("plugins = [\"engine\"]\n[trusted_plugins]\nengine = \"\(fp)\"\n")
        return (project, try HostConfiguration.load(path: project.configPath, environment: project.environment))
    }

    /// What `unwatched` lists inside the project (a first-party manifests directory may exist too).
    static func inProject(_ paths: [String], _ project: HostProject) -> [String] {
        paths.filter { $0.hasPrefix(project.dir.path + "/") }
    }

    @Test("the configuration, the plugin paths and what is in them, hidden files and symlinks left out")
    func enumeration() throws {
        let (project, configuration) = try Self.project()
        defer { project.remove() }
        try project.dir.write("manifests/.cache/state", "x")
        try project.dir.write("manifests/engine/.hidden", "x")
        try FileManager.default.createSymbolicLink(
            atPath: project.dir.url("manifests/elsewhere"), withDestinationPath: "/etc")
        let all = Self.inProject(BuildInputs.unwatched(configuration: configuration, watched: []), project)
        let manifests = project.dir.url("manifests")
        #expect(all.contains(project.configPath))
        #expect(all.contains(manifests) && all.contains(manifests + "/engine"))
        #expect(all.contains(manifests + "/engine/plugin.json") && all.contains(manifests + "/engine/payload.txt"))
        #expect(!all.contains { $0.contains("/.") }, "hidden: \(all)")
        #expect(!all.contains { $0.hasPrefix(manifests + "/elsewhere") }, "a symlink was followed: \(all)")
        #expect(all == all.sorted())
    }

    @Test("a file that appeared after the build was planned is the one unwatched input, however it is spelled")
    func newFileIsUnwatched() throws {
        let (project, configuration) = try Self.project()
        defer { project.remove() }
        let planned = BuildInputs.unwatched(configuration: configuration, watched: [])
        // The plugin's list spells paths its own way: "/./" and "x/../" are the same files.
        let spelled = Set(planned.map { $0.replacingOccurrences(of: "/manifests/", with: "/manifests/./") })
        #expect(BuildInputs.unwatched(configuration: configuration, watched: spelled).isEmpty)
        let added = try project.dir.write("manifests/engine/extra.wav", "RIFF")
        #expect(BuildInputs.unwatched(configuration: configuration, watched: Set(planned)) == [added])
    }

    @Test("a report gains one error naming the new files, or saying the list cannot be read")
    func reportChecksTheList() throws {
        let (project, _) = try Self.project()
        defer { project.remove() }
        let check = HostCheck(entries: ["ledger"], environment: project.environment, probeEnvironment: false)
        let report = check.run(configPath: project.configPath)
        #expect(!report.hasErrors, "\(report.diagnostics)")
        let configuration = try HostConfiguration.load(path: project.configPath, environment: project.environment)
        let list = project.dir.url("inputs.txt")
        let everything = BuildInputs.unwatched(configuration: configuration, watched: [])
        try (everything.joined(separator: "\n") + "\n").write(toFile: list, atomically: true, encoding: .utf8)
        #expect(read(list) == Set(everything))
        #expect(!report.checkingBuildInputs(listPath: list, environment: project.environment).hasErrors)

        let added = try project.dir.write("manifests/engine/extra.wav", "RIFF")
        let stale = report.checkingBuildInputs(listPath: list, environment: project.environment)
        #expect(stale.diagnostics.count == report.diagnostics.count + 1)
        let message = try #require(stale.diagnostics.last?.message)
        #expect(message.hasPrefix("the check reads 1 file that appeared after SwiftPM planned this build (\(added))"))
        #expect(message.contains("touch Package.swift"))

        let unreadable = report.checkingBuildInputs(
            listPath: project.dir.url("absent.txt"), environment: project.environment)
        #expect(unreadable.diagnostics.last?.message.contains("cannot be read") == true)
        #expect(unreadable.diagnostics.last?.message.contains("swift package clean") == true)
    }

    private func read(_ list: String) -> Set<String>? { try? BuildInputs.readList(at: list) }
}
