import Testing
import VigilCore
import VigilHostCheck
import VigilMetrics
import VigilPlugin
import VigilTestSupport

/// `[metrics]` of vigil.toml: what it accepts, and each refusal with its own code.
@Suite("[metrics] settings")
struct MetricsSettingsTests {
    static func settings(_ table: [String: SettingValue]) throws(MetricsSettingsError) -> MetricsSettings {
        try MetricsSettings(table: table)
    }

    static func code(_ table: [String: SettingValue]) -> MetricsSettingsCode? {
        do throws(MetricsSettingsError) {
            _ = try settings(table)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("off by default: no table, or an empty one, turns nothing on")
    func offByDefault() throws {
        #expect(try MetricsSettings(table: nil) == MetricsSettings())
        #expect(try !Self.settings([:]).isEnabled)
    }

    @Test("loopback listen addresses, a Unix socket and a textfile are accepted")
    func accepted() throws {
        #expect(try Self.settings(["listen": .string("127.0.0.1:9464")]).listen == .inet(host: "127.0.0.1", port: 9464))
        #expect(try Self.settings(["listen": .string("127.0.0.53:1")]).listen?.isLoopback == true)
        #expect(try Self.settings(["listen": .string("[::1]:9464")]).listen == .inet(host: "::1", port: 9464))
        #expect(try Self.settings(["listen": .string("localhost:80")]).listen == .inet(host: "localhost", port: 80))
        #expect(try Self.settings(["listen": .string("unix:/run/vigil.sock")]).listen == .unix(path: "/run/vigil.sock"))
        let textfile = try Self.settings(["textfile": .string("/var/lib/prometheus/node-exporter/vigil.prom")])
        #expect(textfile.textfile == "/var/lib/prometheus/node-exporter/vigil.prom" && textfile.isEnabled)
    }

    @Test("an address other than loopback needs the operator's explicit allow_non_loopback")
    func nonLoopback() throws {
        #expect(Self.code(["listen": .string("0.0.0.0:9464")]) == .listenNotLoopback)
        #expect(Self.code(["listen": .string("192.168.1.20:9464")]) == .listenNotLoopback)
        #expect(Self.code(["listen": .string("[::]:9464")]) == .listenNotLoopback)
        let allowed = try Self.settings(["listen": .string("0.0.0.0:9464"), "allow_non_loopback": .bool(true)])
        #expect(allowed.listen == .inet(host: "0.0.0.0", port: 9464) && allowed.listen?.isLoopback == false)
    }

    @Test("malformed addresses, textfiles and keys each have their code")
    func refusals() {
        for bad in [
            "9464", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:http", "example.com:9464",
            "[::1:9464", "unix:relative.sock", "unix:/" + String(repeating: "a", count: 120),
        ] {
            #expect(Self.code(["listen": .string(bad)]) == .listenInvalid, "\(bad)")
        }
        for bad in ["vigil.prom", "/var/lib/node/vigil.txt", "relative/dir/vigil.prom"] {
            #expect(Self.code(["textfile": .string(bad)]) == .textfileInvalid, "\(bad)")
        }
        #expect(Self.code(["listen": .integer(9464)]) == .invalid)
        #expect(Self.code(["port": .integer(9464)]) == .invalid)
        #expect(Self.code(["allow_non_loopback": .string("yes")]) == .invalid)
    }

    @Test("a refused [metrics] is an error of `vigil check`, located at the key, with its code")
    func checkReportsIt() throws {
        let project = try HostProject()
        defer { project.remove() }
        try project.config(
            """
            plugins = []

            [metrics]
            textfile = "/tmp/vigil.prom"
            listen = "10.1.2.3:9464"
            """)
        let report = HostCheck(environment: project.environment, probeEnvironment: false).run(
            configPath: project.configPath)
        let errors = report.diagnostics.filter { $0.severity == .error }
        #expect(errors.count == 1, "\(report.diagnostics)")
        let error = try #require(errors.first)
        #expect(error.message.contains("metrics-listen-not-loopback") && error.message.contains("allow_non_loopback"))
        #expect(error.location?.line == 5, "\(error)")

        try project.config("plugins = []\n\n[metrics]\ntextfile = \"/tmp/vigil.prom\"\nlisten = \"127.0.0.1:9464\"\n")
        let good = HostCheck(environment: project.environment, probeEnvironment: false).run(
            configPath: project.configPath)
        #expect(!good.hasErrors, "\(good.diagnostics)")
    }
}
