import Foundation
import Testing
import Vigil
import VigilLibraryCheck
import VigilTestSupport

/// Issue 25, class 1: the library check reads every structure where glibc's loader reads it, and
/// refuses a library whose file view and loader view could differ. The libraries are built by gcc,
/// then patched as an attacker would (``ELFPatch``), signed, and given to the real `vigil` binary.
@Suite("The library check reads what the loader reads", .serialized, .timeLimit(.minutes(3)))
struct LoaderViewTests {
    /// Signs `plugins/alpha` from `build/patched`, plus a good `control`, and writes vigil.toml for both.
    private func signPatched(_ f: NativePluginFixture, _ patched: [UInt8]) async throws {
        try Data(patched).write(to: URL(fileURLWithPath: f.dir.path + "/build/patched.so"))
        try f.plugin("alpha", library: "libalpha.so", files: ["libalpha.so": "patched.so"])
        try await f.simplePlugin("control")
        try f.config(["alpha", "control"])
    }

    /// `vigil plugin verify`, `vigil check --json` and `vigil up` on alpha (patched) and control:
    /// each refuses alpha saying `reason`, an in-process host with `code`, and under `vigil up` none
    /// of alpha's code (nor the code it hid) runs while the control runs.
    private func expectRefusedEverywhere(
        _ f: NativePluginFixture, code: String, reason: String, sentinels: [String],
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) async throws {
        let host = try f.host()
        let status = await host.keepAlive()
        await host.stop()
        #expect(
            status.failureCode("alpha") == code, "\(status.failureMessage("alpha") ?? "running")",
            sourceLocation: sourceLocation)

        let environment: [String: String?] = [
            "XDG_STATE_HOME": f.dir.path + "/state", "XDG_RUNTIME_DIR": f.dir.path + "/run", "HOME": f.dir.path,
        ]
        let verify = try await VigilExecutable.run(
            ["plugin", "verify", f.pluginsDirectory + "/alpha", "--fingerprint", f.fingerprint], in: f.dir.path,
            environment: environment)
        #expect(verify.status == 1, "verify: \(verify.stdout)\(verify.stderr)", sourceLocation: sourceLocation)
        #expect(verify.stderr.contains(reason), "verify: \(verify.stderr)", sourceLocation: sourceLocation)
        #expect(!verify.stdout.contains("loadable"), sourceLocation: sourceLocation)

        let check = try await VigilExecutable.run(
            ["check", "--json", "--config", f.configPath], in: f.dir.path, environment: environment)
        #expect(check.stdout.contains(reason), "check: \(check.stdout)", sourceLocation: sourceLocation)
        #expect(check.status != 0, "check: \(check.stdout)", sourceLocation: sourceLocation)

