import CoreMetrics
import Foundation
import Logging
import Testing
import Vigil
import VigilCore
import VigilCrypto
import VigilPlugin
import VigilTestSupport

/// A temp host project with shared-library plugins compiled here by the system `cc` from
/// `TestPlugin.c` and signed with a test key.
///
/// Each test library's constructor appends to a sentinel file when given one (`-DSENTINEL=…`), so
/// a test can prove that none of a refused library's code ran — and, as the positive control, that
/// an accepted library's constructor did. Markers and sentinels live in ``outputDirectory``, which
/// every fixture manifest declares read-write (the helper confines the plugin to what its manifest
/// declares) and whose review ``config(_:)`` records, as `vigil plugin trust` does. Declaring it for
/// refused libraries too keeps their tests honest: a refusal is the loader's, not the confinement's.
struct NativePluginFixture {
    let dir: TestDirectory
    let key = MinisignSecretKey.generate()
    var fingerprint: String { key.publicKey.fingerprint.description }
    var configPath: String { dir.path + "/vigil.toml" }
    var pluginsDirectory: String { dir.path + "/plugins" }
    /// Where markers and sentinels are written: the one directory the fixture plugins declare.
    var outputDirectory: String { dir.path + "/out" }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Fixtures/TestPlugin.c"
    /// The confinement tests' attack plugin (one attack a call), linked into a test plugin built
    /// with ``Build/attacks``.
    static let attackSource = repository + "/Tests/VigilConfineTests/Fixtures/AttackPlugin.c"

