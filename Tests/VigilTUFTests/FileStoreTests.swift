import Glibc
import Testing
import VigilTUF
import VigilTestSupport

/// The metadata store's own files: a round trip, and refusals that carry the errno of the call
/// that failed (read at the call, not after the message was built).
@Suite("TUF file store")
struct FileStoreTests {
    @Test func writeReadAndRemoveRoundTrip() throws {
        let dir = try TestDirectory("vigil-tuf-store")
        defer { dir.remove() }
        let store = FileStore(directory: dir.path)
        try store.write("root.json", Array("{}".utf8))
        #expect(try store.read("root.json", limit: 16) == Array("{}".utf8))
        try store.remove("root.json")
        #expect(try store.read("root.json", limit: 16) == nil)
        try store.remove("root.json")  // removing what is not there is not an error
        // No temporary file is left beside the metadata.
        #expect(try dir.list() == [])
    }

    @Test func writeIntoAMissingDirectoryNamesMkstempAndENOENT() throws {
        let dir = try TestDirectory("vigil-tuf-store")
        defer { dir.remove() }
        let store = FileStore(directory: dir.url("missing"))
        expectRefusal(SystemCallError("mkstemp", errno: ENOENT)) { try store.write("root.json", [0x7B, 0x7D]) }
    }

    @Test func readOfASymbolicLinkNamesOpenAndELOOP() throws {
        let dir = try TestDirectory("vigil-tuf-store")
        defer { dir.remove() }
        try dir.write("target.json", "{}")
        #expect(symlink(dir.url("target.json"), dir.url("root.json")) == 0)
        expectRefusal(SystemCallError("open", errno: ELOOP)) {
            _ = try FileStore(directory: dir.path).read("root.json", limit: 16)
        }
    }

    @Test func removeOfADirectoryNamesUnlinkAndEISDIR() throws {
        let dir = try TestDirectory("vigil-tuf-store")
        defer { dir.remove() }
        #expect(mkdir(dir.url("root.json"), 0o700) == 0)
        expectRefusal(SystemCallError("unlink", errno: EISDIR)) {
            try FileStore(directory: dir.path).remove("root.json")
        }
    }

    /// `body` fails with a storage error whose cause is `failure` and whose message names it.
    func expectRefusal(
        _ failure: SystemCallError, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) {
        let error = #expect(throws: TUFError.self, sourceLocation: sourceLocation) { try body() }
        #expect(error?.code == .storage, sourceLocation: sourceLocation)
        #expect(error?.cause?.systemCall == failure, sourceLocation: sourceLocation)
        #expect(error?.message.contains(failure.description) == true, sourceLocation: sourceLocation)
    }
}
