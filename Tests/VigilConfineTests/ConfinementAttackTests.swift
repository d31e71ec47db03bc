import Foundation
import Synchronization
import Testing
import VigilConfine
import VigilCore
import VigilPlugin
import VigilTestSupport

/// The SIGUSR1s this test process (the "host" of the launched plugins) has received.
private let hostSignals = Atomic<Int>(0)

/// Issue 33, point 3: a compromised plugin tries, in turn, what a plugin with the host's rights
/// could do; each attempt is refused by the kernel (the plugin checks the error it got) AND
/// reported as a typed denial naming the capability that would allow it; with that capability
/// declared, the same call succeeds.
@Suite struct ConfinementAttackTests {
    init() throws {
        let support = ConfinementSupport.probe()
        #expect(support.landlockABI >= 6 && support.seccompFilter && support.noNewPrivileges, "\(support)")
    }

    @Test func readingTheOperatorsSSHKeyIsRefusedAndReported() async throws {
        let fixture = try await ConfinementFixture()
        defer { fixture.remove() }
        let refused = try await fixture.attack("read", fixture.sshKey, plan: fixture.plan(.none))
        #expect(refused.result == "result read refused EACCES", "\(refused.output)")
        #expect(
            refused.denials == [
                ConfinementDenial(operation: "open", capability: .fileRead(fixture.sshKey), detail: "EACCES")
            ])

