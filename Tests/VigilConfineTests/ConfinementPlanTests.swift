import Testing
import VigilCore
import VigilPlugin

@testable import VigilConfine

@Suite struct ConfinementPlanTests {
    @Test func aDeclarationBecomesTheBaselineAndItsRulesInTheWireEncoding() throws {
        let capabilities = PluginCapabilities(
            files: [
                .init(path: "heartbeat.txt", access: .readWrite), .init(path: "/etc/hostname", access: .read),
                .init(path: "sounds/", access: .read),
            ],
            buses: [.session], network: .tcpConnect([8080, 443]), spawn: ["/usr/bin/aplay"])
        let plan = try ConfinementPlan(
            capabilities: capabilities, stateDirectory: "/var/lib/vigil/plugins/beat/",
            runtimeDirectories: ["/opt/swift"])
        let text = String(decoding: plan.encoded, as: UTF8.self)
        #expect(
            text == """
                vigil-confine 1
                state /var/lib/vigil/plugins/beat
                read /usr/lib/
                read /lib/
                read /usr/lib64/
                read /lib64/
                read /etc/ld.so.cache
                read /opt/swift/
                read /proc/self/
                read /sys/devices/system/cpu/
                read /etc/localtime
                read /usr/share/zoneinfo/
                read /dev/zero
                read /dev/urandom
                write /dev/null
                read /etc/hostname
                write /var/lib/vigil/plugins/beat/heartbeat.txt
                read /var/lib/vigil/plugins/beat/sounds/
                exec /lib64/ld-linux-x86-64.so.2
                exec /lib/ld-linux-aarch64.so.1
                network tcp
                tcp-connect 443
                tcp-connect 8080
                unix
                spawn /usr/bin/aplay
                end

                """)
        #expect(ConfinementPlan.decodingError(plan.encoded) == nil)
    }

    @Test func theStateDirectoryIsGrantedOnlyWhenDeclared() throws {
        let none = try ConfinementPlan(capabilities: .none, stateDirectory: "/s", runtimeDirectories: [])
        #expect(!none.rules.contains { $0.path.hasPrefix("/s/") || $0.path == "/s" })
        #expect(none.network == .none && !none.unixSockets && none.spawn.isEmpty)
        let whole = try ConfinementPlan(
            capabilities: PluginCapabilities(files: [.init(path: "./", access: .readWrite)]), stateDirectory: "/s",
            runtimeDirectories: [])
        #expect(whole.rules.last == .init(path: "/s/", access: .write))
        #expect(ConfinementPlan.decodingError(whole.encoded) == nil)
    }

    @Test func aPathThePolicyCannotCarryIsRefused() throws {
        #expect(throws: ConfinementError.self) {
            _ = try ConfinementPlan(
                capabilities: PluginCapabilities(files: [.init(path: "/etc/a\nwrite /", access: .read)]),
                stateDirectory: "/s", runtimeDirectories: [])
        }
        do {
            _ = try ConfinementPlan(capabilities: .none, stateDirectory: "relative", runtimeDirectories: [])
            Issue.record("a relative state directory was accepted")
        } catch {
            #expect(error.code == .pathUnencodable)
        }
    }

    @Test(arguments: [
        ("", "no `end` line"),
        ("vigil-confine 2\nend\n", "does not start with `vigil-confine 1`"),
        ("vigil-confine 1\nread etc\nend\n", "needs an absolute path"),
        ("vigil-confine 1\ntcp-connect 0\nend\n", "is not a TCP port"),
        ("vigil-confine 1\ntcp-connect 65536\nend\n", "is not a TCP port"),
        ("vigil-confine 1\nnetwork some\nend\n", "unknown network"),
        ("vigil-confine 1\nmount /\nend\n", "unknown directive"),
        ("vigil-confine 1\nend\nread /\n", "follows `end`"),
        ("vigil-confine 1\nread /usr/lib/", "no end of line"),
        ("vigil-confine 1\nread /a\0b\nend\n", "NUL"),
    ])
    func theHelperRefusesAMalformedPolicy(text: String, message: String) {
        let error = ConfinementPlan.decodingError(Array(text.utf8))
        #expect(error?.contains(message) == true, "\(String(describing: error))")
    }

    @Test func whatThisKernelCannotEnforceIsNamed() throws {
        let tcp = try ConfinementPlan(
            capabilities: PluginCapabilities(network: .tcpConnect([443])), stateDirectory: "/s", runtimeDirectories: [])
        let full = ConfinementSupport(landlockABI: 7, seccompFilter: true, noNewPrivileges: true, userNamespaces: true)
        #expect(full.missing(for: tcp).isEmpty)
        let old = ConfinementSupport(landlockABI: 3, seccompFilter: true, noNewPrivileges: true, userNamespaces: false)
        #expect(
            old.missing(for: tcp) == [
                "Landlock TCP rules (ABI 4; this kernel has 3)",
                "Landlock signal and abstract-socket scoping (ABI 6; this kernel has 3)",
            ])
        let none = ConfinementSupport(
            landlockABI: 0, seccompFilter: false, noNewPrivileges: true, userNamespaces: false)
        #expect(
            none.missing(for: tcp) == [
                "seccomp filters (system calls, socket families, signals)", "Landlock (file access)",
            ])
        // This machine's kernel (6.18, Landlock ABI 7) enforces all of it, as vigil_confine_apply agrees.
        #expect(ConfinementSupport.probe().missing(for: tcp).isEmpty)
    }

    @Test func reportLinesParseIntoTypedDenials() {
        let text = """
            denial\topen\tfile-read\t/home/op/.ssh/id_ed25519\tEACCES
            denial\tconnect\ttcp-connect\t8080\tEACCES
            denial\tsocket\tnetwork\t10\tEPERM (seccomp) syscall 41
            denial\tsocket\tunix-socket\t1\tEPERM (seccomp) syscall 41
            denial\texecve\tspawn\t/bin/sh\tEPERM (seccomp) syscall 59
            denial\tkill\tnone\t1\tEPERM (seccomp) syscall 62
            denial\topen\tfile-write\t/tmp/a\\tb\\\\c\\nd\tEACCES
            not a denial
            denial\topen\tfile-read\trelative\tEACCES
            denial\tconnect\ttcp-connect\t70000\tEACCES
            denial\topen\tfile-read\t/x\\q\tEACCES
            denial\topen\tgod-mode\t/x\tEACCES
            denial\topen\tfile-read\t/x
            """
        #expect(
            ConfinementDenial.parse(text) == [
                .init(operation: "open", capability: .fileRead("/home/op/.ssh/id_ed25519"), detail: "EACCES"),
                .init(operation: "connect", capability: .tcpConnect(8080), detail: "EACCES"),
                .init(operation: "socket", capability: .network(family: 10), detail: "EPERM (seccomp) syscall 41"),
                .init(operation: "socket", capability: .unixSocket, detail: "EPERM (seccomp) syscall 41"),
                .init(operation: "execve", capability: .spawn("/bin/sh"), detail: "EPERM (seccomp) syscall 59"),
                .init(operation: "kill", capability: .none, detail: "EPERM (seccomp) syscall 62"),
                .init(operation: "open", capability: .fileWrite("/tmp/a\tb\\c\nd"), detail: "EACCES"),
            ])
        let denial = ConfinementDenial(operation: "open", capability: .fileWrite("/s/beat.txt"), detail: "EACCES")
        #expect(
            denial.declaration(stateDirectory: "/s/") == #""files": [{"path": "beat.txt", "access": "read-write"}]"#)
        #expect(denial.declaration() == #""files": [{"path": "/s/beat.txt", "access": "read-write"}]"#)
        #expect(
            denial.description
                == #"open refused (EACCES); it would need "files": [{"path": "/s/beat.txt", "access": "read-write"}]"#)
        #expect(
            ConfinementDenial(operation: "ptrace", capability: .none, detail: "EPERM").description
                == "ptrace refused (EPERM); no capability allows it")
    }
}
