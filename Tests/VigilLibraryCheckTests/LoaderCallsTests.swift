import Glibc
import Testing
import VigilLibraryCheck

/// The loader's Linux calls (CVigilLoader, reached only through ``LoaderCalls``), on this kernel.
@Suite("LoaderCalls: memfds, seals and dladdr on the real kernel")
struct LoaderCallsTests {
    @Test("a sealed memfd keeps its bytes: writes, growth and further seals are refused")
    func sealedMemfd() throws {
        let fd = try LoaderCalls.memfdCreate("vigil-test", flags: [.closeOnExec, .allowSealing])
        defer { close(fd) }
        #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
        let bytes: [UInt8] = [1, 2, 3, 4]
        #expect(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == 4)
        #expect(try LoaderCalls.seals(of: fd).isEmpty)
        let all: LoaderCalls.Seals = [.shrink, .grow, .write, .seal]
        try LoaderCalls.addSeals(all, to: fd)
        #expect(try LoaderCalls.seals(of: fd).isSuperset(of: all))
        #expect(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, 1, 0) } == -1 && errno == EPERM)
        #expect(ftruncate(fd, 1) == -1 && errno == EPERM)
        let refused = #expect(throws: SystemCallError.self) { try LoaderCalls.addSeals(.grow, to: fd) }
        #expect(refused?.call == "fcntl(F_ADD_SEALS)" && refused?.number == EPERM)
        var back = [UInt8](repeating: 0, count: 4)
        #expect(back.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 4, 0) } == 4)
        #expect(back == bytes)
    }

    @Test("a memfd without sealing refuses seals; a bad flag and a bad descriptor carry their errno")
    func failuresCarryTheirErrno() throws {
        let fd = try LoaderCalls.memfdCreate("vigil-test", flags: .closeOnExec)
        defer { close(fd) }
        let unsealable = #expect(throws: SystemCallError.self) { try LoaderCalls.addSeals(.write, to: fd) }
        #expect(unsealable?.number == EPERM)
        let badFlag = #expect(throws: SystemCallError.self) {
            _ = try LoaderCalls.memfdCreate("vigil-test", flags: LoaderCalls.MemfdFlags(rawValue: 0x4000_0000))
        }
        #expect(badFlag?.call == "memfd_create" && badFlag?.number == EINVAL)
        let closed = #expect(throws: SystemCallError.self) { _ = try LoaderCalls.seals(of: -1) }
        #expect(closed?.call == "fcntl(F_GET_SEALS)" && closed?.number == EBADF)
    }

    @Test("dladdr names the loaded object holding an address, and nothing for an address outside every object")
    func objectPath() throws {
        let retain = try #require(dlsym(nil, "swift_retain"))
        let path = try #require(LoaderCalls.objectPath(containing: retain))
        #expect(path.hasPrefix("/") && path.hasSuffix("/libswiftCore.so"), "\(path)")
        let heap = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { heap.deallocate() }
        #expect(LoaderCalls.objectPath(containing: heap) == nil)
    }
}
