import Foundation
import Testing
import Vigil
import VigilCore
import VigilHostCheck
import VigilPlugin
import VigilTestSupport

/// Shared-library plugins end to end through `VigilHost`: the verified bytes are what runs, and
/// every refusal runs none of the library's code (its constructor would write a sentinel file).
@Suite("Shared-library plugins", .serialized, .timeLimit(.minutes(3)))
struct SharedLibraryLoadingTests {
    /// Lists `plugins` in vigil.toml and creates a host for it (which verifies them now).
    private func host(_ f: NativePluginFixture, running plugins: [String]) throws -> VigilHost {
        try f.config(plugins)
        return try f.host()
    }

    /// Expects each of `names` to have started and stopped once.
    private func expectStartedAndStopped(
        _ f: NativePluginFixture, _ names: [String], sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        for name in names {
            #expect(f.markerLines(name) == ["start \(name)", "stop \(name)"], sourceLocation: sourceLocation)
        }
    }

    /// Builds and signs plugin `alpha` (who "good"), and compiles, unsigned, an `evil.so` with the
    /// same SONAME and plugin id to swap in.
    private func goodAlphaAndEvilLibrary(_ f: NativePluginFixture) async throws {
        try await f.simplePlugin("alpha", who: "good")
        try await f.compile(
            .init(who: "evil", pluginID: "alpha", soname: "libvigiltest-alpha.so", sentinel: f.sentinel("evil")),
            output: "evil.so")
    }

    /// Builds plugins `alpha` and `beta` (both with `soname` or library `file`, when given), lists
    /// both in vigil.toml and keeps them alive; returns the host and its status.
    private func keepAliveAlphaAndBeta(_ f: NativePluginFixture, soname: String?? = nil, file: String? = nil)
        async throws -> (VigilHost, HostStatus)
    {
        for name in ["alpha", "beta"] { try await f.simplePlugin(name, soname: soname, file: file) }
        let host = try host(f, running: ["alpha", "beta"])
        return (host, await host.keepAlive())
    }

    /// Builds and signs plugin `alpha`, whose library needs (`DT_NEEDED`) a helper library that
    /// ships beside it; `listed` are the files the manifest lists as resources (`nil`: both).
    private func pluginWithHelper(_ f: NativePluginFixture, listed: [String]? = nil) async throws {
        try await f.compile(
            .init(
                who: "helper", pluginID: "-", soname: "libvigiltest-helper.so", sentinel: f.sentinel("helper"),
                isHelper: true),
            output: "libvigiltest-helper.so")
        try await f.compile(
            .init(
                who: "alpha", pluginID: "alpha", soname: "libvigiltest-alpha.so", sentinel: f.sentinel("alpha"),
                helper: "libvigiltest-helper.so"),
            output: "alpha.so")
        try f.plugin(
            "alpha", library: "libalpha.so",
            files: ["libalpha.so": "alpha.so", "libvigiltest-helper.so": "libvigiltest-helper.so"], listed: listed)
    }

