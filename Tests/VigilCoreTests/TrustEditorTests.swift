import Foundation
import Synchronization
import Testing
import VigilCore
import VigilCrypto
import VigilTestSupport

@Suite struct TrustEditorTests {
    let fpA = try! Fingerprint(parsing: "ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4=")
    let fpB = try! Fingerprint(parsing: "ed25519:ioJy7E9uRlLYcMlKTGdQlzdNRh9asTxdtsoQBInw4sk=")

    static let original = """
        # My host — keep this comment
        plugins = ["silent-engine", "supervisor"]   # trailing comment

        [trusted_plugins]
        # first-party
        silent-engine = "ed25519:JQZlvvSz54g2JyAymbg4TFDYnSCgJgID8VRXRsRBfX4="  # pinned 2026

        [silent-engine]
        mode   =   "sine"   # odd spacing survives
        """

    /// Writes `text` to a fresh `vigil.toml`, runs `edit` on its path and returns the file's text after.
    private func afterEditing(_ text: String, _ edit: (String) throws -> Void) throws -> String {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("vigil.toml", text)
        try edit(path)
        return String(decoding: try dir.read("vigil.toml"), as: UTF8.self)
    }

    @Test func addsAnEntryKeepingEveryOtherByte() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("vigil.toml", Self.original)
        #expect(try TrustEditor.trust(plugin: "supervisor", fingerprint: fpB, configPath: path) == .added)
        let text = String(decoding: try dir.read("vigil.toml"), as: UTF8.self)
        let expected = Self.original.replacingOccurrences(
            of: "# pinned 2026\n", with: "# pinned 2026\nsupervisor = \"\(fpB)\"\n")
        #expect(text == expected)
        #expect(
            try HostConfiguration.load(path: path, environment: dir.environment()).trustedPlugins["supervisor"] == fpB)
        // Idempotent: the same edit changes nothing.
        #expect(try TrustEditor.trust(plugin: "supervisor", fingerprint: fpB, configPath: path) == .unchanged)
        #expect(String(decoding: try dir.read("vigil.toml"), as: UTF8.self) == expected)
        #expect(try dir.list() == ["vigil.toml"])
    }

    @Test("concurrent edits of one file: every one lands, none is lost to a race")
    func concurrentEditsAllLand() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("vigil.toml", Self.original)
        let names = (0..<24).map { "plugin-\($0)" }
        let failures = Mutex<[String]>([])
        // Threads, not tasks: each edit blocks in flock, which must not park the cooperative pool.
        DispatchQueue.concurrentPerform(iterations: names.count) { i in
            do {
                _ = try TrustEditor.trust(
                    plugin: names[i], fingerprint: i.isMultiple(of: 2) ? fpA : fpB, configPath: path)
            } catch {
                failures.withLock { $0.append("\(names[i]): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let trusted = try HostConfiguration.load(path: path, environment: dir.environment()).trustedPlugins
        for (i, name) in names.enumerated() {
            #expect(trusted[name] == (i.isMultiple(of: 2) ? fpA : fpB), "\(name) missing after concurrent edits")
        }
        #expect(trusted["silent-engine"] == fpA)
        #expect(try dir.list() == ["vigil.toml"])
    }

    @Test func replacesOnlyTheValue() throws {
        let text = try afterEditing(Self.original) { path throws in
            let outcome = try TrustEditor.trust(plugin: "silent-engine", fingerprint: fpB, configPath: path)
            #expect(outcome == .replaced(previous: "\"\(fpA)\""))
        }
        #expect(text == Self.original.replacingOccurrences(of: fpA.description, with: fpB.description))
    }

    @Test func removesOnlyTheEntryLine() throws {
        let text = try afterEditing(Self.original) { path throws in
            #expect(try TrustEditor.untrust(plugin: "silent-engine", configPath: path) == .removed)
            #expect(try TrustEditor.untrust(plugin: "silent-engine", configPath: path) == .unchanged)
        }
        #expect(text == Self.original.replacingOccurrences(of: "silent-engine = \"\(fpA)\"  # pinned 2026\n", with: ""))
    }

    @Test func appendsTheTableWhenMissingAndCreatesTheFile() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("vigil.toml", "plugins = [\"a\"] # no newline at end")
        #expect(try TrustEditor.trust(plugin: "a", fingerprint: fpA, configPath: path) == .added)
        #expect(
            String(decoding: try dir.read("vigil.toml"), as: UTF8.self)
                == "plugins = [\"a\"] # no newline at end\n\n[trusted_plugins]\na = \"\(fpA)\"\n")
        let newPath = dir.url("new/vigil.toml")
        try dir.makeDirectory("new")
        #expect(try TrustEditor.trust(plugin: "a", fingerprint: fpA, configPath: newPath) == .added)
        #expect(String(decoding: try dir.read(newPath), as: UTF8.self) == "[trusted_plugins]\na = \"\(fpA)\"\n")
    }

    @Test func insertsIntoAnEmptyTableBeforeTheNextTable() throws {
        let text = try afterEditing("[trusted_plugins]\n\n[a]\nx = 1\n") { path in
            _ = try TrustEditor.trust(plugin: "a", fingerprint: fpA, configPath: path)
        }
        #expect(text == "[trusted_plugins]\na = \"\(fpA)\"\n\n[a]\nx = 1\n")
    }

    @Test func brokenFileIsRefusedAndUnchanged() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let broken = "plugins = [\"a\"\n[trusted_plugins]\n"
        let path = try dir.write("vigil.toml", broken)
        #expect(throws: CoreError.self) { try TrustEditor.trust(plugin: "a", fingerprint: fpA, configPath: path) }
        do {
            _ = try TrustEditor.trust(plugin: "a", fingerprint: fpA, configPath: path)
        } catch {
            #expect(error.code == .configInvalid)
            #expect(error.description.contains("vigil.toml:"))
        }
        #expect(String(decoding: try dir.read("vigil.toml"), as: UTF8.self) == broken)
        #expect(try dir.list() == ["vigil.toml"])
    }

    @Test func inlineTablesAreRefusedRatherThanRewritten() throws {
        let original = "trusted_plugins = { a = \"\(fpA)\" }\n"
        let text = try afterEditing(original) { path throws in
            #expect(throws: CoreError.self) { try TrustEditor.trust(plugin: "b", fingerprint: fpB, configPath: path) }
        }
        #expect(text == original)
    }

    @Test func dottedKeysAreEditedInPlace() throws {
        let text = try afterEditing("trusted_plugins.a = \"\(fpA)\"\n\n[host]\nname = \"x\"\n") { path in
            _ = try TrustEditor.trust(plugin: "b", fingerprint: fpB, configPath: path)
        }
        #expect(text == "trusted_plugins.a = \"\(fpA)\"\ntrusted_plugins.b = \"\(fpB)\"\n\n[host]\nname = \"x\"\n")
    }

    @Test func writeIsAtomicAndKeepsTheMode() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("vigil.toml", Self.original)
        #expect(chmod(path, 0o640) == 0)
        var st = stat()
        stat(path, &st)
        let inodeBefore = st.st_ino
        _ = try TrustEditor.trust(plugin: "supervisor", fingerprint: fpB, configPath: path)
        stat(path, &st)
        #expect(st.st_ino != inodeBefore, "replaced by rename, not rewritten in place")
        #expect(try dir.mode("vigil.toml") == 0o640)
        #expect(try dir.list() == ["vigil.toml"], "no temporary file left")
    }

    @Test func editsThroughASymlinkKeepTheLink() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        try dir.write("real.toml", "")
        try FileManager.default.createSymbolicLink(
            atPath: dir.url("vigil.toml"), withDestinationPath: dir.url("real.toml"))
        _ = try TrustEditor.trust(plugin: "a", fingerprint: fpA, configPath: dir.url("vigil.toml"))
        #expect(
            try FileManager.default.destinationOfSymbolicLink(atPath: dir.url("vigil.toml")) == dir.url("real.toml"))
        #expect(
            try HostConfiguration.load(path: dir.url("vigil.toml"), environment: dir.environment()).trustedPlugins["a"]
                == fpA)
    }

    /// The trust list is protected like the rollback state: a file or directory others can write
    /// is refused before any edit, and an edit never leaves a looser mode than it found.
    @Test func unsafeFilesAreRefusedAndModesNeverLoosen() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("vigil.toml", Self.original)
        #expect(chmod(path, 0o666) == 0)
        #expect(throws: CoreError.self) {
            try TrustEditor.trust(plugin: "supervisor", fingerprint: fpB, configPath: path)
        }
        #expect(String(decoding: try dir.read("vigil.toml"), as: UTF8.self) == Self.original)
        #expect(try dir.mode("vigil.toml") == 0o666, "left exactly as it was")
        #expect(chmod(path, 0o600) == 0)
        #expect(chmod(dir.path, 0o777) == 0)
        do {
            _ = try TrustEditor.untrust(plugin: "silent-engine", configPath: path)
            Issue.record("edited a file in a world-writable directory")
        } catch {
            #expect(error.code == .configUnsafe)
            #expect(error.message.contains("chmod go-w \(dir.path)"))
        }
        #expect(chmod(dir.path, 0o700) == 0)
        #expect(try TrustEditor.trust(plugin: "supervisor", fingerprint: fpB, configPath: path) == .added)
        #expect(try dir.mode("vigil.toml") == 0o600)
        // A new file in an unsafe directory is not created either.
        try dir.makeDirectory("open")
        #expect(chmod(dir.url("open"), 0o777) == 0)
        #expect(throws: CoreError.self) {
            try TrustEditor.trust(plugin: "a", fingerprint: fpA, configPath: dir.url("open/vigil.toml"))
        }
        #expect(try dir.list("open").isEmpty)
    }
}
