import Foundation
import Testing
import VigilTestSupport

@testable import VigilAudio

/// The one libpulse client under ``PulseDriver`` and ``PulseMixer``, against a real private
/// PulseAudio: it connects, refuses a dead server (no listener, or one that never answers) by its
/// deadline with the code and errno users see, and reports a killed server once so that a new
/// connection on the same mainloop can take over.
@Suite("PulseConnection against a real PulseAudio", .serialized)
struct PulseConnectionTests {
    /// Hands one connection from one blocking call to the next: only one thread uses it at a time
    /// (each `blockingCall` ends before the next starts).
    final class Handle: @unchecked Sendable {
        let connection: PulseConnection
        init(_ connection: PulseConnection) { self.connection = connection }
    }

    static let name = "vigil-connection-tests"

    /// Connects `handle` with a deadline of `seconds`; the error, if any, and the time it took.
    static func connect(_ handle: Handle, seconds: Double) async -> (error: AudioError?, elapsed: Double) {
        await blockingCall {
            let start = MonotonicClock.seconds()
            do throws(AudioError) {
                try handle.connection.connect(deadline: PulseConnection.now + UInt64(seconds * 1_000_000))
                return (nil, MonotonicClock.seconds() - start)
            } catch {
                return (error, MonotonicClock.seconds() - start)
            }
        }
    }

    /// True when the server lists a client named ``name``.
    static func serverLists(_ server: PulseAudioServer) throws -> Bool {
        try server.pactl(["list", "clients"]).contains("application.name = \"\(name)\"")
    }

