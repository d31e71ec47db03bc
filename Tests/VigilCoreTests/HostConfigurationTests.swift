import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilPlugin
import VigilTestSupport

@Suite struct HostConfigurationTests {
    static let example = """
        # Example host configuration
        plugins = [
          "silent-engine",   # keeps the sink awake
          "supervisor",
        ]
        plugin_paths = ["manifests", "/opt/vigil-plugins"]
        acknowledge_unsafe_plugins = ["my-dev-plugin"]

        [host]
        name = "my-signer"
        background_modes = ["audio"]
        services = ["supervisor"]

        [trusted_plugins]
        silent-engine = "ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4="
        "supervisor" = "ed25519:ioJy7E9uRlLYcMlKTGdQlzdNRh9asTxdtsoQBInw4sk="

        [silent-engine]
        mode = "sine"
        buffer_ms = 500
        sine_amplitude = 0.02
        nested = { a = [1, 2], b = true }

        """

    @Test func loadsEveryField() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("vigil.toml", Self.example)
        let config = try HostConfiguration.load(path: path)
        #expect(config.path == path)
        #expect(config.plugins == ["silent-engine", "supervisor"])
        #expect(config.acknowledgedUnsafePlugins == ["my-dev-plugin"])
        #expect(config.host == HostDeclarations(name: "my-signer", backgroundModes: ["audio"], services: ["supervisor"]))
        #expect(config.trustedPlugins["silent-engine"]?.description == "ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4=")
        #expect(config.trustedPlugins["supervisor"]?.description == "ed25519:ioJy7E9uRlLYcMlKTGdQlzdNRh9asTxdtsoQBInw4sk=")
        #expect(config.pluginPaths == [dir.url("manifests"), "/opt/vigil-plugins", HostConfiguration.firstPartyManifestDirectory])
        #expect(config.pluginSettings["silent-engine"]?["mode"] == .string("sine"))
        #expect(config.pluginSettings["silent-engine"]?["sine_amplitude"] == .double(0.02))
        #expect(config.pluginSettings["silent-engine"]?["nested"] == .table(["a": .array([.integer(1), .integer(2)]), "b": .bool(true)]))
    }

    @Test func locatesKeysHeadersAndArrayElements() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("vigil.toml", Self.example)
        let config = try HostConfiguration.load(path: path)
        #expect(config.location(of: ["plugins"]) == SourceLocation(path: path, line: 2, column: 1))
        #expect(config.location(of: ["plugins", "silent-engine"]) == SourceLocation(path: path, line: 3, column: 3))
        #expect(config.location(of: ["plugins", "supervisor"]) == SourceLocation(path: path, line: 4, column: 3))
        #expect(config.location(of: ["host"]) == SourceLocation(path: path, line: 9, column: 1))
        #expect(config.location(of: ["host", "background_modes", "audio"])?.line == 11)
        #expect(config.location(of: ["trusted_plugins", "supervisor"]) == SourceLocation(path: path, line: 16, column: 1))
        #expect(config.location(of: ["silent-engine", "buffer_ms"]) == SourceLocation(path: path, line: 20, column: 1))
        #expect(config.location(of: ["silent-engine", "nested", "b"])?.line == 22)
        #expect(config.location(of: ["nothing"]) == nil)
        #expect(config.location(of: ["silent-engine", "buffer_ms"])?.description == "\(path):20:1")
    }

    /// The error for `text`, which must be an invalid configuration.
    func failure(_ text: String) throws -> CoreError {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("vigil.toml", text)
        do {
            _ = try HostConfiguration.load(path: path)
        } catch {
            #expect(error.code == .configInvalid)
            #expect(error.message.hasPrefix(path + ":"))
            return error
        }
        Issue.record("loaded")
        return CoreError(code: .ioFailure, message: "")
    }

    @Test func syntaxErrorsCarryLineAndColumn() throws {
        let e = try failure("plugins = [\"a\"]\n\n[host\n")
        #expect(e.message.contains("vigil.toml:3:"))
    }

    @Test func invalidValuesAreLocated() throws {
        #expect(try failure("plugins = [\"ok\"]\nbogus = 1\n").message.contains("vigil.toml:2:1: bogus: unknown key"))
        #expect(try failure("plugins = [\"ok\", \"Bad\"]\n").message.contains("vigil.toml:1:18"))
        #expect(try failure("plugins = [\"a\", \"a\"]\n").message.contains("listed twice"))
        #expect(try failure("plugins = \"a\"\n").message.contains("array of strings"))
        #expect(try failure("[host]\nname = \"x\"\nmodes = []\n").message.contains("vigil.toml:3:1"))
        let fp = try failure("[trusted_plugins]\na = \"ed25519:AAAA\"\n")
        #expect(fp.message.contains("vigil.toml:2:1"))
        #expect(fp.message.contains("vigil plugin trust a"))
        #expect(try failure("[Not-A-Plugin]\nx = 1\n").message.contains("unknown key"))
        #expect(try failure("[p]\nwhen = 1979-05-27\n").message.contains("vigil.toml:2:1"))
        #expect(try failure("a = \"\u{0}\"\n").message.contains("NUL"))
    }

    @Test func missingFileIsConfigNotFound() {
        #expect(throws: CoreError.self) { try HostConfiguration.load(path: "/nonexistent/vigil.toml") }
        do {
            _ = try HostConfiguration.load(path: "/nonexistent/vigil.toml")
        } catch {
            #expect(error.code == .configNotFound)
        }
    }

    @Test func findsTheNearestFileUpward() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        try dir.makeDirectory("a/b/c")
        #expect(HostConfiguration.find(startingAt: dir.url("a/b/c")) == nil || !HostConfiguration.find(startingAt: dir.url("a/b/c"))!.hasPrefix(dir.path))
        try dir.write("a/vigil.toml", "")
        #expect(HostConfiguration.find(startingAt: dir.url("a/b/c")) == dir.url("a/vigil.toml"))
        try dir.write("a/b/vigil.toml", "")
        #expect(HostConfiguration.find(startingAt: dir.url("a/b/c")) == dir.url("a/b/vigil.toml"))
    }

    @Test func emptyFileHasDefaults() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let config = try HostConfiguration.load(path: try dir.write("vigil.toml", ""))
        #expect(config.plugins.isEmpty && config.trustedPlugins.isEmpty)
        #expect(config.pluginPaths.first == dir.url("manifests"))
    }
}
