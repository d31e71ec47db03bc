import Foundation
import Synchronization
import Testing
import VigilBase
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The one poll loop: jobs in order, wake-ups from any thread, descriptor readiness, deadlines,
/// and an end that closes every descriptor it owns.
@Suite struct PollLoopTests {
    @Test("jobs run in the order they were queued, and a closed loop refuses more")
    func jobsRunInOrder() async throws {
        let loop = try PollLoop(name: "vigil-test-pl")
        loop.start()
        let seen = Locked<[Int]>([])
        for i in 0..<500 { #expect(loop.enqueue { _ in seen.withLock { $0.append(i) } }) }
        let last = await loop.run { _ in seen.withLock { $0 } }
        #expect(last == Array(0..<500))
        loop.close()
        await loop.closed()
        #expect(!loop.enqueue { _ in })
        #expect(await loop.run { _ in 1 } == nil)
    }

    @Test("jobs queued from other threads wake the sleeping loop, each thread's in order; wake() gives a turn")
    func wakeFromOtherThreads() async throws {
        let loop = try PollLoop(name: "vigil-test-plw")
        loop.start()
        defer { loop.close() }
        let seen = Locked<[Int: [Int]]>([:])
        let threads = 4
        let perThread = 200
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<threads {
                group.addTask {
                    await Handoff<Void>.value { handoff in
                        KernelThread.start(name: "vigil-test-src") {
                            for i in 0..<perThread {
                                loop.enqueue { _ in seen.withLock { $0[t, default: []].append(i) } }
                            }
                            handoff.deliver(())
                        }
                    }
                }
            }
        }
        // The loop sleeps in poll with no deadline: only its wake descriptor brings these in.
        let result = await loop.run { _ in seen.withLock { $0 } }
        for t in 0..<threads { #expect(result?[t] == Array(0..<perThread), "thread \(t)") }

        let turns = Locked(0)
        let woken = try PollLoop(name: "vigil-test-plk")
        woken.start(.init(afterPoll: { _ in turns.withLock { $0 += 1 } }))
        defer { woken.close() }
        _ = await woken.run { _ in }
        let before = turns.withLock { $0 }
        KernelThread.start(name: "vigil-test-wk") { woken.wake() }
        #expect(await RuntimeFixtures.waitUntil(timeout: 30) { turns.withLock { $0 } > before })
    }

    @Test("a ready descriptor runs its handler on the loop's thread; remove closes an owned descriptor")
    func descriptorReadiness() async throws {
        let loop = try PollLoop(name: "vigil-test-plr")
        let data = TestPipe.make()
        let closing = TestPipe.make()
        let received = Locked<[UInt8]>([])
        let handlerThread = Locked<Int32?>(nil)
        let readFD = data.read.rawValue
        loop.add(data.read, events: PollLoop.readable) { _, _ in
            handlerThread.withLock { $0 = KernelThread.currentID() }
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = read(readFD, &buffer, buffer.count)
            if n > 0 { received.withLock { $0 += buffer[0..<n] } }
        }
        // Owned, watched for nothing: only remove() can close it.
        let closingToken = loop.add(closing.write, events: 0) { _, _ in }
        loop.start()
        defer { loop.close() }
        let loopThread = await loop.run { _ in KernelThread.currentID() } ?? nil

        let message = Array("ready".utf8)
        #expect(write(data.write.rawValue, message, message.count) == message.count)
        #expect(await RuntimeFixtures.waitUntil(timeout: 30) { received.withLock { $0 } == message })
        #expect(handlerThread.withLock { $0 } == loopThread)

        #expect(!TestPipe.hungUp(closing.read.rawValue, waiting: 0))
        _ = await loop.run { $0.remove(closingToken) }
        #expect(TestPipe.hungUp(closing.read.rawValue, waiting: 30_000), "the removed write end is closed")
    }

    @Test("timers and the owner's deadline wake the loop at or after their time; a removed timer never fires")
    func deadlines() async throws {
        let loop = try PollLoop(name: "vigil-test-pld")
        let start = MonotonicClock.seconds()
        let timerFired = Locked<Double?>(nil)
        let cancelledFired = Locked(false)
        let cancelled = loop.schedule(at: start + 0.02) { _ in cancelledFired.withLock { $0 = true } }
        loop.schedule(at: start + 0.1) { _ in timerFired.withLock { $0 = MonotonicClock.seconds() } }
        loop.remove(cancelled)
        // The owner's own deadline (as the supervisor's backoff): the loop must wake for it alone.
        let ownerDeadline = start + 0.15
        let ownerSaw = Locked<Double?>(nil)
        loop.start(
            .init(
                prepare: { _ in ownerSaw.withLock { $0 } == nil ? ownerDeadline : nil },
                afterPoll: { _ in
                    let now = MonotonicClock.seconds()
                    if now >= ownerDeadline { ownerSaw.withLock { $0 = $0 ?? now } }
                }))
        defer { loop.close() }
        #expect(await RuntimeFixtures.waitUntil(timeout: 30) { timerFired.withLock { $0 } != nil })
        #expect(await RuntimeFixtures.waitUntil(timeout: 30) { ownerSaw.withLock { $0 } != nil })
        #expect(try #require(timerFired.withLock { $0 }) >= start + 0.1)
        #expect(try #require(ownerSaw.withLock { $0 }) >= ownerDeadline)
        let cancelledRan = cancelledFired.withLock { $0 }
        #expect(!cancelledRan)
    }

    @Test("closing the loop runs the queued jobs, closes its wake and owned descriptors, then the shutdown hook")
    func shutdownClosesEverything() async throws {
        let countBefore = DescriptorTable.count()
        let loop = try PollLoop(name: "vigil-test-pls")
        let watched = TestPipe.make()
        let idle = TestPipe.make()
        let peers = [watched.read.rawValue, idle.read.rawValue]
        // Marked, so that a number reused by another test is not taken for one of these.
        let files = FileSet()
        let mine = [loop.wakeDescriptorNumber, watched.write.rawValue, idle.write.rawValue]
        for fd in mine { files.add(fd) }
        loop.add(watched.write, events: PollLoop.writable) { _, _ in }
        loop.add(idle.write, events: 0) { _, _ in }
        loop.schedule(at: MonotonicClock.seconds() + 3600) { _ in }
        let order = Locked<[String]>([])
        loop.start(.init(shutdown: { _ in order.withLock { $0.append("shutdown") } }))
        let countDuring = DescriptorTable.count()
        #expect(files.open() == Set(mine))
        loop.enqueue { _ in order.withLock { $0.append("job") } }
        loop.close()
        await loop.closed()
        let countAfter = DescriptorTable.count()
        #expect(order.withLock { $0 } == ["job", "shutdown"])
        // A child another test forks holds copies until its exec: wait for the files to go.
        #expect(await RuntimeFixtures.waitUntil(timeout: 30) { files.open().isEmpty }, "still open: \(files.open())")
        for peer in peers { #expect(TestPipe.hungUp(peer, waiting: 30_000), "the peer of \(peer) sees the hang-up") }
        // Whole-table counts are only exact when nothing else runs (swift test --filter PollLoopTests).
        print("PollLoop descriptors: \(countBefore) before, \(countDuring) while running, \(countAfter) after")
    }

    @Test("no child spawned while loops are created inherits a wake descriptor (created close-on-exec atomically)")
    func wakeDescriptorIsCloseOnExecFromTheStart() async throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let output = dir.path + "/fds"
        let creating = Locked(true)
        let identities = Locked<Set<String>>([])
        let created = Locked(0)
        await Handoff<Void>.value { started in
            KernelThread.start(name: "vigil-test-mk") {
                started.deliver(())
                while creating.withLock({ $0 }) {
                    guard let loop = try? PollLoop(name: "unused") else { continue }
                    if let identity = DescriptorTable.identity(of: loop.wakeDescriptorNumber) {
                        identities.withLock { _ = $0.insert(identity) }
                    }
                    created.withLock { $0 += 1 }
                }
            }
        }
        let spawner = DedicatedThread(name: "vigil-test-sp")
        defer { spawner.close() }
        let spawned = await spawner.run { () -> Int in
            var count = 0
            for _ in 0..<150 {
                guard let child = try? ChildProcess("/bin/ls", ["-l", "/proc/self/fd/"], stdout: output) else {
                    continue
                }
                child.wait()
                count += 1
            }
            return count
        }
        creating.withLock { $0 = false }
        #expect(spawned == 150)
        #expect(created.withLock { $0 } > 0)
        let listing = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        let targets = listing.split(separator: "\n").compactMap { line in
            line.range(of: " -> ").map { String(line[$0.upperBound...]) }
        }
        #expect(targets.count >= 150 * 3, "every child listed its descriptors")
        let known = identities.withLock { $0 }.map { $0.split(separator: "\n").first.map(String.init) ?? $0 }
        let inherited = targets.filter { known.contains($0) }
        #expect(inherited.isEmpty, "children inherited wake descriptors: \(inherited.prefix(5))")
    }
}

/// A connected stream socket pair made close-on-exec at once, both ends owned: `write` is the
/// end the code under test gets, `read` the one the test watches.
struct TestPipe: ~Copyable {
    let read: OwnedDescriptor
    let write: OwnedDescriptor