        let output = f.dir.path + "/up.out"
        var upEnvironment = ProcessInfo.processInfo.environment
        for (key, value) in environment { upEnvironment[key] = value }
        upEnvironment["PULSE_SERVER"] = "unix:" + f.dir.path + "/no-such-pulse-socket"
        upEnvironment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=" + f.dir.path + "/no-such-system-bus"
        upEnvironment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
        let up = try ChildProcess(
            VigilExecutable.path, ["up", "--config", f.configPath], environment: upEnvironment, stdout: output,
            stderr: output)
        defer { up.terminate(grace: 5) }
        let printed = { (try? TextFile.read(output)) ?? "" }
        #expect(
            await RuntimeFixtures.waitUntil(timeout: 60) {
                printed().contains("control: running") && printed().contains("alpha: failed: ")
                    && printed().contains(reason)
            },
            "up: \(printed())", sourceLocation: sourceLocation)
        up.signal(SIGTERM)
        _ = await up.waitForExit(timeout: 30)
        #expect(
            f.exists(f.sentinel("control")), "the control's constructor ran under vigil up",
            sourceLocation: sourceLocation)
        for sentinel in sentinels {
            #expect(!f.exists(f.sentinel(sentinel)), "\(sentinel)'s constructor ran", sourceLocation: sourceLocation)
        }
    }

    private let hidden = "its dynamic array does not end (DT_NULL) inside its PT_DYNAMIC segment's 48 bytes"

    @Test(
        "a DT_NEEDED on an unsigned library at an absolute path, hidden past a shrunk PT_DYNAMIC: refused everywhere, no code runs"
    )
    func hiddenNeeded() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let evil = f.dir.path + "/build/libevil-dependency.so"
        try await f.compile(
            .init(who: "evil", pluginID: "-", soname: nil, sentinel: f.sentinel("evil"), isHelper: true),
            output: "libevil-dependency.so")
        let bytes = try await f.compile(
            .init(
                who: "alpha", pluginID: "alpha", soname: "libvigiltest-alpha.so", sentinel: f.sentinel("alpha"),
                extraArguments: ["-Wl,--no-as-needed", evil]),
            output: "alpha.so")
        #expect(try ELFImage(bytes).needed.contains(evil), "gcc wrote the absolute DT_NEEDED")
        var patch = ELFPatch(bytes)
        patch.hideDynamicTail()
        try await signPatched(f, patch.bytes)
        try await expectRefusedEverywhere(
            f, code: "library-dynamic-unterminated", reason: hidden, sentinels: ["alpha", "evil"])
    }

    @Test(
        "an unsafe DT_RUNPATH hidden the same way (it would lead glibc to an unsigned libutil.so.1): refused, no code runs"
    )
    func hiddenRunpath() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let evilDirectory = f.dir.path + "/evil-libs"
        try FileManager.default.createDirectory(atPath: evilDirectory, withIntermediateDirectories: true)
        // An unsigned stand-in for a system library the host has not loaded, where the RUNPATH points.
        try await f.compile(
            .init(who: "evil", pluginID: "-", soname: "libutil.so.1", sentinel: f.sentinel("evil"), isHelper: true),
            output: "libutil.so.1")
        try FileManager.default.copyItem(
            atPath: f.dir.path + "/build/libutil.so.1", toPath: evilDirectory + "/libutil.so.1")
        let bytes = try await f.compile(
            .init(
                who: "alpha", pluginID: "alpha", soname: "libvigiltest-alpha.so", sentinel: f.sentinel("alpha"),
                runpath: evilDirectory, extraArguments: ["-Wl,--no-as-needed", "-L", evilDirectory, "-l:libutil.so.1"]),
            output: "alpha.so")
        let image = try ELFImage(bytes)
        #expect(image.searchPath == [evilDirectory] && image.needed.contains("libutil.so.1"))
        var patch = ELFPatch(bytes)
        patch.hideDynamicTail()
        try await signPatched(f, patch.bytes)
        try await expectRefusedEverywhere(
            f, code: "library-dynamic-unterminated", reason: hidden, sentinels: ["alpha", "evil"])
    }

    /// A gcc-built plugin library (GNU hash unless `hashStyle` says otherwise).
    private func library(_ f: NativePluginFixture, hashStyle: String = "gnu") async throws -> [UInt8] {
        try await f.compile(
            .init(
                who: "alpha", pluginID: "alpha", soname: "libvigiltest-alpha.so",
                extraArguments: ["-Wl,--hash-style=\(hashStyle)"]),
            output: "alpha-\(hashStyle).so")
    }

    @Test("the descriptor is found by dlsym's own lookup, GNU hash and SysV hash alike, and the note is read")
    func lookupAndNote() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        for style in ["gnu", "sysv", "both"] {
            let image = try ELFImage(try await library(f, hashStyle: style))
            #expect(image.descriptor?.magic == 0x4C50_4756, "\(style)")
            #expect(image.descriptor?.abiMajor == 1 && image.descriptor?.structSize == 48, "\(style)")
            #expect(image.note == ELFImage.PluginNote(abiMajor: 1, abiMinor: 0, id: "alpha"), "\(style)")
            #expect(image.soname == "libvigiltest-alpha.so")
        }
        // The Swift declaration Vigil prints for a plugin without a note is the C macro's note, byte for byte.
        let bytes = try await library(f)
        let note = PluginNoteSource.words(id: "alpha").flatMap { w in (0..<4).map { UInt8((w >> (8 * $0)) & 0xFF) } }
        #expect(bytes.indices.contains { bytes[$0..<min(bytes.count, $0 + note.count)].elementsEqual(note) })
        #expect(PluginNoteSource.swift(id: "alpha").contains("@section(\".note.vigil\") @used"))
    }

    @Test("every way the file and the loader could see different bytes has its own refusal")
    func viewMismatches() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let bytes = try await library(f)
        _ = try ELFImage(bytes)
        typealias Kind = ELFImage.Problem.Kind
        let loads = ELFPatch(bytes).programHeaders(1)
        #expect(loads.count >= 2)
        let cases: [(String, Kind, (inout ELFPatch) -> Void)] = [
            ("dynamic array past PT_DYNAMIC's p_filesz", .dynamicUnterminated, { $0.hideDynamicTail() }),
            (
                "dynamic array that runs off its load segment", .dynamicUnterminated,
                { p in
                    // No DT_NULL at all: from the DT_NULL to the end of the load segment's file bytes every
                    // entry is a harmless DT_DEBUG, and PT_DYNAMIC claims far more than that.
                    let (offset, entries) = p.dynamicEntries()
                    let load = loads.first { p.u64($0 + 8) <= offset && offset < p.u64($0 + 8) + p.u64($0 + 32) }!
                    let end = Int(p.u64(load + 8) + p.u64(load + 32))
                    for at in stride(from: offset + (entries.count - 1) * 16, through: end - 16, by: 16) {
                        p.set64(at, 21)
                        p.set64(at + 8, 0)
                    }
                    p.set64(p.programHeaders(2)[0] + 32, 1 << 24)
                }
            ),
            (
                "PT_DYNAMIC offset not where its address maps", .viewMismatch,
                { p in p.set64(p.programHeaders(2)[0] + 8, p.u64(p.programHeaders(2)[0] + 8) + 16) }
            ),
            ("two PT_DYNAMIC", .dynamicAmbiguous, { p in p.set32(p.programHeaders(0x6474_E551)[0], 2) }),
            (
                "DT_STRTAB given twice", .dynamicAmbiguous,
                { p in
                    var entries = p.dynamicEntries().entries
                    let strtab = entries.first { $0.tag == 5 }!
                    entries.insert(strtab, at: 0)
                    entries.removeLast(2)  // drop one harmless entry (DT_RELACOUNT sits late) to keep the size
                    entries.append((0, 0))
                    p.writeDynamic(entries)
                }
            ),
            (
                "load segment past the end of the file", .segmentOutsideFile,
                { p in p.set64(loads.last! + 32, UInt64(p.bytes.count)) }
            ),
            (
                "load segment offset not congruent with its address", .segmentMisaligned,
                { p in p.set64(loads[1] + 8, p.u64(loads[1] + 8) + 8) }
            ),
            (
                "load segment mapped over the page of the one before", .segmentsOverlap,
                { p in
                    p.set64(loads[1] + 8, p.u64(loads[0] + 8))
                    p.set64(loads[1] + 16, p.u64(loads[0] + 16))
                }
            ),
            (
                "DT_STRTAB outside every load segment", .addressUnmapped,
                { p in
                    var entries = p.dynamicEntries().entries
                    let i = entries.firstIndex { $0.tag == 5 }!
                    entries[i].value = 0x7FFF_0000
                    p.writeDynamic(entries)
                }
            ),
            (
                "symbol table section header elsewhere than DT_SYMTAB", .sectionsDisagree,
                { p in
                    let dynsym = p.sectionHeaders(11)[0]
                    p.set64(dynsym + 16, p.u64(dynsym + 16) + 24)
                }
            ),
            (
                "an allocated section whose offset the load segments do not map", .sectionsDisagree,
                { p in
                    let text = p.sectionHeaders(1).first { p.u64($0 + 8) & 0x4 != 0 }!  // SHF_EXECINSTR
                    p.set64(text + 24, p.u64(text + 24) + 0x1000)
                }
            ),
        ]
        for (name, kind, patch) in cases {
            var p = ELFPatch(bytes)
            patch(&p)
            do {
                _ = try ELFImage(p.bytes)
                Issue.record("\(name): not refused")
            } catch {
                #expect(error.kind == kind, "\(name): \(error.reason)")
            }
        }
    }

    @Test("every cap on what the check reads has its own refusal")
    func caps() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let bytes = try await library(f)
        _ = try ELFImage(bytes)
        typealias Kind = ELFImage.Problem.Kind
        let cases: [(Kind, (inout ELFImage.Limits) -> Void)] = [
            (.tooLarge, { $0.fileSize = bytes.count - 1 }),
            (.tooManySegments, { $0.programHeaders = 2 }),
            (.tooManySections, { $0.sections = 3 }),
            (.tooManyDynamicEntries, { $0.dynamicEntries = 3 }),
            (.stringTooLong, { $0.stringLength = 4 }),
            (.tooManyNotes, { $0.notes = 1 }),
            (.tooManySymbols, { $0.symbols = 0 }),
        ]
        for (kind, change) in cases {
            var limits = ELFImage.Limits.standard
            change(&limits)
            do {
                _ = try ELFImage(bytes, limits: limits)
                Issue.record("\(kind) was not refused")
            } catch {
                #expect(error.kind == kind, "\(error.reason)")
            }
        }
        // A note's plugin id longer than the note allows.
        let long = try await f.compile(
            .init(
                who: "alpha", pluginID: "alpha", soname: "libvigiltest-alpha.so",
                noteID: String(repeating: "x", count: 128)),
            output: "long.so")
        do {
            _ = try ELFImage(long)
            Issue.record("a 128-byte plugin id was not refused")
        } catch {
            #expect(error.kind == .noteMalformed, "\(error.reason)")
        }
    }
}