    init() throws {
        dir = try TestDirectory("vigil-native")
        try dir.makeDirectory("plugins")
        try dir.makeDirectory("build")
        try dir.makeDirectory("out")
        try FileManager.default.createDirectory(
            atPath: dir.path + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    func remove() { dir.remove() }

    /// How a test library is built.
    struct Build {
        var who: String
        var pluginID: String
        /// `nil` links without a SONAME.
        var soname: String?
        var sentinel: String? = nil
        var abiMajor = 1
        var abiMinor = 0
        /// A helper library to link against (`-l`), found beside the plugin at run time.
        var helper: String? = nil
        /// Build the helper library itself instead of a plugin.
        var isHelper = false
        /// Bytes a newer header of the same major would add to the descriptor.
        var descriptorPadding = 0
        /// A DT_RUNPATH to link with.
        var runpath: String? = nil
        /// The Vigil note's plugin id: `nil` is `pluginID`, `.some(nil)` leaves the note out.
        var noteID: String?? = nil
        /// The Vigil note's ABI minor, when it should differ from the descriptor's.
        var noteABIMinor: Int? = nil
        /// More arguments for cc, after the source (libraries to link, linker options).
        var extraArguments: [String] = []
        /// Link the attack plugin in: start runs the attack its "attack" setting names.
        var attacks = false
    }

    /// Compiles `build` into `build/OUTPUT` and returns its bytes.
    @discardableResult
    func compile(_ build: Build, output: String) async throws -> [UInt8] {
        var args = [
            "-shared", "-fPIC", "-O1", "-std=c11", "-D_GNU_SOURCE", "-I",
            Self.repository + "/Sources/CVigilPluginABI/include",
            "-DWHO=\"\(build.who)\"", "-DPLUGIN_ID=\"\(build.pluginID)\"", "-DABI_MAJOR=\(build.abiMajor)",
            "-DABI_MINOR=\(build.abiMinor)", "-DDESCRIPTOR_PADDING=\(build.descriptorPadding)", "-pthread",
        ]
        if let soname = build.soname { args.append("-Wl,-soname,\(soname)") }
        if let runpath = build.runpath { args.append("-Wl,-rpath,\(runpath)") }
        switch build.noteID {
        case .none: break
        case .some(.none): args.append("-DNO_NOTE")
        case .some(.some(let id)): args.append("-DNOTE_ID=\"\(id)\"")
        }
        if let minor = build.noteABIMinor { args.append("-DNOTE_ABI_MINOR=\(minor)") }
        if let sentinel = build.sentinel { args.append("-DSENTINEL=\"\(sentinel)\"") }
        if build.isHelper { args.append("-DHELPER_LIBRARY") }
        if build.helper != nil { args.append("-DUSE_HELPER") }
        if build.attacks { args.append("-DATTACKS") }
        args += ["-o", dir.path + "/build/" + output, Self.source] + (build.attacks ? [Self.attackSource] : [])
        args += build.extraArguments
        if let helper = build.helper {
            args += ["-L", dir.path + "/build", "-l:\(helper)", "-Wl,-rpath,$ORIGIN"]
        }
        let out = try await RuntimeFixtures.run("/usr/bin/cc", args, timeout: 60)
        guard out.status == 0 else { throw RuntimeFixtures.Failure("cc failed: \(out.stderr)") }
        return try dir.read("build/" + output)
    }

    /// Writes `plugins/NAME` with `files` (from `build/`), a shared-library manifest listing
    /// `listed` as resources, and signs it.
    func plugin(
        _ name: String, library: String, files: [String: String], listed: [String]? = nil, abi: Int = 1,
        settings: String? = nil
    ) throws {
        try dir.makeDirectory("plugins/\(name)")
        for (target, source) in files {
            try FileManager.default.copyItem(
                atPath: dir.path + "/build/" + source, toPath: dir.path + "/plugins/\(name)/\(target)")
        }
        let resources = (listed ?? files.keys.sorted()).map { #"{"path": "\#($0)"}"# }.joined(separator: ", ")
        try dir.write(
            "plugins/\(name)/plugin.json",
            """
            {"schema": "vigil.plugin-manifest/v1", "name": "\(name)", "version": "1.0.0",
             "description": "native test plugin \(name)",
             "entry": {"kind": "shared-library", "path": "\(library)", "abi": \(abi)},
             "resources": [\(resources)],
             "capabilities": {"files": [{"path": "\(outputDirectory)/", "access": "read-write"}]},
             "settings": \(settings ?? #"{"marker": "\#(marker(name))"}"#)}
            """)
        _ = try PluginSigner.sign(directory: dir.path + "/plugins/\(name)", with: key)
        // The operator reviews it as published, before a test may tamper with it.
        let reviewConfig = try dir.write(
            "review-\(name).toml",
            """
            plugins = ["\(name)"]
            plugin_paths = ["\(pluginsDirectory)"]
            [trusted_plugins]
            \(name) = "\(fingerprint)"
            """)
        try review(name, configPath: reviewConfig)
    }

    /// Builds and signs plugin `name` from one compiled library: by default `who` and plugin id
    /// `name`, SONAME `libvigiltest-NAME.so`, the sentinel `name`, installed as `libNAME.so`.
    func simplePlugin(
        _ name: String, who: String? = nil, soname: String?? = nil, file: String? = nil, abiMajor: Int = 1,
        abiMinor: Int = 0, manifestABI: Int = 1, pluginID: String? = nil, descriptorPadding: Int = 0,
        runpath: String? = nil, settings: String? = nil
    ) async throws {
        let build = Build(
            who: who ?? name, pluginID: pluginID ?? name, soname: soname ?? "libvigiltest-\(name).so",
            sentinel: sentinel(name), abiMajor: abiMajor, abiMinor: abiMinor, descriptorPadding: descriptorPadding,
            runpath: runpath)
        try await compile(build, output: "\(name).so")
        let library = file ?? "lib\(name).so"
        try plugin(name, library: library, files: [library: "\(name).so"], abi: manifestABI, settings: settings)
    }

    /// The file a test plugin's start/stop append to.
    func marker(_ name: String) -> String { outputDirectory + "/\(name).marker" }

    /// The marker's lines (empty when it does not exist).
    func markerLines(_ name: String) -> [String] {
        guard let text = try? TextFile.read(marker(name)) else { return [] }
        return text.split(separator: "\n").map(String.init)
    }

    /// A sentinel path for constructors.
    func sentinel(_ label: String) -> String { outputDirectory + "/\(label).sentinel" }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// Writes vigil.toml activating `plugins`, all trusted with the fixture's key, and records the
    /// review of each one's capabilities as `vigil plugin trust NAME --yes` does.
    /// `others` are plugins from `otherPaths` trusted with the given fingerprints (the example).
    /// `tables`: more of vigil.toml (e.g. `[metrics]`), after `[trusted_plugins]`.
    func config(_ plugins: [String], others: [String: String] = [:], otherPaths: [String] = [], tables: String = "")
        throws
    {
        let list = (plugins + others.keys.sorted()).map { "\"\($0)\"" }.joined(separator: ", ")
        let trusted =
            (plugins.map { "\($0) = \"\(fingerprint)\"" }
            + others.sorted { $0.key < $1.key }.map {
                "\($0.key) = \"\($0.value)\""
            }).joined(separator: "\n")
        let paths = ([pluginsDirectory] + otherPaths).map { "\"\($0)\"" }.joined(separator: ", ")
        try dir.write(
            "vigil.toml",
            """
            plugins = [\(list)]
            plugin_paths = [\(paths)]
            [host]
            name = "native-test"
            [trusted_plugins]
            \(trusted)
            \(tables)
            """)
        for name in plugins + others.keys.sorted() { try review(name, configPath: configPath) }
    }

    /// Records the review of `name`'s capabilities as configured in `configPath`, as `vigil plugin
    /// trust NAME --yes` does. A plugin the loader refuses (one a test tampered with after
    /// ``plugin(_:library:files:listed:abi:settings:)`` recorded its review) has no review to
    /// record: the one recorded when it was signed stands, and its refusal is what its test checks.
    private func review(_ name: String, configPath: String) throws {
        let environment = dir.environment()
        let store = try RollbackStore.standard(environment: environment)
        let configuration = try HostConfiguration.load(path: configPath, environment: environment)
        guard
            let review = try? TrustTransaction.review(
                name: name, configuration: configuration, pinned: [], store: store)
        else { return }
        _ = try TrustTransaction.commit(review, store: store)
    }

    /// A host for the current vigil.toml, with private state and runtime directories.
    /// `metrics`: the factory the host records through (the no-op, as a library host's default).
    func host(metrics: any MetricsFactory = NOOPMetricsHandler.instance) throws -> VigilHost {
        let environment = [
            "XDG_STATE_HOME": dir.path + "/state", "XDG_RUNTIME_DIR": dir.path + "/run", "HOME": dir.path,
        ]
        var options = VigilHost.Options(
            publishStatus: false,
            environment: RequirementChecker.Environment(
                variables: environment, soundDeviceDirectory: "/nonexistent-vigil-snd"))
        options.metrics = metrics
        return try VigilHost(
            configPath: configPath,
            options: options,
            logger: Logger(label: "native-test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// Starts `vigil up` for the current vigil.toml as a child process (private state, runtime and
    /// home directories; its standard error in `up.err`), and returns it with the environment for
    /// `vigil status` beside it.
    func up() throws -> (host: ChildProcess, environment: [String: String?]) {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_STATE_HOME"] = dir.path + "/state"
        environment["XDG_RUNTIME_DIR"] = dir.path + "/run"
        environment["HOME"] = dir.path
        let host = try ChildProcess(
            VigilExecutable.path, ["up", "--config", configPath], environment: environment,
            stderr: dir.path + "/up.err")
        return (host, environment.mapValues { Optional($0) })
    }

    /// Replaces `plugins/NAME/FILE` by `build/SOURCE` with a rename (a new inode, as an attacker would).
    func swap(_ name: String, file: String, with source: String) throws {
        let target = dir.path + "/plugins/\(name)/\(file)"
        let temporary = target + ".swap"
        try FileManager.default.copyItem(atPath: dir.path + "/build/" + source, toPath: temporary)
        guard rename(temporary, target) == 0 else { throw RuntimeFixtures.Failure("rename failed") }
    }

    /// The lines of the maps of this process and of its children (each shared-library plugin runs
    /// in a helper process of its own) that belong to plugin `name`'s memfds.
    static func mappings(of name: String) -> [String] {
        (["self"] + childProcesses().map(String.init)).flatMap { process in
            // Read to the end: /proc files report size 0, and a one-shot read may stop early.
            let data = FileHandle(forReadingAtPath: "/proc/\(process)/maps")?.readDataToEndOfFile() ?? Data()
            let maps = String(decoding: data, as: UTF8.self)
            return maps.split(separator: "\n").map(String.init).filter { $0.contains("vigil-plugin:\(name):") }
        }
    }

    /// The PIDs of this process's children (of all its threads).
    static func childProcesses() -> [Int32] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.flatMap { task -> [Int32] in
            let data = FileHandle(forReadingAtPath: "/proc/self/task/\(task)/children")?.readDataToEndOfFile() ?? Data()
            return String(decoding: data, as: UTF8.self).split(separator: " ").compactMap { Int32($0) }
        }
    }

    /// The descriptors open in process `pid`, with what they are (`/proc/PID/fd` links).
    static func descriptors(of pid: Int32) -> [Int32: String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        var result: [Int32: String] = [:]
        for name in names {
            guard let fd = Int32(name) else { continue }
            result[fd] = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(name)")) ?? "?"
        }
        return result
    }
}

extension HostStatus {
    /// The failure code of `name`, or `nil` when it did not fail.
    func failureCode(_ name: String) -> String? {
        if case .failed(let failure) = self[plugin: name]?.state { return failure.code.description }
        return nil
    }

    func failureMessage(_ name: String) -> String? {
        if case .failed(let failure) = self[plugin: name]?.state { return failure.message }
        return nil
    }
}