    @Test("connects, and the server sees the client by its application name")
    func connects() async throws {
        try await PulseAudioServer.with { server in
            let handle = Handle(PulseConnection(server: server.address, applicationName: Self.name))
            let result = await Self.connect(handle, seconds: 5)
            #expect(result.error == nil, "\(String(describing: result.error))")
            #expect(handle.connection.isReady)
            let listed = try Self.serverLists(server)
            #expect(listed, "the server does not list the client")
            await blockingCall { handle.connection.disconnect() }
            #expect(!handle.connection.isReady)
            #expect(
                await RuntimeFixtures.waitUntil(timeout: 5) { (try? Self.serverLists(server)) == false },
                "the server still lists the client after disconnect()")
        }
    }

    @Test("a socket nobody listens on is refused at once: open-failed, ECONNREFUSED, the address and a remedy")
    func refusesDeadSocket() async throws {
        let server = try PulseAudioServer()
        defer { server.shutDown() }
        // A server that was there and was killed: its socket file stays, nobody listens on it.
        try await server.start()
        server.kill()
        #expect(FileManager.default.fileExists(atPath: server.socketPath))
        let handle = Handle(PulseConnection(server: server.address, applicationName: Self.name))
        let result = await Self.connect(handle, seconds: 5)
        let error = try #require(result.error)
        #expect(error.code == .openFailed)
        #expect(error.function == "pa_context_connect")
        #expect(error.errno == ECONNREFUSED)
        #expect(error.message.contains("no sound server answers at \(server.address)"), "\(error.message)")
        #expect(error.message.contains("`pactl info` must answer"), "\(error.message)")
        #expect(result.elapsed < 5, "refused after \(result.elapsed) s, not before its 5 s deadline")
        #expect(!handle.connection.isReady)
    }

    @Test("PulseMixer, on the same connection, refuses the dead socket with the same code, errno and remedy")
    func mixerRefusesDeadSocket() async throws {
        let server = try PulseAudioServer()
        defer { server.shutDown() }
        try await server.start()
        server.kill()
        let address = server.address
        let error = await blockingCall { () -> AudioError? in
            let mixer = PulseMixer(server: address, applicationName: Self.name, logger: quietLogger)
            do throws(AudioError) {
                try mixer.connect()
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.code == .openFailed)
        #expect(error?.function == "pa_context_connect")
        #expect(error?.errno == ECONNREFUSED)
        #expect(
            error?.message.contains("no sound server answers at \(address)") == true, "\(String(describing: error))")
    }

    @Test("a server that accepts and never answers is given up at the deadline: open-failed, ETIMEDOUT")
    func hungServerTimesOut() async throws {
        try await RuntimeFixtures.withTempDirectory("vigil-hung-pulse") { dir in
            let silent = try SilentSocket(path: dir.url("native"))
            defer { silent.stop() }
            let handle = Handle(PulseConnection(server: "unix:" + silent.path, applicationName: Self.name))
            handle.connection.timeoutMicroseconds = 1_000_000
            let result = await Self.connect(handle, seconds: 1)
            let error = try #require(result.error)
            #expect(error.code == .openFailed)
            #expect(error.function == "pa_context_connect")
            #expect(error.errno == ETIMEDOUT)
            #expect(error.message.contains("did not answer within 1 s"), "\(error.message)")
            #expect(result.elapsed >= 1, "gave up after \(result.elapsed) s, before its deadline")
            #expect(silent.connections >= 1, "libpulse never reached the socket")
            #expect(!handle.connection.isReady)
        }
    }

    @Test("a cancelled connect stops waiting for a server that never answers")
    func cancelledConnect() async throws {
        try await RuntimeFixtures.withTempDirectory("vigil-hung-pulse") { dir in
            let silent = try SilentSocket(path: dir.url("native"))
            defer { silent.stop() }
            let handle = Handle(PulseConnection(server: "unix:" + silent.path, applicationName: Self.name))
            let error = await blockingCall { () -> AudioError? in
                var asked = 0
                do throws(AudioError) {
                    // Cancelled on the third look, long before the 60 s deadline.
                    try handle.connection.connect(deadline: PulseConnection.now + 60_000_000) {
                        asked += 1
                        return asked >= 3
                    }
                    return nil
                } catch {
                    return error
                }
            }
            #expect(error?.code == .openFailed)
            #expect(error?.message.contains("cancelled") == true, "\(String(describing: error))")
            #expect(!handle.connection.isReady)
        }
    }

    @Test("a killed server is reported once as lost (EIO, the server went away); the same connection reconnects")
    func survivesServerKill() async throws {
        try await PulseAudioServer.with { server in
            let handle = Handle(PulseConnection(server: server.address, applicationName: Self.name))
            #expect(await Self.connect(handle, seconds: 5).error == nil)

            server.kill()
            let lost = await blockingCall { () -> [Int32] in
                var codes: [Int32] = []
                handle.connection.onLost = { codes.append($0) }
                let deadline = PulseConnection.now + 10_000_000
                while codes.isEmpty && PulseConnection.now < deadline {
                    handle.connection.iterate(timeoutMicroseconds: 100_000)
                }
                // Nothing more is reported for the same loss.
                handle.connection.iterate(timeoutMicroseconds: 100_000)
                return codes
            }
            #expect(lost.count == 1, "reported \(lost.count) times")
            #expect(!handle.connection.isReady)
            let error = handle.connection.error(.streamFailed, "pa_context", try #require(lost.first))
            #expect(error.errno == EIO, "\(error)")
            #expect(error.message.contains("the sound server went away"), "\(error.message)")
            let notOpen = await blockingCall { () -> AudioError? in
                do throws(AudioError) {
                    _ = try handle.connection.readyContext()
                    return nil
                } catch {
                    return error
                }
            }
            #expect(notOpen?.code == .streamFailed)

            try await server.start()
            let again = await Self.connect(handle, seconds: 5)
            #expect(again.error == nil, "\(String(describing: again.error))")
            #expect(handle.connection.isReady)
            let listed = try Self.serverLists(server)
            #expect(listed, "the server does not list the reconnected client")
            await blockingCall { handle.connection.disconnect() }
        }
    }
}
