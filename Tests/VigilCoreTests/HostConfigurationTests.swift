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
        let config = try HostConfiguration.load(path: path, environment: dir.environment())
        #expect(config.path == path)
        #expect(config.plugins == ["silent-engine", "supervisor"])
        #expect(config.acknowledgedUnsafePlugins == ["my-dev-plugin"])
        #expect(
            config.host == HostDeclarations(name: "my-signer", backgroundModes: ["audio"], services: ["supervisor"]))
        #expect(
            config.trustedPlugins["silent-engine"]?.description
                == "ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4=")
        #expect(
            config.trustedPlugins["supervisor"]?.description == "ed25519:ioJy7E9uRlLYcMlKTGdQlzdNRh9asTxdtsoQBInw4sk=")
        #expect(
            config.pluginPaths == [
                dir.url("manifests"), "/opt/vigil-plugins",
                HostConfiguration.firstPartyManifests(environment: dir.environment()).path,
            ])
        #expect(config.pluginSettings["silent-engine"]?["mode"] == .string("sine"))
        #expect(config.pluginSettings["silent-engine"]?["sine_amplitude"] == .double(0.02))
        #expect(
            config.pluginSettings["silent-engine"]?["nested"]
                == .table(["a": .array([.integer(1), .integer(2)]), "b": .bool(true)]))
    }

    @Test func locatesKeysHeadersAndArrayElements() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("vigil.toml", Self.example)
        let config = try HostConfiguration.load(path: path, environment: dir.environment())
        #expect(config.location(of: ["plugins"]) == SourceLocation(path: path, line: 2, column: 1))
        #expect(config.location(of: ["plugins", "silent-engine"]) == SourceLocation(path: path, line: 3, column: 3))
        #expect(config.location(of: ["plugins", "supervisor"]) == SourceLocation(path: path, line: 4, column: 3))
        #expect(config.location(of: ["host"]) == SourceLocation(path: path, line: 9, column: 1))
        #expect(config.location(of: ["host", "background_modes", "audio"])?.line == 11)
        #expect(
            config.location(of: ["trusted_plugins", "supervisor"]) == SourceLocation(path: path, line: 16, column: 1))
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
            _ = try HostConfiguration.load(path: path, environment: dir.environment())
        } catch {
            #expect(error.code == .configInvalid)
            #expect(error.description.hasPrefix(path + ":"))
            return error
        }
        Issue.record("loaded")
        return CoreError(code: .ioFailure, message: "")
    }

    @Test func syntaxErrorsCarryLineAndColumn() throws {
        let e = try failure("plugins = [\"a\"]\n\n[host\n")
        #expect(e.description.contains("vigil.toml:3:"))
    }

    /// The location is a field, not text to parse back: the message holds only the key and the
    /// problem, and the description renders `PATH:LINE:COLUMN: message` from the fields.
    @Test func locationsAreFields() throws {
        let e = try failure("plugins = [\"ok\"]\nbogus = 1\n")
        #expect(e.location?.line == 2 && e.location?.column == 1)
        #expect(e.location?.path.hasSuffix("/vigil.toml") == true)
        #expect(e.message.hasPrefix("bogus: unknown key"), "\(e.message)")
        #expect(e.description == "\(e.location!): \(e.message)")
        let syntax = try failure("plugins = [\"a\"]\n\n[host\n")
        #expect(syntax.location?.line == 3 && !syntax.message.contains("vigil.toml"))
    }

    @Test func invalidValuesAreLocated() throws {
        #expect(
            try failure("plugins = [\"ok\"]\nbogus = 1\n").description.contains("vigil.toml:2:1: bogus: unknown key"))
        #expect(try failure("plugins = [\"ok\", \"Bad\"]\n").description.contains("vigil.toml:1:18"))
        #expect(try failure("plugins = [\"a\", \"a\"]\n").message.contains("listed twice"))
        #expect(try failure("plugins = \"a\"\n").message.contains("array of strings"))
        #expect(try failure("[host]\nname = \"x\"\nmodes = []\n").description.contains("vigil.toml:3:1"))
        let fp = try failure("[trusted_plugins]\na = \"ed25519:AAAA\"\n")
        #expect(fp.description.contains("vigil.toml:2:1"))
        #expect(fp.message.contains("vigil plugin trust a"))
        #expect(try failure("[Not-A-Plugin]\nx = 1\n").message.contains("unknown key"))
        #expect(try failure("[p]\nwhen = 1979-05-27\n").description.contains("vigil.toml:2:1"))
        #expect(try failure("a = \"\u{0}\"\n").message.contains("NUL"))
    }

    /// Deep nesting, with and without a trailing NUL, is a located error, never a stack overflow:
    /// the NUL check used to run the structural scanner over the unvalidated text.
    @Test(arguments: [
        "a = " + String(repeating: "[", count: 5_000) + "\u{0}",
        "a = " + String(repeating: "{b=", count: 300_000) + "\u{0}",
        "a = " + String(repeating: "[", count: 5_000),
        "a = " + String(repeating: "{b=", count: 300_000),
        "a = " + String(repeating: "[", count: 300) + String(repeating: "]", count: 300) + "\n",
    ])
    func deepNestingIsAnErrorNotACrash(text: String) throws {
        let e = try failure(text)
        #expect(e.description.contains(text.hasSuffix("\u{0}") ? "NUL" : "vigil.toml:1:"), "\(e.description)")
    }

    @Test func deepSettingsAreRefused() throws {
        let deep = "[p]\nx = " + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "\n"
        #expect(try failure(deep).description.contains("vigil.toml:2:1: p.x"))
        #expect(try failure(deep).message.contains("nested deeper than 32 levels"))
        let table = "[p]\n" + (1...40).map { "[p" + String(repeating: ".t", count: $0) + "]\nv = 1\n" }.joined()
        #expect(try failure(table).message.contains("nested deeper than 32 levels"))
    }

    @Test func missingFileIsConfigNotFound() {
        #expect(throws: CoreError.self) {
            try HostConfiguration.load(path: "/nonexistent/vigil.toml", environment: HostEnvironment(variables: [:]))
        }
        do {
            _ = try HostConfiguration.load(
                path: "/nonexistent/vigil.toml", environment: HostEnvironment(variables: [:]))
        } catch {
            #expect(error.code == .configNotFound)
        }
    }

    @Test func findsTheNearestFileUpward() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        try dir.makeDirectory("a/b/c")
        let none = try HostConfiguration.find(startingAt: dir.url("a/b/c"), environment: dir.environment())
        #expect(none == nil || !none!.hasPrefix(dir.path))
        try dir.write("a/vigil.toml", "")
        #expect(
            try HostConfiguration.find(startingAt: dir.url("a/b/c"), environment: dir.environment())
                == dir.url("a/vigil.toml"))
        try dir.write("a/b/vigil.toml", "")
        #expect(
            try HostConfiguration.find(startingAt: dir.url("a/b/c"), environment: dir.environment())
                == dir.url("a/b/vigil.toml"))
        // A symbolic link to a regular file is a configuration like any other.
        #expect(symlink(dir.url("a/vigil.toml"), dir.url("a/b/c/vigil.toml")) == 0)
        #expect(
            try HostConfiguration.find(startingAt: dir.url("a/b/c"), environment: dir.environment())
                == dir.url("a/b/c/vigil.toml"))
    }

    /// Relative paths are resolved against the environment's working directory, not this process's
    /// (the test process runs elsewhere): the search, the file, its plugin paths and a relative
    /// `VIGIL_FIRST_PARTY_MANIFESTS`.
    @Test func relativePathsResolveAgainstTheEnvironmentsWorkingDirectory() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        #expect(FileManager.default.currentDirectoryPath != dir.path)
        let path = try dir.write("a/vigil.toml", "plugins = []\n")
        try dir.makeDirectory("a/b")
        let environment = dir.environment(["VIGIL_FIRST_PARTY_MANIFESTS": "first-party"])
        #expect(try HostConfiguration.find(startingAt: "a/b", environment: environment) == path)
        let config = try HostConfiguration.load(path: "a/vigil.toml", environment: environment)
        #expect(config.path == path)
        #expect(config.pluginPaths == [dir.url("a/manifests"), dir.url("first-party")])
        let parsed = try HostConfiguration.parse([], path: "a/b/../vigil.toml", environment: environment)
        #expect(parsed.path == path)
        #expect(HostConfiguration(path: "vigil.toml", environment: environment).path == dir.url("vigil.toml"))
    }

    /// Anything else named vigil.toml stops the search with an error naming it, so the parent's
    /// file is never used (or edited by `plugin trust`) in its place.
    @Test(arguments: ["dangling", "fifo", "directory", "device", "linked-directory"])
    func aNonRegularConfigStopsTheSearch(kind: String) throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        try dir.write("vigil.toml", "plugins = []\n")
        try dir.makeDirectory("sub")
        let candidate = dir.url("sub/vigil.toml")
        switch kind {
        case "dangling": #expect(symlink(dir.url("nothing"), candidate) == 0)
        case "fifo": #expect(mkfifo(candidate, 0o600) == 0)
        case "directory": try dir.makeDirectory("sub/vigil.toml")
        case "device": #expect(symlink("/dev/zero", candidate) == 0)
        default: #expect(symlink(dir.url("sub"), candidate) == 0)
        }
        do {
            let found = try HostConfiguration.find(startingAt: dir.url("sub"), environment: dir.environment())
            Issue.record("found \(found ?? "nothing") instead of refusing \(candidate)")
        } catch {
            #expect(error.code == .notRegularFile)
            #expect(error.message.hasPrefix(candidate + " is a "), "\(error.message)")
        }
    }

    /// StrictModes: a vigil.toml others can write, or that another user owns, or in a directory
    /// others can write (without the sticky bit), is refused with the fix.
    @Test func unsafeOwnershipOrModeIsRefused() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        try dir.makeDirectory("c")
        let path = try dir.write("c/vigil.toml", "plugins = []\n")
        func code() -> CoreError.Code? {
            do {
                _ = try HostConfiguration.load(path: path, environment: dir.environment())
                return nil
            } catch { return error.code }
        }
        #expect(code() == nil)
        for mode: mode_t in [0o666, 0o664, 0o646, 0o660] {
            #expect(chmod(path, mode) == 0)
            #expect(code() == .configUnsafe, "mode \(String(mode, radix: 8))")
        }
        #expect(chmod(path, 0o644) == 0)
        do {
            _ = try HostConfiguration.load(path: path, environment: dir.environment())
        } catch { Issue.record("\(error)") }
        #expect(chmod(path, 0o666) == 0)
        do {
            _ = try HostConfiguration.load(path: path, environment: dir.environment())
        } catch {
            #expect(error.message.contains("chmod go-w \(path)"))
        }
        #expect(chmod(path, 0o600) == 0)
        #expect(chown(path, 65534, 65534) == 0)
        #expect(code() == .configUnsafe)
        #expect(chown(path, 0, 0) == 0)
        #expect(chmod(dir.url("c"), 0o777) == 0)
        #expect(code() == .configUnsafe)
        #expect(chmod(dir.url("c"), 0o1777) == 0)
        #expect(code() == nil, "a sticky directory is safe for a file the user owns")
        #expect(chmod(dir.url("c"), 0o775) == 0)
        #expect(code() == .configUnsafe)
        #expect(chmod(dir.url("c"), 0o755) == 0)
        #expect(chown(dir.url("c"), 65534, 65534) == 0)
        #expect(code() == .configUnsafe)
        #expect(chown(dir.url("c"), 0, 0) == 0)
        #expect(code() == nil)
    }

    /// Where the first-party manifests come from, and that it is said: the override, else (for
    /// this uninstalled test build) the source checkout — found at any depth below Sources/.
    @Test func firstPartyManifestsSayWhereTheyComeFrom() {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let checkout = HostConfiguration.firstPartyManifests(environment: HostEnvironment(variables: [:]))
        #expect(checkout.path == root + "/manifests" && checkout.origin == .sourceCheckout, "\(checkout)")
        let overridden = HostConfiguration.firstPartyManifests(
            environment: HostEnvironment(variables: ["VIGIL_FIRST_PARTY_MANIFESTS": "/opt/vigil/manifests"]))
        #expect(overridden.path == "/opt/vigil/manifests" && overridden.origin == .environment)
    }

    /// The install layout comes first, for any build; a binary built for installation never falls
    /// back to the source checkout (it would find a directory of the build machine's), a
    /// development build does.
    @Test func firstPartyManifestsOfAnInstalledBinaryNeverComeFromTheCheckout() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        try dir.makeDirectory("checkout/manifests")
        let executable = dir.url("prefix/bin/vigil")
        let installedPath = dir.url("prefix/share/vigil/manifests")
        let none = HostEnvironment(variables: [:])
        func find(checkout: String?) -> HostConfiguration.FirstPartyManifests {
            HostConfiguration.firstPartyManifests(environment: none, executable: executable, checkout: checkout)
        }
        // Nothing installed: the install build names the install location, the development build the checkout.
        let install = find(checkout: nil)
        #expect(install.path == installedPath && install.origin == .installed, "\(install)")
        let development = find(checkout: dir.url("checkout"))
        #expect(development.path == dir.url("checkout/manifests") && development.origin == .sourceCheckout)
        // Installed: both use the install location, even with the checkout present.
        try dir.makeDirectory("prefix/share/vigil/manifests")
        for checkout in [nil, dir.url("checkout")] {
            let found = find(checkout: checkout)
            #expect(found.path == installedPath && found.origin == .installed, "\(found)")
        }
        // The override wins over both.
        let overridden = HostConfiguration.firstPartyManifests(
            environment: HostEnvironment(variables: ["VIGIL_FIRST_PARTY_MANIFESTS": "/opt/m"]), executable: executable,
            checkout: dir.url("checkout"))
        #expect(overridden.path == "/opt/m" && overridden.origin == .environment)
    }

    @Test func emptyFileHasDefaults() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let config = try HostConfiguration.load(path: try dir.write("vigil.toml", ""), environment: dir.environment())
        #expect(config.plugins.isEmpty && config.trustedPlugins.isEmpty)
        #expect(config.pluginPaths.first == dir.url("manifests"))
    }
}
