import Foundation
import Testing
import VigilBase

/// Threads name themselves where the kernel sees it (`/proc/self/task/TID/comm`), which
/// Foundation's `Thread.name` never reaches on Linux.
@Suite struct KernelThreadTests {
    /// The name the kernel shows for thread `tid` of this process.
    private func kernelName(of tid: Int32) throws -> String {
        try String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)
            .trimmingCharacters(in: .newlines)
    }

    @Test func aDedicatedThreadShowsItsNameToTheKernel() async throws {
        let thread = DedicatedThread(name: "vigil-test-ded")
        defer { thread.close() }
        let tid = try #require(await thread.run { KernelThread.currentID() } ?? nil)
        #expect(try kernelName(of: tid) == "vigil-test-ded")
    }

    @Test func aStartedThreadShowsItsNameAndLongNamesAreCutTo15Bytes() async throws {
        let read = DispatchSemaphore(value: 0)
        let tid: Int32? = await withCheckedContinuation { continuation in
            KernelThread.start(name: "vigil-a-much-longer-name") {
                continuation.resume(returning: KernelThread.currentID())
                read.wait()  // alive until the test has read its name
            }
        }
        defer { read.signal() }
        let id = try #require(tid)
        #expect(try kernelName(of: id) == "vigil-a-much-lo")
    }

    @Test func jobsRunInOrderAndAClosedThreadRefusesMore() async {
        let thread = DedicatedThread(name: "vigil-test-ord")
        let first = await thread.run { 1 }
        let second = await thread.run { 2 }
        thread.close()
        let refused = await thread.run { 3 }
        #expect(first == 1 && second == 2)
        #expect(refused == nil)
    }
}