    static func make() -> TestPipe {
        var fds: [Int32] = [-1, -1]
        let made = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds)
        precondition(made == 0, "socketpair failed")
        return TestPipe(read: OwnedDescriptor(adopting: fds[0]), write: OwnedDescriptor(adopting: fds[1]))
    }

    /// Whether the peer of `fd` is closed (POLLHUP), waiting up to `milliseconds`: a child another
    /// test forks holds a copy of every descriptor until its exec closes it, so a hang-up can
    /// come a moment after the close.
    static func hungUp(_ fd: Int32, waiting milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: 0, revents: 0)
        return poll(&entry, 1, milliseconds) == 1 && entry.revents & Int16(POLLHUP) != 0
    }
}

/// This process's descriptor table as `/proc/self/fd` shows it.
enum DescriptorTable {
    static func count() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// What `fd` is (its link target, plus the eventfd's id where the kernel shows one: every
    /// eventfd has the same link), or nil when it is not open.
    static func identity(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let target = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let info = (try? String(contentsOfFile: "/proc/self/fdinfo/\(fd)", encoding: .utf8)) ?? ""
        let id = info.split(separator: "\n").first { $0.hasPrefix("eventfd-id:") }
        return id.map { target + "\n" + $0 } ?? target
    }
}

/// A value behind a lock, shareable with the loop's thread and the test's.
final class Locked<Value: Sendable>: Sendable {
    private let value: Mutex<Value>

    init(_ value: Value) { self.value = Mutex(value) }

    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}

/// Files the test marks (`F_SETOWN` to this process, an owner no new file has), to tell later
/// whether a number still refers to the same file: numbers are reused at once by parallel tests,
/// and a new eventfd can even get the old one's id.
final class FileSet: Sendable {
    private let numbers = Locked<Set<Int32>>([])

    func add(_ fd: Int32) {
        precondition(fcntl(fd, F_SETOWN, getpid()) == 0, "F_SETOWN failed: \(errno)")
        numbers.withLock { _ = $0.insert(fd) }
    }

    /// The added numbers that still refer to the file marked.
    func open() -> Set<Int32> {
        numbers.withLock { $0 }.filter { fcntl($0, F_GETOWN) == getpid() }
    }
}
