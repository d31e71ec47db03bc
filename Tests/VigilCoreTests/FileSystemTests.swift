import Testing
import VigilBase
import VigilCore
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// SafeFile's capped reads (sized by the file, never by the cap) and AtomicFile's writes.
@Suite struct FileSystemTests {
    @Test("a capped read returns the exact bytes of files of every size up to the cap, and refuses one byte more")
    func cappedReadsAreExact() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let cap = 10_000
        for size in [0, 1, 4095, 4096, 4097, 9_999, cap] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let path = try dir.write("file-\(size)", bytes)
            #expect(try SafeFile.read(path, cap: cap, what: "test file") == bytes, "size \(size)")
        }
        let tooLarge = try dir.write("too-large", [UInt8](repeating: 1, count: cap + 1))
        let error = #expect(throws: CoreError.self) { try SafeFile.read(tooLarge, cap: cap, what: "test file") }
        #expect(error?.code == .fileTooLarge)
    }

    @Test("a file whose size stat does not tell (/proc) is still read whole, in growing steps")
    func readsPastTheStatSize() throws {
        // /proc files report st_size 0; their contents are larger than the first buffer.
        let bytes = try SafeFile.read("/proc/self/status", cap: 1 << 20, what: "process status")
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("Name:"))
        #expect(text.contains("\nVmRSS:") || text.contains("\nThreads:"))
        #expect(bytes.count > 1)
        let error = #expect(throws: CoreError.self) {
            try SafeFile.read("/proc/self/status", cap: 16, what: "process status")
        }
        #expect(error?.code == .fileTooLarge)
    }

    @Test("a file that cannot be opened is an I/O failure that keeps the failed call and its errno as its cause")
    func openFailuresKeepTheirCause() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let file = try dir.write("plain", "x")
        let error = #expect(throws: CoreError.self) { try SafeFile.read(file + "/below", cap: 16, what: "test file") }
        #expect(error?.code == .ioFailure)
        #expect(error?.cause?.systemCall == SystemCallError("open", errno: ENOTDIR))
        #expect(error?.message == "cannot open the test file \(file)/below: Not a directory")
    }

    @Test("a directory opened once reads many files as the path-based read does: links refused, missing is nil")
    func openedDirectoryReadsLikeThePathBasedRead() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        _ = try dir.write("plugin/plugin.json", "manifest")
        _ = try dir.write("plugin/sounds/rain.ogg", "rain")
        _ = try dir.write("outside/secret", "secret")
        #expect(symlink(dir.url("outside/secret"), dir.url("plugin/linked")) == 0)
        #expect(symlink(dir.url("outside"), dir.url("plugin/linkeddir")) == 0)
        guard let opened = try SafeFile.OpenedDirectory(dir.url("plugin")) else {
            Issue.record("the plugin directory was not opened")
            return
        }
        #expect(opened.entryNames() == ["plugin.json", "sounds", "linked", "linkeddir"])
        for _ in 0..<3 {
            #expect(
                try opened.readIfPresent(relativePath: "plugin.json", cap: 64, what: "manifest")
                    == Array("manifest".utf8))
            #expect(
                try opened.readIfPresent(relativePath: "sounds/rain.ogg", cap: 64, what: "resource")
                    == Array("rain".utf8))
            #expect(try opened.readIfPresent(relativePath: "plugin.json.minisig", cap: 64, what: "signature") == nil)
            #expect(try opened.readIfPresent(relativePath: "nothing/here", cap: 64, what: "resource") == nil)
            for relative in ["linked", "linkeddir/secret"] {
                let viaOpened = #expect(throws: CoreError.self) {
                    try opened.readIfPresent(relativePath: relative, cap: 64, what: "resource")
                }
                let viaPath = #expect(throws: CoreError.self) {
                    try SafeFile.readIfPresent(
                        relativePath: relative, inside: dir.url("plugin"), cap: 64, what: "resource")
                }
                #expect(viaOpened?.code == .notRegularFile)
                #expect(viaOpened?.message == viaPath?.message)
            }
            let tooLarge = #expect(throws: CoreError.self) {
                try opened.readIfPresent(relativePath: "plugin.json", cap: 4, what: "manifest")
            }
            #expect(tooLarge?.code == .fileTooLarge)
        }
        if let _ = try SafeFile.OpenedDirectory(dir.url("missing")) {
            Issue.record("a missing directory was opened")
        }
    }

    @Test("a write that is not durable still replaces the file atomically, with its mode and no temporary left")
    func nonDurableWrite() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("status.json", "old")
        try AtomicFile.write(Array("new contents".utf8), to: path, mode: 0o600, durable: false)
        #expect(try dir.read("status.json") == Array("new contents".utf8))
        #expect(try dir.mode("status.json") == 0o600)
        #expect(try dir.list() == ["status.json"])
    }

    @Test("paths are made absolute against the base given, never the process's working directory")
    func pathsResolveAgainstTheGivenBase() {
        #expect(Path.absolute("vigil.toml", relativeTo: "/srv/app") == "/srv/app/vigil.toml")
        #expect(Path.absolute("./a/../b//c/", relativeTo: "/srv/app/") == "/srv/app/b/c")
        #expect(Path.absolute("../../../x", relativeTo: "/srv/app") == "/x", "no climbing above /")
        #expect(Path.absolute("/etc/vigil.toml", relativeTo: "/srv/app") == "/etc/vigil.toml")
        // Without a base a relative path stays relative: the kernel resolves it when it is opened.
        #expect(Path.normalized("a/./b/../c") == "a/c")
        #expect(Path.normalized("../a/../../b") == "../../b")
        #expect(Path.normalized("a/..") == ".")
        #expect(Path.normalized("/a/../../b/") == "/b")
    }
}
