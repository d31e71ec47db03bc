import Foundation
import Logging
import Synchronization
import Testing
import VigilDBus
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

private let logger = Logger(label: "test.dbus") { _ in SwiftLogNoOpLogHandler() }

/// A private bus and a connection to it, both closed afterwards.
private func withBus<T>(_ body: (DBusDaemon, DBusConnection) async throws -> T) async throws -> T {
    let daemon = try await blockingCall { Result { try DBusDaemon() } }.get()
    defer { daemon.stop() }
    let connection = try await DBusConnection.connect(to: .address(daemon.address), logger: logger)
    do {
        let result = try await body(daemon, connection)
        await connection.close()
        return result
    } catch {
        await connection.close()
        throw error
    }
}

/// A small object with one read-write, one read-only and one silent property, and two methods.
private final class Counter: Sendable {
    let value = Mutex<Double>(0.5)
    let calls = Mutex<[String]>([])

    var interface: DBusInterface {
        DBusInterface(
            name: "org.example.Counter",
            methods: [
                DBusMethod(
                    "Echo", inputs: [DBusArgument("map", "a{sv}"), DBusArgument("path", "o")],
                    outputs: [DBusArgument("out", "(a{sv}o)")]
                ) {
                    call throws(DBusError) in
                    self.calls.withLock { $0.append("Echo") }
                    return [.structure(call.arguments)]
                },
                DBusMethod("Fail") { _ throws(DBusError) in
                    throw DBusError.refusal("org.example.Error.Nope", "refused on purpose")
                },
                DBusMethod("OpenPipe", outputs: [DBusArgument("fd", "h")]) { _ throws(DBusError) in
                    var fds: [Int32] = [-1, -1]
                    guard pipe(&fds) == 0 else { throw DBusError.refusal(DBusErrorName.failed, "pipe") }
                    _ = "hello".withCString { Glibc.write(fds[1], $0, 5) }
                    Glibc.close(fds[1])
                    // sd-bus sends a duplicate; ours is closed after the reply is built.
                    let fd = fds[0]
                    DispatchQueue.global().asyncAfter(deadline: .now() + 2) { Glibc.close(fd) }
                    return [.unixFD(fd)]
                },
            ],
            properties: [
                DBusProperty("Value", signature: "d", get: { .double(self.value.withLock { $0 }) }) {
                    v throws(DBusError) in
                    guard let d = v.double, d >= 0 else {
                        throw DBusError.refusal(DBusErrorName.invalidArgs, "negative")
                    }
                    self.value.withLock { $0 = d }
                },
                DBusProperty("Names", signature: "as", changeSignal: .invalidates, get: { .stringArray(["a", "b"]) }),
                DBusProperty("Position", signature: "x", changeSignal: .none, get: { .int64(0) }),
            ],
            signals: [DBusSignal("Bumped", arguments: [DBusArgument("by", "i")])])
    }
}

