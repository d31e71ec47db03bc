import Testing
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The owned descriptor closes exactly once, and a failed call's errno is the call's own.
@Suite struct OwnedDescriptorTests {
    @Test("a descriptor closes when its owner goes, and take() hands it on open")
    func closesWhenItGoesAndTakeHandsItOn() throws {
        let dropped = TestPipe.make()
        let readFD = dropped.read.rawValue
        do { _ = consume dropped.write }  // only the write end goes
        #expect(TestPipe.hungUp(readFD, waiting: 30_000), "the dropped write end is closed")

        let kept = TestPipe.make()
        let number = kept.write.take()
        #expect(!TestPipe.hungUp(kept.read.rawValue, waiting: 0), "take() left the write end open")
        #expect(fcntl(number, F_GETFD) >= 0)
        try OwnedDescriptor(adopting: number).close()
        #expect(TestPipe.hungUp(kept.read.rawValue, waiting: 30_000))
    }

    @Test("check reports the failing call's errno, retries EINTR unless told not to, and reads negated results")
    func checkReadsErrnoAtTheCall() throws {
        #expect(throws: SystemCallError("fcntl", errno: EBADF)) {
            try SystemCallError.check("fcntl") { fcntl(-1, F_GETFD) }
        }
        var calls = 0
        let value = try SystemCallError.check("read") { () -> Int32 in
            calls += 1
            if calls == 1 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(value == 7 && calls == 2)
        #expect(throws: SystemCallError("read", errno: EINTR)) {
            try SystemCallError.check("read", retryingInterrupts: false) { () -> Int32 in
                errno = EINTR
                return -1
            }
        }
        #expect(throws: SystemCallError("sd_bus_open", errno: ECONNREFUSED)) {
            try SystemCallError.checkNegated("sd_bus_open") { -ECONNREFUSED }
        }
    }

    @Test("OwnedDescriptor(call) owns a new descriptor, or throws the call's errno")
    func initFromACall() throws {
        let file = try OwnedDescriptor("open") { open("/proc/self/status", O_RDONLY | O_CLOEXEC) }
        #expect(try FileIO.read(file.rawValue, limit: 4).count == 4)
        #expect(throws: SystemCallError("open", errno: ENOENT)) {
            _ = try OwnedDescriptor("open") { open("/nonexistent/vigil", O_RDONLY | O_CLOEXEC) }
        }
    }
}
