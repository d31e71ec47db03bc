import Foundation
import Logging
import Synchronization
import Testing
import VigilDBus
import VigilTestSupport

private let logger = Logger(label: "test.dbus") { _ in SwiftLogNoOpLogHandler() }

/// A bus that accepts and never answers (``SilentSocket``), and the reconnection decisions.
@Suite("D-Bus deadlines and reconnection", .serialized, .timeLimit(.minutes(1)))
struct BusDeadlineTests {
    @Test("connect to a bus that never answers fails as timedOut within its deadline, on the bus thread")
    func connectDeadline() async throws {
        let dir = try TestDirectory("vigil-silent-bus")
        defer { dir.remove() }
        let silent = try SilentSocket(path: dir.path + "/bus")
        defer { silent.stop() }
        for bus in [DBusBus.system, .session] {
            let variable = bus == .system ? "DBUS_SYSTEM_BUS_ADDRESS" : "DBUS_SESSION_BUS_ADDRESS"
            let started = ContinuousClock.now
            do {
                _ = try await DBusConnection.connect(
                    to: bus, environment: [variable: silent.address], timeout: .milliseconds(800), logger: logger)
                Issue.record("connected to a socket that never answers")
            } catch {
                #expect(error.code == .timedOut, "\(error)")
                #expect(error.message.contains("did not answer within 800 ms"), "\(error.message)")
                #expect(error.message.contains(silent.address), "\(error.message)")
            }
            let elapsed = ContinuousClock.now - started
            #expect(elapsed >= .milliseconds(700) && elapsed < .seconds(3), "took \(elapsed)")
        }
        #expect(silent.connections == 2)
    }

    @Test("cancelling the task ends a pending connect at once")
    func connectCancelled() async throws {
        let dir = try TestDirectory("vigil-silent-bus")
        defer { dir.remove() }
        let silent = try SilentSocket(path: dir.path + "/bus")
        defer { silent.stop() }
        let attempt = Task { () -> DBusError.Code? in
            do throws(DBusError) {
                _ = try await DBusConnection.connect(
                    to: .address(silent.address), timeout: .seconds(60), logger: logger)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(await RuntimeFixtures.waitUntil(timeout: 10) { silent.connections == 1 })
        let started = ContinuousClock.now
        attempt.cancel()
        #expect(await attempt.value == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test("cancelling the task ends a pending call at once; the connection stays usable")
    func callCancelled() async throws {
        let daemon = try await blockingCall { Result { try DBusDaemon() } }.get()
        defer { daemon.stop() }
        let connection = try await DBusConnection.connect(to: .address(daemon.address), logger: logger)
        // A method of a peer that never answers: our own connection, exporting nothing, is not
        // that; a second connection that never processes its messages is.
        let mute = try await DBusConnection.connect(to: .address(daemon.address), logger: logger)
        let uniqueName = mute.uniqueName
        let hanging = Mutex(false)
        let exported = try await mute.export(
            path: "/mute",
            interfaces: [
                DBusInterface(
                    name: "org.example.Mute",
                    methods: [
                        DBusMethod("Hang") { _ throws(DBusError) in
                            hanging.withLock { $0 = true }
                            Thread.sleep(forTimeInterval: 2)  // blocks mute's own bus thread only
                            return []
                        }
                    ])
            ])
        let call = Task { () -> DBusError.Code? in
            do throws(DBusError) {
                _ = try await connection.call(
                    destination: uniqueName, path: "/mute", interface: "org.example.Mute", member: "Hang",
                    timeout: .seconds(60))
                return nil
            } catch {
                return error.code
            }
        }
        // Cancelled while it is pending: the peer has the call and does not answer.
        #expect(await RuntimeFixtures.waitUntil(timeout: 10) { hanging.withLock { $0 } })
        let started = ContinuousClock.now
        call.cancel()
        #expect(await call.value == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(try await connection.nameHasOwner("org.freedesktop.DBus"))
        await exported.unexport()
        await mute.close()
        await connection.close()
    }

    @Test("disconnection() returns when the bus goes away")
    func disconnection() async throws {
        let daemon = try await blockingCall { Result { try DBusDaemon() } }.get()
        defer { daemon.stop() }
        let connection = try await DBusConnection.connect(to: .address(daemon.address), logger: logger)
        let watcher = Task { await connection.disconnection() }
        try await Task.sleep(for: .milliseconds(100))
        daemon.kill()
        let ended = Task {
            await watcher.value
            return true
        }
        let started = ContinuousClock.now
        #expect(await ended.value)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(!connection.isConnected)
        await connection.close()
    }

    @Test("backoff: said once per outage, doubling waits up to the cap, reset after success")
    func linkState() {
        var state = DBusLinkState(initialDelay: .seconds(1), maximumDelay: .seconds(8))
        let timeout = DBusError(code: .timedOut, message: "no answer")
        #expect(
            state.failed(timeout) == [
                .reportDown(reason: "no answer [dbus-timed-out]", retrying: true), .retry(after: .seconds(1)),
            ])
        #expect(state.failed(timeout) == [.retry(after: .seconds(2))])
        #expect(state.failed(timeout) == [.retry(after: .seconds(4))])
        #expect(state.failed(timeout) == [.retry(after: .seconds(8))])
        #expect(state.failed(timeout) == [.retry(after: .seconds(8))])
        #expect(state.connected() == [.reportUp(again: true)])
        #expect(
            state.lost(reason: "gone") == [.reportDown(reason: "gone", retrying: true), .retry(after: .seconds(1))])
        #expect(state.failed(timeout) == [.retry(after: .seconds(2))])
        #expect(state.connected() == [.reportUp(again: true)])

        var fresh = DBusLinkState()
        #expect(fresh.connected() == [.reportUp(again: false)])
        var none = DBusLinkState()
        let noBus = DBusError(code: .noBus, message: "there is no session bus")
        #expect(
            none.failed(noBus) == [
                .reportDown(reason: "there is no session bus [dbus-no-bus]", retrying: false), .giveUp,
            ])
    }

    @Test("the keeper retries in virtual time: each wait is the state machine's, and cancellation ends it")
    func keeperVirtualTime() async throws {
        let dir = try TestDirectory("vigil-silent-bus")
        defer { dir.remove() }
        let waits = Mutex<[Duration]>([])
        let events = Mutex<[DBusLinkEvent]>([])
        // No daemon at the address: every attempt fails at once; the injected sleep records the
        // waits instead of taking them.
        let keeper = DBusKeeper(
            bus: .address("unix:path=" + dir.path + "/none"), environment: [:],
            state: DBusLinkState(initialDelay: .seconds(1), maximumDelay: .seconds(4)),
            sleep: { delay in
                let count = waits.withLock { waits in
                    waits.append(delay)
                    return waits.count
                }
                if count == 5 { withUnsafeCurrentTask { $0?.cancel() } }
            })
        await keeper.run(
            logger: logger, report: { event in events.withLock { $0.append(event) } },
            session: { _ throws(DBusError) in }, withdraw: { _ in })
        #expect(waits.withLock { $0 } == [.seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4)])
        let reported = events.withLock { $0 }
        #expect(reported.count == 1, "\(reported)")
        if case .down(let reason, let retrying)? = reported.first {
            #expect(retrying && reason.contains("dbus-connect-failed"), "\(reason)")
        } else {
            Issue.record("\(reported)")
        }
    }
}
