import Dispatch
import SystemPackage
import Testing
import VigilBase
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The one read-to-the-end loop, the one write-all loop and the one directory listing every
/// module uses.
@Suite struct FileIOTests {
    /// Runs `body` with `path` opened read-only, closing it afterwards.
    private func withOpenFile<T>(_ path: String, _ body: (Int32) throws -> T) throws -> T {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0, "cannot open \(path)")
        defer { close(fd) }
        return try body(fd)
    }

    @Test("a read returns the exact bytes up to the limit, whatever the first buffer's size")
    func readsAreExactUpToTheLimit() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let path = try dir.write("file", bytes)
        for expected in [0, 1, 4096, 10_001, 1 << 20] {
            let whole = try withOpenFile(path) { try FileIO.read($0, limit: 1 << 20, expected: expected) }
            #expect(whole == bytes, "expected \(expected)")
        }
        for limit in [0, 1, 4097, 9_999, 10_000] {
            let head = try withOpenFile(path) { try FileIO.read($0, limit: limit, expected: 1) }
            #expect(head == Array(bytes[..<limit]), "limit \(limit)")
        }
    }

    @Test("a descriptor that cannot be read is a read SystemCallError with its errno")
    func unreadableDescriptor() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("file", "text")
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        let error = #expect(throws: SystemCallError.self) { try FileIO.read(fd, limit: 16) }
        #expect(error == SystemCallError("read", errno: .badFileDescriptor))
    }

    @Test("writeAll writes every byte of a write larger than a pipe's buffer, and names write when it fails")
    func writeAllWritesEverything() async throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        // 1 MiB: many times the pipe's 64 KiB, so the writer blocks and resumes while it is read.
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        // Both ends block, so each runs on a thread of its own, not on the cooperative pool.
        let received: [UInt8]? = await withCheckedContinuation { continuation in
            KernelThread.start(name: "vigil-test-rd") {
                continuation.resume(returning: try? FileIO.read(readEnd, limit: 2 << 20))
            }
            KernelThread.start(name: "vigil-test-wr") {
                try? FileIO.writeAll(writeEnd, bytes)
                close(writeEnd)
            }
        }
        #expect(received == bytes)

        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = try dir.write("read-only", "text")
        let error = try withOpenFile(path) { fd in
            #expect(throws: SystemCallError.self) { try FileIO.writeAll(fd, Array("more".utf8)) }
        }
        #expect(error == SystemCallError("write", errno: .badFileDescriptor))
    }

    @Test("contents(ofFile:) reads a kernel file whose size stat does not tell, up to the limit; nil when absent")
    func contentsOfKernelFiles() throws {
        let stat = try #require(FileIO.contents(ofFile: "/proc/self/stat", limit: 1024))
        #expect(String(decoding: stat, as: UTF8.self).hasPrefix("\(getpid()) ("))
        let status = try #require(FileIO.contents(ofFile: "/proc/self/status", limit: 1 << 20))
        #expect(status.count > 4096 || String(decoding: status, as: UTF8.self).contains("\nThreads:"))
        #expect(
            FileIO.contents(ofFile: "/proc/self/status", limit: 5).map { String(decoding: $0, as: UTF8.self) }
                == "Name:")
        #expect(FileIO.contents(ofFile: "/nonexistent/vigil-file", limit: 16) == nil)
    }

    /// ``FileLock/withExclusiveLock(on:flags:mode:failure:_:)`` with its failure as it is.
    private static func locked(_ path: String, flags: Int32, _ body: () -> Void) throws(SystemCallError) {
        try FileLock.withExclusiveLock(on: path, flags: flags, failure: { $0 }) { () throws(SystemCallError) in body() }
    }

    @Test("a second holder of an exclusive lock waits (the kernel lists it as blocked) until the first is done")
    func exclusiveLockWaits() async throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let path = dir.url("section.lock")
        let events = EventRecorder<String>()
        let release = DispatchSemaphore(value: 0)
        // Both holders block (in a semaphore, in flock), so they run on threads of their own,
        // never on the cooperative pool.
        KernelThread.start(name: "vigil-test-lk1") {
            do {
                try Self.locked(path, flags: O_RDWR | O_CREAT) {
                    events.record("first in")
                    release.wait()
                    events.record("first out")
                }
            } catch {
                events.record("first: \(error)")
            }
        }
        #expect(await events.wait(timeout: 10) { $0 == ["first in"] })
        KernelThread.start(name: "vigil-test-lk2") {
            do {
                try Self.locked(path, flags: O_RDWR) { events.record("second in") }
            } catch {
                events.record("second: \(error)")
            }
        }
        // The positive signal that the second holder really waits: /proc/locks lists its blocked
        // request (`->`) on the lock file's inode.
        var info = stat()
        try #require(stat(path, &info) == 0)
        let inode = info.st_ino
        let blocked = await RuntimeFixtures.waitUntil(timeout: 10) {
            let locks = String(decoding: FileIO.contents(ofFile: "/proc/locks", limit: 1 << 20) ?? [], as: UTF8.self)
            return locks.split(separator: "\n").contains { $0.contains("->") && $0.contains(":\(inode) ") }
        }
        #expect(blocked, "the second lock request never showed as blocked")
        #expect(events.all == ["first in"])
        release.signal()
        #expect(await events.wait(timeout: 10) { $0.count == 3 })
        #expect(events.all == ["first in", "first out", "second in"])

        let missing = #expect(throws: SystemCallError.self) {
            try Self.locked(dir.url("no/such.lock"), flags: O_RDWR) {}
        }
        #expect(missing == SystemCallError("open", errno: .noSuchFileOrDirectory))
    }

    @Test("a directory lists its names without . and ..; a missing one is nil; create makes the parents")
    func directoryNamesAndCreation() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        try dir.write("a", "1")
        try dir.write(".hidden", "2")
        try dir.makeDirectory("sub")
        #expect(Directory.names(in: dir.path)?.sorted() == [".hidden", "a", "sub"])
        #expect(Directory.names(in: dir.url("missing")) == nil)
        #expect(Directory.create(dir.url("x/y/z"), mode: 0o700) == nil)
        #expect(Directory.names(in: dir.url("x/y")) == ["z"])
        let blocked = try #require(Directory.create(dir.url("a/b"), mode: 0o700))
        #expect(blocked.path == dir.url("a/b") && blocked.error == SystemCallError("mkdir", errno: ENOTDIR))
    }
}