        // Declared (an absolute file, read): readable.
        let declared = PluginCapabilities(files: [.init(path: fixture.sshKey, access: .read)])
        let allowed = try await fixture.attack("read", fixture.sshKey, plan: fixture.plan(declared))
        #expect(allowed.result == "result read ok", "\(allowed.output)")
        #expect(allowed.denials.isEmpty)
        // The control: unconfined, the same plugin reads it.
        let control = try await fixture.attack("read", fixture.sshKey, plan: nil)
        #expect(control.result == "result read ok")
    }

    @Test func writingOutsideTheStateDirectoryIsRefusedWhileTheDeclaredFileIsWritten() async throws {
        let fixture = try await ConfinementFixture()
        defer { fixture.remove() }
        let declared = PluginCapabilities(files: [.init(path: "heartbeat.txt", access: .readWrite)])
        let outside = fixture.home + "/.bashrc"
        let refused = try await fixture.attack("write", outside, plan: fixture.plan(declared))
        #expect(refused.result == "result write refused EACCES", "\(refused.output)")
        #expect(refused.denials.map(\.capability) == [.fileWrite(outside)])
        #expect(!FileManager.default.fileExists(atPath: outside))
        // A file of the state directory it did not declare: refused too, and named as the manifest would.
        let undeclared = fixture.stateDirectory + "/other.txt"
        let other = try await fixture.attack("write", undeclared, plan: fixture.plan(declared))
        #expect(other.result == "result write refused EACCES")
        #expect(
            other.denials.map { $0.declaration(stateDirectory: fixture.stateDirectory) } == [
                #""files": [{"path": "other.txt", "access": "read-write"}]"#
            ])
        // Reading a file it may only read is not writing it.
        let readOnly = PluginCapabilities(files: [.init(path: fixture.sshKey, access: .read)])
        let overwrite = try await fixture.attack("write", fixture.sshKey, plan: fixture.plan(readOnly))
        #expect(overwrite.result == "result write refused EACCES")
        #expect(overwrite.denials.map(\.capability) == [.fileWrite(fixture.sshKey)])

        let heartbeat = fixture.stateDirectory + "/heartbeat.txt"
        let allowed = try await fixture.attack("write", heartbeat, plan: fixture.plan(declared))
        #expect(allowed.result == "result write ok", "\(allowed.output)")
        #expect(try TextFile.read(heartbeat) == "written by the plugin\n")
        #expect(allowed.denials.isEmpty)
    }

    @Test func connectingToALoopbackPortIsRefusedUnlessDeclared() async throws {
        let fixture = try await ConfinementFixture()
        defer { fixture.remove() }
        let listener = try LoopbackListener()
        defer { listener.close() }
        let port = String(listener.port)

        // No network: not even the socket.
        let none = try await fixture.attack("connect", port, plan: fixture.plan(.none))
        #expect(none.result == "result connect refused EPERM", "\(none.output)")
        #expect(none.denials.map(\.capability) == [.network(family: Int(AF_INET))])
        #expect(none.denials.map(\.operation) == ["socket"])

        // Another port declared: the socket, but not this connection (Landlock, ABI 4).
        let elsewhere = PluginCapabilities(network: .tcpConnect([listener.port == 1 ? 2 : listener.port - 1]))
        let other = try await fixture.attack("connect", port, plan: fixture.plan(elsewhere))
        #expect(other.result == "result connect refused EACCES", "\(other.output)")
        #expect(
            other.denials == [
                ConfinementDenial(operation: "connect", capability: .tcpConnect(listener.port), detail: "EACCES")
            ])
        // …and with a TCP port list, no UDP (Landlock mediates TCP only, so seccomp refuses the socket).
        let udp = try await fixture.attack("udp", "0", plan: fixture.plan(elsewhere))
        #expect(udp.result == "result udp refused EPERM")
        #expect(udp.denials.map(\.operation) == ["socket"])

        let declared = PluginCapabilities(network: .tcpConnect([listener.port]))
        let allowed = try await fixture.attack("connect", port, plan: fixture.plan(declared))
        #expect(allowed.result == "result connect ok", "\(allowed.output)")
        #expect(allowed.denials.isEmpty)
        let any = try await fixture.attack("connect", port, plan: fixture.plan(PluginCapabilities(network: .any)))
        #expect(any.result == "result connect ok")
    }

    @Test func executingAShellIsRefusedUnlessDeclared() async throws {
        let fixture = try await ConfinementFixture()
        defer { fixture.remove() }
        let refused = try await fixture.attack("exec", "/bin/sh", plan: fixture.plan(.none))
        #expect(refused.result == "result exec refused EPERM", "\(refused.output)")
        #expect(refused.denials.map(\.capability) == [.spawn("/bin/sh")])
        #expect(refused.denials.map(\.operation) == ["execve"])

        // Another program declared: execve is allowed, Landlock refuses this one.
        let other = PluginCapabilities(spawn: ["/usr/bin/true"])
        let elsewhere = try await fixture.attack("exec", "/bin/sh", plan: fixture.plan(other))
        #expect(elsewhere.result == "result exec refused EACCES", "\(elsewhere.output)")
        #expect(
            elsewhere.denials == [
                ConfinementDenial(operation: "execve", capability: .spawn("/bin/sh"), detail: "EACCES")
            ])

        let declared = PluginCapabilities(spawn: ["/bin/sh"])
        let allowed = try await fixture.attack("exec", "/bin/sh", plan: fixture.plan(declared))
        #expect(allowed.result == "result exec ok", "\(allowed.output)")
        #expect(allowed.denials.isEmpty)
    }

    @Test func tracingTheHostIsRefused() async throws {
        let fixture = try await ConfinementFixture()
        defer { fixture.remove() }
        let host = String(getpid())
        // Even with everything a manifest can declare, no ptrace (never run unconfined: it would stop this process).
        for capabilities in [PluginCapabilities.none, Self.everything(fixture)] {
            let refused = try await fixture.attack("ptrace", host, plan: fixture.plan(capabilities))
            #expect(refused.result == "result ptrace refused EPERM", "\(refused.output)")
            #expect(refused.denials.map(\.capability) == [.none])
            #expect(refused.denials.map(\.operation) == ["ptrace"])
        }
    }

    @Test func theHostsMemoryIsNotReachableThroughProc() async throws {
        let fixture = try await ConfinementFixture()
        defer { fixture.remove() }
        let host = String(getpid())
        for capabilities in [PluginCapabilities.none, Self.everything(fixture)] {
            let refused = try await fixture.attack("mem", host, plan: fixture.plan(capabilities))
            #expect(refused.result == "result mem refused EACCES", "\(refused.output)")
            #expect(
                refused.denials == [
                    ConfinementDenial(operation: "open", capability: .none, detail: "EACCES")
                ])
        }
        // The control: unconfined, the same user's helper opens it.
        let control = try await fixture.attack("mem", host, plan: nil)
        #expect(control.result == "result mem ok")
    }

    @Test func signallingTheHostIsRefusedAndTheHostSeesNoSignal() async throws {
        let fixture = try await ConfinementFixture()
        defer { fixture.remove() }
        let previous = signal(SIGUSR1) { _ in hostSignals.add(1, ordering: .relaxed) }
        defer { signal(SIGUSR1, previous) }
        let before = hostSignals.load(ordering: .relaxed)
        let host = String(getpid())
        let refused = try await fixture.attack("kill", host, plan: fixture.plan(Self.everything(fixture)))
        #expect(refused.result == "result kill refused EPERM", "\(refused.output)")
        #expect(refused.denials.map(\.capability) == [.none])
        #expect(refused.denials.map(\.operation) == ["kill"])
        // The control, which proves this process would have seen it: unconfined, the signal arrives.
        let control = try await fixture.attack("kill", host, plan: nil)
        #expect(control.result == "result kill ok")
        let arrived = await RuntimeFixtures.waitUntil(timeout: 10) { hostSignals.load(ordering: .relaxed) > before }
        #expect(arrived)
        #expect(hostSignals.load(ordering: .relaxed) == before + 1, "the confined kill reached the host")
    }

    @Test func connectingToABusItDidNotDeclareIsRefused() async throws {
        let fixture = try await ConfinementFixture()
        defer { fixture.remove() }
        let bus = try DBusDaemon()
        defer { bus.stop() }
        let socket = bus.directory + "/bus"
        // Neither a bus nor the sound server declared: no UNIX-domain socket at all.
        for capabilities in [PluginCapabilities.none, PluginCapabilities(network: .any)] {
            let refused = try await fixture.attack("bus", socket, plan: fixture.plan(capabilities))
            #expect(refused.result == "result bus refused EPERM", "\(refused.output)")
            #expect(refused.denials.map(\.capability) == [.unixSocket])
        }
        // Declared: it connects. (Landlock does not mediate connecting to a pathname socket on
        // this kernel, so a plugin that declares one bus reaches any socket it can name:
        // docs/native-plugins.md, "What confinement does not cover".)
        let declared = PluginCapabilities(buses: [.session])
        let allowed = try await fixture.attack("bus", socket, plan: fixture.plan(declared))
        #expect(allowed.result == "result bus ok", "\(allowed.output)")
    }

    @Test func theHostsAbstractSocketsAreOutOfReachEvenWithUNIXSocketsDeclared() async throws {
        let fixture = try await ConfinementFixture()
        defer { fixture.remove() }
        let name = "vigil-confine-test-\(UUID().uuidString.prefix(8))"
        let listener = try AbstractListener(name: name)
        defer { listener.close() }
        // AF_UNIX sockets allowed (a bus declared): Landlock's scope (ABI 6) still refuses an
        // abstract socket made outside the sandbox, and the helper reports it.
        let declared = PluginCapabilities(buses: [.session])
        let refused = try await fixture.attack("abstract", name, plan: fixture.plan(declared))
        #expect(refused.result == "result abstract refused EPERM", "\(refused.output)")
        #expect(refused.denials == [ConfinementDenial(operation: "connect", capability: .none, detail: "EPERM")])
        // The control: unconfined, the same plugin connects.
        let control = try await fixture.attack("abstract", name, plan: nil)
        #expect(control.result == "result abstract ok")
    }

    @Test func theSwiftHeartbeatExampleRunsConfinedAndWritesOnlyItsDeclaredFile() async throws {
        let fixture = try await ConfinementFixture()
        defer { fixture.remove() }
        let example =
            ConfinementFixture.repository
            + "/Examples/HeartbeatPlugin/heartbeat-example/libVigilHeartbeatExample.so"
        // Declared: the Swift runtime starts under the policy (its threads, its allocator, Foundation's
        // reads) and the plugin keeps writing its heartbeat file.
        let declared = PluginCapabilities(files: [.init(path: "heartbeat", access: .readWrite)])
        let runs = try await fixture.attack(
            "keepalive", fixture.stateDirectory, plan: fixture.plan(declared), plugin: example)
        #expect(runs.result == "result keepalive ok", "\(runs.output)")
        #expect(runs.denials.isEmpty, "\(runs.denials)")
        #expect(try TextFile.read(fixture.stateDirectory + "/heartbeat").hasPrefix("beat "))

        // Undeclared: its start fails with the kernel's refusal, reported as the file it would need.
        let heartbeat = fixture.stateDirectory + "/heartbeat"
        unlink(heartbeat)
        let refused = try await fixture.attack(
            "keepalive", fixture.stateDirectory, plan: fixture.plan(.none), plugin: example)
        #expect(
            refused.result.hasPrefix("result keepalive refused start: cannot write \(heartbeat): Permission denied"))
        #expect(
            refused.denials == [
                ConfinementDenial(operation: "open", capability: .fileWrite(heartbeat), detail: "EACCES")
            ])
        #expect(
            refused.denials.map { $0.declaration(stateDirectory: fixture.stateDirectory) } == [
                #""files": [{"path": "heartbeat", "access": "read-write"}]"#
            ])
    }

    /// Everything a manifest can declare, short of the attacks' own targets.
    static func everything(_ fixture: ConfinementFixture) -> PluginCapabilities {
        PluginCapabilities(
            files: [.init(path: "./", access: .readWrite), .init(path: "/usr/share/", access: .read)],
            soundServer: true, buses: [.session, .system], network: .any, spawn: ["/usr/bin/true"])
    }
}

/// A UNIX stream socket listening in the abstract namespace (`@name`), as a desktop session's or the
/// host's own abstract sockets are.
struct AbstractListener {
    let descriptor: Int32

    init(name: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path[0] = 0
            for (i, byte) in bytes.enumerated() { path[i + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { _ = Glibc.close(fd) }
            throw RuntimeFixtures.Failure("cannot listen on @\(name): \(reason)")
        }
        descriptor = fd
    }

    func close() { _ = Glibc.close(descriptor) }
}