@Suite("VigilDBus on a private dbus-daemon", .serialized)
struct VigilDBusTests {
    @Test("no session bus is a typed error, not a crash")
    func noSessionBus() async {
        await #expect(throws: DBusError.self) {
            _ = try await DBusConnection.connect(to: .session, environment: [:], logger: logger)
        }
        do throws(DBusError) {
            _ = try await DBusConnection.connect(to: .session, environment: [:], logger: logger)
        } catch {
            #expect(error.code == .noBus)
        }
        let refused = await #expect(throws: DBusError.self) {
            _ = try await DBusConnection.connect(to: .address("unix:path=/nonexistent/bus"), logger: logger)
        }
        #expect(refused?.code == .connectFailed)
        // sd-bus's errno is a typed cause (the call and its Errno), as in the other modules.
        #expect(refused?.systemCall == SystemCallError("sd_bus_start", errno: ENOENT))
        #expect(refused?.cause?.error is SystemCallError)
        #expect(DBusBus.system.resolve(environment: [:]) == "unix:path=/run/dbus/system_bus_socket")
        #expect(DBusBus.system.resolve(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/x"]) == "unix:path=/x")
    }

    @Test("calls the bus daemon with typed arguments and reads typed replies")
    func callsTheBus() async throws {
        try await withBus { _, bus in
            #expect(bus.uniqueName.hasPrefix(":"))
            let names = try await bus.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "ListNames")
            #expect(names.first?.array?.contains(.string(bus.uniqueName)) == true)
            // A remote error keeps its D-Bus name.
            do throws(DBusError) {
                _ = try await bus.call(
                    destination: "org.example.Nobody", path: "/", interface: "org.example.X", member: "Y")
                Issue.record("a call to a missing service succeeded")
            } catch {
                #expect(error.code == .callFailed)
                #expect(error.name == DBusErrorName.serviceUnknown)
            }
            // A value that does not match its declared array type is refused before sending.
            do throws(DBusError) {
                _ = try await bus.call(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus",
                    member: "ListNames", arguments: [.array("s", [.int32(1)])])
                Issue.record("a mistyped array was sent")
            } catch {
                #expect(error.code == .invalidMessage)
            }
        }
    }

    @Test("requests, contends for and releases a well-known name")
    func names() async throws {
        try await withBus { daemon, bus in
            let other = try await DBusConnection.connect(to: .address(daemon.address), logger: logger)
            defer { Task { await other.close() } }
            #expect(try await bus.requestName("org.example.Named") == .primaryOwner)
            #expect(try await bus.requestName("org.example.Named") == .alreadyOwner)
            #expect(try await other.requestName("org.example.Named") == .exists)
            #expect(try await other.nameHasOwner("org.example.Named"))
            #expect(try await bus.releaseName("org.example.Named"))
            #expect(try await other.requestName("org.example.Named") == .primaryOwner)
            await other.close()
        }
    }

    @Test("exports methods, properties and introspection; every call is answered")
    func exportsAnObject() async throws {
        try await withBus { daemon, bus in
            let counter = Counter()
            let object = try await bus.export(path: "/org/example/Counter", interfaces: [counter.interface])
            #expect(try await bus.requestName("org.example.Counter") == .primaryOwner)
            let client = try await DBusConnection.connect(to: .address(daemon.address), logger: logger)
            defer { Task { await client.close() } }
            func call(_ interface: String, _ member: String, _ arguments: [DBusValue] = []) async throws(DBusError)
                -> [DBusValue]
            {
                try await client.call(
                    destination: "org.example.Counter", path: "/org/example/Counter", interface: interface,
                    member: member,
                    arguments: arguments)
            }
            let props = "org.freedesktop.DBus.Properties"

            // Methods with containers, object paths and variants round-trip.
            let map = DBusValue.stringVariantMap(["n": .int32(7), "list": .stringArray(["x"]), "b": .bool(true)])
            let echoed = try await call("org.example.Counter", "Echo", [map, .objectPath("/a/b")])
            #expect(echoed == [.structure([map, .objectPath("/a/b")])])
            // Wrong argument types: InvalidArgs, and the handler never runs.
            await #expect(throws: DBusError.self) { _ = try await call("org.example.Counter", "Echo", [.string("x")]) }
            do throws(DBusError) { _ = try await call("org.example.Counter", "Echo", [.string("x")]) } catch {
                #expect(error.name == DBusErrorName.invalidArgs)
            }
            #expect(counter.calls.withLock { $0 } == ["Echo"])
            // A handler's refusal goes back with its name.
            do throws(DBusError) { _ = try await call("org.example.Counter", "Fail") } catch {
                #expect(error.name == "org.example.Error.Nope")
            }
            do throws(DBusError) { _ = try await call("org.example.Counter", "Missing") } catch {
                #expect(error.name == DBusErrorName.unknownMethod)
            }

            // File descriptors travel.
            let fdReply = try await call("org.example.Counter", "OpenPipe")
            guard case .unixFD(let fd)? = fdReply.first else {
                Issue.record("no fd in \(fdReply)")
                return
            }
            var buffer = [UInt8](repeating: 0, count: 16)
            let n = Glibc.read(fd, &buffer, 16)
            Glibc.close(fd)
            #expect(String(decoding: buffer[0..<max(0, n)], as: UTF8.self) == "hello")

            // Properties: Get, GetAll, Set, and the errors.
            #expect(
                try await call(props, "Get", [.string("org.example.Counter"), .string("Value")]) == [
                    .variant(.double(0.5))
                ])
            let all = try await call(props, "GetAll", [.string("org.example.Counter")]).first?.stringKeyedDictionary
            #expect(all?["Names"] == .variant(.stringArray(["a", "b"])))
            #expect(all?["Position"] == .variant(.int64(0)))
            _ = try await call(
                props, "Set", [.string("org.example.Counter"), .string("Value"), .variant(.double(0.75))])
            #expect(counter.value.withLock { $0 } == 0.75)
            let failures: [([DBusValue], String)] = [
                ([.string("org.example.Counter"), .string("Nope")], DBusErrorName.unknownProperty),
                ([.string("org.example.Other"), .string("Value")], DBusErrorName.unknownInterface),
            ]
            for (arguments, name) in failures {
                do throws(DBusError) {
                    _ = try await call(props, "Get", arguments)
                    Issue.record("Get \(arguments) succeeded")
                } catch { #expect(error.name == name) }
            }
            let setFailures: [(DBusValue, DBusValue, String)] = [
                (.string("Names"), .variant(.stringArray([])), DBusErrorName.propertyReadOnly),
                (.string("Value"), .variant(.string("loud")), DBusErrorName.invalidArgs),
                (.string("Value"), .variant(.double(-1)), DBusErrorName.invalidArgs),
            ]
            for (name, value, expected) in setFailures {
                do throws(DBusError) {
                    _ = try await call(props, "Set", [.string("org.example.Counter"), name, value])
                    Issue.record("Set \(name) \(value) succeeded")
                } catch { #expect(error.name == expected) }
            }
            #expect(counter.value.withLock { $0 } == 0.75)

            // Introspection declares every member with its type and access.
            let xml = try await call("org.freedesktop.DBus.Introspectable", "Introspect").first?.string ?? ""
            #expect(xml.contains("<property name=\"Value\" type=\"d\" access=\"readwrite\">"))
            #expect(xml.contains("<property name=\"Names\" type=\"as\" access=\"read\">"))
            #expect(xml.contains("<signal name=\"Bumped\">"))
            #expect(xml.contains("<arg name=\"map\" type=\"a{sv}\" direction=\"in\"/>"))

            // Another implementation (dbus-send, libdbus) reads the same property.
            let output = try ChildProcess.run(
                "/usr/bin/dbus-send",
                [
                    "--bus=\(daemon.address)", "--print-reply", "--dest=org.example.Counter", "/org/example/Counter",
                    "org.freedesktop.DBus.Properties.Get", "string:org.example.Counter", "string:Value",
                ])
            #expect(output.contains("variant       double 0.75"))

            await object.unexport()
            do throws(DBusError) {
                _ = try await call(props, "Get", [.string("org.example.Counter"), .string("Value")])
            } catch {
                #expect(error.code == .callFailed)
            }
            await client.close()
        }
    }

    @Test("subscribes to signals; PropertiesChanged carries values and invalidations, not silent properties")
    func signals() async throws {
        try await withBus { daemon, bus in
            let counter = Counter()
            let object = try await bus.export(path: "/org/example/Counter", interfaces: [counter.interface])
            let listener = try await DBusConnection.connect(to: .address(daemon.address), logger: logger)
            defer { Task { await listener.close() } }
            let received = Mutex<[DBusSignalMessage]>([])
            let subscription = try await listener.subscribe(matchRule: "type='signal',path='/org/example/Counter'") {
                message in
                received.withLock { $0.append(message) }
            }
            try await object.emit(interface: "org.example.Counter", signal: "Bumped", arguments: [.int32(3)])
            try await object.propertiesChanged(interface: "org.example.Counter", ["Value", "Names", "Position"])
            #expect(await RuntimeFixtures.waitUntil(timeout: 10) { received.withLock { $0.count } >= 2 })
            let messages = received.withLock { $0 }
            #expect(messages[0].member == "Bumped")
            #expect(messages[0].arguments == [.int32(3)])
            #expect(messages[0].sender == bus.uniqueName)
            #expect(messages[1].interface == "org.freedesktop.DBus.Properties")
            #expect(
                messages[1].arguments == [
                    .string("org.example.Counter"),
                    .dictionary(
                        key: "s", value: "v", [DBusDictEntry(key: .string("Value"), value: .variant(.double(0.5)))]),
                    .stringArray(["Names"]),
                ])
            // After cancel no more arrive: a later signal on another path (still subscribed there) proves delivery.
            await subscription.cancel()
            let marker = Mutex(false)
            _ = try await listener.subscribe(matchRule: "type='signal',member='Marker'") { _ in
                marker.withLock { $0 = true }
            }
            try await object.emit(interface: "org.example.Counter", signal: "Bumped", arguments: [.int32(4)])
            try await bus.emit(path: "/marker", interface: "org.example.M", member: "Marker")
            #expect(await RuntimeFixtures.waitUntil(timeout: 10) { marker.withLock { $0 } })
            #expect(received.withLock { $0.count } == 2)
            await listener.close()
        }
    }

    @Test("a bus that goes away fails calls with disconnected instead of hanging")
    func busGoesAway() async throws {
        let daemon = try await blockingCall { Result { try DBusDaemon() } }.get()
        let bus = try await DBusConnection.connect(to: .address(daemon.address), logger: logger)
        #expect(bus.isConnected)
        daemon.stop()
        #expect(await RuntimeFixtures.waitUntil(timeout: 10) { !bus.isConnected })
        do throws(DBusError) {
            _ = try await bus.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "ListNames")
            Issue.record("a call on a dead bus succeeded")
        } catch {
            #expect(error.code == .disconnected)
        }
        await bus.close()
        await bus.close()
    }
}
