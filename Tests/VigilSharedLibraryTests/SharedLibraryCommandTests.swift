import Foundation
import Testing
import VigilTestSupport

/// `vigil plugin verify` and `vigil check` on shared-library plugins (the built `vigil` binary).
@Suite("vigil commands on shared-library plugins", .serialized, .timeLimit(.minutes(2)))
struct SharedLibraryCommandTests {
    @Test("plugin verify accepts the signed example and names its library and ABI")
    func verifyExample() async throws {
        let dir = try TestDirectory("vigil-native-cli")
        defer { dir.remove() }
        let r = try await VigilExecutable.run(
            ["plugin", "verify", ExamplePluginTests.directory + "/heartbeat-example", "--fingerprint", ExamplePluginTests.fingerprint],
            in: dir.path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("shared library libVigilHeartbeatExample.so loadable (plugin ABI 1.0)"))
    }

    @Test("plugin verify and check refuse a library for a newer ABI minor, and check runs none of its code")
    func verifyAndCheckRefuse() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.compile(
            .init(who: "alpha", pluginID: "alpha", soname: "libvigiltest-alpha.so", sentinel: f.sentinel("alpha"), abiMinor: 7),
            output: "alpha.so")
        try f.plugin("alpha", library: "libalpha.so", files: ["libalpha.so": "alpha.so"])
        try f.config(["alpha"])
        let environment: [String: String?] = ["XDG_STATE_HOME": f.dir.path + "/state", "HOME": f.dir.path]
        let verify = try await VigilExecutable.run(
            ["plugin", "verify", f.pluginsDirectory + "/alpha", "--fingerprint", f.fingerprint], in: f.dir.path,
            environment: environment)
        #expect(verify.status == 1)
        #expect(verify.stderr.contains("error: [alpha]") && verify.stderr.contains("ABI 1.7"))
        let check = try await VigilExecutable.run(["check", "--config", f.configPath], in: f.dir.path, environment: environment)
        #expect(check.status == 1)
        #expect(check.stdout.contains("error: [alpha]") || check.stderr.contains("error: [alpha]"))
        #expect((check.stdout + check.stderr).contains("newer than this Vigil's 1.0"))
        let json = try await VigilExecutable.run(
            ["check", "--config", f.configPath, "--json"], in: f.dir.path, environment: environment)
        #expect(json.status == 1)
        #expect(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) is [String: Any])
        #expect(!f.exists(f.sentinel("alpha")))
    }
}