    /// Starts `refused` next to a good control plugin, expects `refused` to fail with `code` and
    /// none of its library's code to have run, and returns the status. The control is the positive
    /// signal: it runs, and its constructor's sentinel appears, in the same host.
    @discardableResult
    private func runWithControl(
        _ f: NativePluginFixture, refused: String, code: String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) async throws -> HostStatus {
        if !f.exists(f.pluginsDirectory + "/control") { try await f.simplePlugin("control") }
        try? FileManager.default.removeItem(atPath: f.marker("control"))
        let host = try host(f, running: [refused, "control"])
        let status = await host.keepAlive()
        #expect(status[plugin: "control"]?.state == .running, sourceLocation: sourceLocation)
        #expect(f.markerLines("control") == ["start control"], sourceLocation: sourceLocation)
        #expect(
            f.exists(f.sentinel("control")), "a loaded library's constructor runs (the sentinel works)",
            sourceLocation: sourceLocation)
        await host.stop()
        #expect(
            status.failureCode(refused) == code, "\(refused): \(status.failureMessage(refused) ?? "running")",
            sourceLocation: sourceLocation)
        #expect(!f.exists(f.sentinel(refused)), "\(refused)'s constructor ran", sourceLocation: sourceLocation)
        return status
    }

    @Test("the signed library loads from a sealed memfd, runs through keepAlive()/stop(), and is unmapped at stop")
    func signedLibraryRuns() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha")
        let host = try host(f, running: ["alpha"])
        let status = try #require(await host.keepAlive()[plugin: "alpha"])
        #expect(status.state == .running)
        #expect(status.details["who"] == "alpha")
        #expect(status.details["object"]?.hasPrefix("/proc/self/fd/") == true, "mapped through /proc/self/fd/N")
        #expect(!NativePluginFixture.mappings(of: "alpha").isEmpty, "mapped from the plugin's memfd")
        #expect(f.markerLines("alpha") == ["start alpha"])
        #expect(f.exists(f.sentinel("alpha")))
        await host.stop()
        #expect(f.markerLines("alpha") == ["start alpha", "stop alpha"])
        #expect(NativePluginFixture.mappings(of: "alpha").isEmpty, "unmapped after stop")
        // init/create again on the next keepAlive(), from the same verified bytes.
        #expect(await host.keepAlive()[plugin: "alpha"]?.state == .running)
        await host.stop()
        #expect(f.markerLines("alpha") == ["start alpha", "stop alpha", "start alpha", "stop alpha"])
    }

    @Test("a flipped byte in the library: refused, none of its code runs")
    func flippedByte() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha")
        let path = f.pluginsDirectory + "/alpha/libalpha.so"
        var bytes = try f.dir.read("plugins/alpha/libalpha.so")
        bytes[bytes.count / 2] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try await runWithControl(f, refused: "alpha", code: "resource-mismatch")
        #expect(f.markerLines("alpha").isEmpty)
    }

    @Test("a library larger than declared: refused, none of its code runs")
    func largerThanDeclared() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: f.pluginsDirectory + "/alpha/libalpha.so"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0]))
        try handle.close()
        let status = try await runWithControl(f, refused: "alpha", code: "resource-mismatch")
        #expect(status.failureMessage("alpha")?.contains("larger than the signed size") == true)
    }

    @Test("a symbolic link in the library's place (even to the signed bytes): refused, none of its code runs")
    func symlink() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha")
        let path = f.pluginsDirectory + "/alpha/libalpha.so"
        try FileManager.default.moveItem(atPath: path, toPath: f.dir.path + "/elsewhere.so")
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: f.dir.path + "/elsewhere.so")
        try await runWithControl(f, refused: "alpha", code: "not-regular-file")
    }

    @Test("an undeclared non-system DT_NEEDED library beside it: refused, neither library's code runs")
    func undeclaredDependency() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await pluginWithHelper(f, listed: ["libalpha.so"])
        let status = try await runWithControl(f, refused: "alpha", code: "library-undeclared-dependency")
        #expect(status.failureMessage("alpha")?.contains("libvigiltest-helper.so") == true)
        #expect(!f.exists(f.sentinel("helper")))
    }

    @Test("a listed dependency is loaded from its own sealed memfd first and the plugin binds to it")
    func declaredDependency() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await pluginWithHelper(f)
        let host = try host(f, running: ["alpha"])
        // After verification, another helper where $ORIGIN would find it: it must not be what runs.
        try await f.compile(
            .init(
                who: "evil", pluginID: "-", soname: "libvigiltest-helper.so", sentinel: f.sentinel("evil"),
                isHelper: true),
            output: "evil-helper.so")
        try f.swap("alpha", file: "libvigiltest-helper.so", with: "evil-helper.so")
        #expect(await host.keepAlive()[plugin: "alpha"]?.state == .running)
        #expect(f.markerLines("alpha") == ["start alpha", "helper helper"])
        #expect(f.exists(f.sentinel("helper")))
        #expect(!f.exists(f.sentinel("evil")))
        #expect(NativePluginFixture.mappings(of: "alpha").contains { $0.contains("libvigiltest-helper.so") })
        await host.stop()
        #expect(NativePluginFixture.mappings(of: "alpha").isEmpty)
    }

    @Test("a library built for another ABI major: refused before mapping, none of its code runs")
    func wrongMajor() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha", abiMajor: 2)
        try await f.simplePlugin("beta", abiMajor: 2, manifestABI: 2)
        let status = try await runWithControl(f, refused: "alpha", code: "abi-major-mismatch")
        #expect(status.failureMessage("alpha")?.contains("ABI 2.0") == true)
        try await runWithControl(f, refused: "beta", code: "abi-major-mismatch")
    }

    @Test("a library built for a newer ABI minor: refused before mapping, none of its code runs")
    func newerMinor() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha", abiMinor: 1)
        let status = try await runWithControl(f, refused: "alpha", code: "abi-minor-too-new")
        #expect(status.failureMessage("alpha")?.contains("update Vigil") == true)
    }

    @Test("swapped on disk after verification, before dlopen: the verified code runs, the swapped code never does")
    func swapBeforeDlopen() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await goodAlphaAndEvilLibrary(f)
        let host = try host(f, running: ["alpha"])  // verifies now
        try f.swap("alpha", file: "libalpha.so", with: "evil.so")
        let status = try #require(await host.keepAlive()[plugin: "alpha"])
        #expect(status.state == .running)
        #expect(status.details["who"] == "good")
        #expect(f.markerLines("alpha") == ["start good"])
        await host.stop()
        #expect(f.exists(f.sentinel("alpha")), "the verified library's constructor ran")
        #expect(!f.exists(f.sentinel("evil")))
    }

    @Test(
        "swapped on disk after dlopen: the loaded and reloaded code stay the verified code; a new host refuses the swap"
    )
    func swapAfterDlopen() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await goodAlphaAndEvilLibrary(f)
        let host = try host(f, running: ["alpha"])
        #expect(await host.keepAlive()[plugin: "alpha"]?.state == .running)
        try f.swap("alpha", file: "libalpha.so", with: "evil.so")
        #expect(await host.status()[plugin: "alpha"]?.details["who"] == "good")
        await host.stop()
        let again = try #require(await host.keepAlive()[plugin: "alpha"])
        #expect(again.details["who"] == "good")
        await host.stop()
        #expect(f.markerLines("alpha") == ["start good", "stop good", "start good", "stop good"])
        #expect(!f.exists(f.sentinel("evil")))
        let fresh = try f.host()
        #expect(await fresh.keepAlive().failureCode("alpha") == "resource-mismatch")
        await fresh.stop()
        #expect(!f.exists(f.sentinel("evil")))
    }

    @Test("load A, unload, load B: B's own code runs from the same /proc/self/fd/N, no stale handle")
    func noStaleHandle() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha", file: "libplugin.so")
        try await f.simplePlugin("beta", file: "libplugin.so")
        let first = try host(f, running: ["alpha"])
        let a = try #require(await first.keepAlive()[plugin: "alpha"])
        #expect(a.details["who"] == "alpha")
        let helperA = try #require(a.details["helper-pid"].flatMap { Int32($0) })
        await first.stop()
        #expect(NativePluginFixture.mappings(of: "alpha").isEmpty)
        #expect(!NativePluginFixture.childProcesses().contains(helperA), "A's helper, with A's memfd, is gone")

        // Each start is a fresh helper process whose descriptor table is the same every time
        // (0-2, the socket, the memfds in order): B gets A's number, and its own code runs.
        let second = try host(f, running: ["beta"])
        let b = try #require(await second.keepAlive()[plugin: "beta"])
        #expect(b.state == .running)
        #expect(b.details["who"] == "beta")
        #expect(b.details["object"] == a.details["object"], "the descriptor number was reused, the object was not")
        #expect(b.details["helper-pid"] != a.details["helper-pid"])
        await second.stop()
        #expect(f.markerLines("alpha") == ["start alpha", "stop alpha"])
        #expect(f.markerLines("beta") == ["start beta", "stop beta"])
    }

    @Test("two plugins whose libraries have the same file name run side by side, each its own code")
    func sameFileName() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let (host, status) = try await keepAliveAlphaAndBeta(f, file: "libplugin.so")
        #expect(status[plugin: "alpha"]?.details["who"] == "alpha")
        #expect(status[plugin: "beta"]?.details["who"] == "beta")
        // Each in its own helper process (where both may well be /proc/self/fd/6).
        #expect(status[plugin: "alpha"]?.details["helper-pid"] != status[plugin: "beta"]?.details["helper-pid"])
        await host.stop()
        expectStartedAndStopped(f, ["alpha", "beta"])
    }

    @Test("two plugins whose libraries share a SONAME run side by side, each in its own helper process")
    func sameSonameSideBySide() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let (host, status) = try await keepAliveAlphaAndBeta(f, soname: "libvigiltest-same.so")
        #expect(status[plugin: "alpha"]?.details["who"] == "alpha")
        #expect(status[plugin: "beta"]?.details["who"] == "beta")
        #expect(status[plugin: "alpha"]?.details["helper-pid"] != status[plugin: "beta"]?.details["helper-pid"])
        await host.stop()
        expectStartedAndStopped(f, ["alpha", "beta"])
    }

    @Test("vigil check reports a shared-library refusal found in the bytes, and accepts a good library")
    func hostCheckCoversSharedLibraries() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha", abiMinor: 1)
        try await f.simplePlugin("beta")
        try f.config(["alpha", "beta"])
        let check = HostCheck(
            environment: RequirementChecker.Environment(
                variables: ["XDG_STATE_HOME": f.dir.path + "/state", "HOME": f.dir.path],
                soundDeviceDirectory: "/nonexistent-vigil-snd"))
        let report = check.run(configPath: f.configPath)
        #expect(report.plugins.map(\.name) == ["alpha", "beta"])
        #expect(report.plugins.map(\.state) == [.failed, .verified])
        #expect(report.diagnostics.count == 1)
        #expect(report.diagnostics.first?.message.contains("newer than this Vigil's") == true)
        #expect(!f.exists(f.sentinel("alpha")) && !f.exists(f.sentinel("beta")), "check maps nothing")
    }

    @Test("events from the plugin's own thread reach the host: interrupted, then running again")
    func eventsReachTheHost() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha", settings: #"{"marker": "\#(f.marker("alpha"))", "events": true}"#)
        let host = try host(f, running: ["alpha"])
        let events = host.events
        #expect(await host.keepAlive()[plugin: "alpha"]?.state == .running)
        var kinds: [HostEvent.Kind] = []
        for await event in events where event.plugin == "alpha" {
            kinds.append(event.kind)
            if event.kind == .resumed { break }
        }
        #expect(kinds == [.started, .interrupted(reason: "test cable pulled"), .resumed])
        #expect(await host.status()[plugin: "alpha"]?.state == .running)
        await host.stop()
        #expect(f.markerLines("alpha") == ["start alpha", "interrupted", "resumed", "stop alpha"])
    }

    @Test(
        "a descriptor larger than this Vigil's (a newer header, same major and minor) is read up to the fields it knows"
    )
    func largerDescriptor() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha", descriptorPadding: 24)
        let host = try host(f, running: ["alpha"])
        #expect(await host.keepAlive()[plugin: "alpha"]?.state == .running)
        await host.stop()
        expectStartedAndStopped(f, ["alpha"])
    }

    @Test("a library without a SONAME, one without the descriptor, and a file that is not ELF: refused, no code runs")
    func shapeRefusals() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("nosoname", soname: .some(nil))
        try await f.compile(
            .init(
                who: "bare", pluginID: "-", soname: "libvigiltest-bare.so", sentinel: f.sentinel("bare"), isHelper: true
            ),
            output: "bare.so")
        try f.plugin("bare", library: "libbare.so", files: ["libbare.so": "bare.so"])
        try f.dir.write("build/text.so", "#!/bin/sh\necho not a library\n")
        try f.plugin("text", library: "libtext.so", files: ["libtext.so": "text.so"])
        for (name, code) in [
            ("nosoname", "library-no-soname"), ("bare", "abi-no-descriptor"), ("text", "library-malformed"),
        ] {
            try await runWithControl(f, refused: name, code: code)
        }
    }

    @Test("a check in the same process while the plugin runs: its own mapping is no SONAME conflict")
    func checkWhileRunning() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha")
        let host = try host(f, running: ["alpha"])
        #expect(await host.keepAlive()[plugin: "alpha"]?.state == .running)
        let report = HostCheck(
            environment: RequirementChecker.Environment(
                variables: ["XDG_STATE_HOME": f.dir.path + "/state", "HOME": f.dir.path],
                soundDeviceDirectory: "/nonexistent-vigil-snd")
        ).run(configPath: f.configPath)
        #expect(report.diagnostics.isEmpty, "\(report.diagnostics)")
        await host.stop()
    }

    @Test("a RUNPATH outside the system directories (where an unsigned libc could wait): refused, no code runs")
    func unsafeRunpath() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha", runpath: f.dir.path + "/evil-libs")
        let status = try await runWithControl(f, refused: "alpha", code: "library-unsafe-search-path")
        #expect(status.failureMessage("alpha")?.contains(f.dir.path + "/evil-libs") == true)
    }

    @Test("a library naming another plugin (note and plugin_id): refused before mapping, its constructor never runs")
    func pluginIDMismatch() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.simplePlugin("alpha", pluginID: "someone-else")
        let status = try await runWithControl(f, refused: "alpha", code: "plugin-id-mismatch")
        #expect(status.failureMessage("alpha")?.contains("\"someone-else\"") == true)
        #expect(NativePluginFixture.mappings(of: "alpha").isEmpty)
        #expect(f.markerLines("alpha").isEmpty)
    }

    @Test("no Vigil note, a note for another plugin, or one whose ABI is not the descriptor's: refused before mapping")
    func noteRefusals() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let variants: [(String, NativePluginFixture.Build, String)] = [
            (
                "nonote", .init(who: "nonote", pluginID: "nonote", soname: nil, noteID: .some(nil)),
                "plugin-note-missing"
            ),
            (
                "otherid", .init(who: "otherid", pluginID: "otherid", soname: nil, noteID: "someone-else"),
                "plugin-id-mismatch"
            ),
            (
                "noteabi", .init(who: "noteabi", pluginID: "noteabi", soname: nil, noteABIMinor: 7),
                "plugin-note-mismatch"
            ),
            (
                "longid",
                .init(who: "longid", pluginID: "longid", soname: nil, noteID: String(repeating: "x", count: 200)),
                "plugin-note-malformed"
            ),
        ]
        for (name, template, code) in variants {
            var build = template
            build.soname = "libvigiltest-\(name).so"
            build.sentinel = f.sentinel(name)
            try await f.compile(build, output: "\(name).so")
            try f.plugin(name, library: "lib\(name).so", files: ["lib\(name).so": "\(name).so"])
            let status = try await runWithControl(f, refused: name, code: code)
            #expect(f.markerLines(name).isEmpty)
            if code == "plugin-note-missing" {
                // The remedy names both ways to emit the note.
                #expect(status.failureMessage(name)?.contains("VIGIL_PLUGIN_NOTE(\"\(name)\")") == true)
                #expect(status.failureMessage(name)?.contains("@section(\".note.vigil\") @used") == true)
            }
        }
    }

    @Test(
        "a plugin_id that differs from a correct note: still refused after init (the one check after mapping), unmapped"
    )
    func descriptorIDMismatchAfterInit() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        try await f.compile(
            .init(who: "alpha", pluginID: "someone-else", soname: "libvigiltest-alpha.so", noteID: "alpha"),
            output: "alpha.so")
        try f.plugin("alpha", library: "libalpha.so", files: ["libalpha.so": "alpha.so"])
        let host = try host(f, running: ["alpha"])
        let status = await host.keepAlive()
        #expect(status.failureCode("alpha") == "plugin-id-mismatch")
        #expect(status.failureMessage("alpha")?.contains("\"someone-else\"") == true)
        #expect(NativePluginFixture.mappings(of: "alpha").isEmpty)
        #expect(f.markerLines("alpha").isEmpty)
        await host.stop()
    }
}
