import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The second attack review's CLI classes on the real binary: a process that cannot read its own
/// arguments (no /proc), numbers from files and sockets that no integer holds, and signing keys in
/// places other users control.
@Suite("attack review 2: no /proc, hostile numbers, keys others control", .serialized, .timeLimit(.minutes(2)))
struct HostileInputReviewTests {
    // MARK: - No /proc

    /// `vigil ARGS` in a private mount namespace where `hide` makes /proc unreadable.
    static func withoutProc(_ hide: String, _ arguments: [String], in directory: String) async throws
        -> VigilExecutable.Output
    {
        try await VigilExecutable.run(
            executable: "/usr/bin/unshare",
            ["--mount", "--fork", "/bin/sh", "-c", "\(hide) && exec \"$0\" \"$@\"", VigilExecutable.path] + arguments,
            in: directory)
    }

    @Test(
        "without /proc every command exits 71 saying why, never the help with 0",
        arguments: ["umount -l /proc", "mount -t tmpfs none /proc"])
    func noProcFailsClosed(hide: String) async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try s.dir.write("work/vigil.toml", "plugins = [\"nope\"\n")  // broken: `check` must not pass
        for arguments in [["check", "--json"], ["up"], ["status", "--json"], ["plugin", "list"]] {
            let r = try await Self.withoutProc(hide, arguments, in: s.work)
            #expect(r.status == 71, "\(arguments): \(r.status) \(r.stdout) \(r.stderr)")
            #expect(r.stderr.contains("cannot read its own command line"), "\(r.stderr)")
            #expect(r.stderr.contains("mount -t proc proc /proc"), "\(r.stderr)")
            #expect(!r.stdout.contains("USAGE"), "\(r.stdout)")
        }
        // The SwiftPM plugins' tool fails the same way.
        let tool = try await VigilExecutable.run(
            executable: "/usr/bin/unshare",
            ["--mount", "--fork", "/bin/sh", "-c", "\(hide) && exec \"$0\" \"$@\"", VigilExecutable.pluginToolPath]
                + ["check", "--json"],
            in: s.work)
        #expect(tool.status == 71, "\(tool.stdout) \(tool.stderr)")
    }

    // MARK: - Numbers from files and sockets

    /// Plants a status file for this (live) process with `since` written as `since`, in a runtime
    /// directory of the sandbox; returns the environment that points `vigil status` at it.
    static func plantStatus(since: String, in s: CLISandbox) throws -> [String: String?] {
        try s.dir.makeDirectory("run")
        let directory = s.dir.url("run") + "/vigil"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let text = """
            {"schema": "vigil.status/v2", "pid": \(getpid()), "host": "planted", "config": null,
             "plugins": [{"name": "silent-engine", "state": "running", "since": \(since), "details": {}}]}
            """
        try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/host-\(getpid()).json"))
        return s.environment.merging(["XDG_RUNTIME_DIR": s.dir.url("run")]) { $1 }
    }

    @Test(
        "a status file's `since` that no clock holds is refused with a warning, never a trap",
        arguments: ["1e300", "-1e300", "9.3e18", "\"99999-01-01T00:00:00Z\""])
    func statusSinceOutOfRange(since: String) async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        let environment = try Self.plantStatus(since: since, in: s)
        for json in [false, true] {
            let r = try await VigilExecutable.run(
                ["status"] + (json ? ["--json"] : []), in: s.work, environment: environment)
            #expect(r.status == 1, "\(since) json=\(json): \(r.status) \(r.stderr)")
            #expect(r.stderr.contains("host-\(getpid()).json"), "\(r.stderr)")
            if json {
                #expect(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [Any] != nil, "\(r.stdout)")
            }
        }
    }

    @Test("a status file's `since` at the edge of the calendar still shows", arguments: ["253402300799", "0"])
    func statusSinceAtTheEdge(since: String) async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        let environment = try Self.plantStatus(since: since, in: s)
        let text = try await VigilExecutable.run(["status"], in: s.work, environment: environment)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("silent-engine"), "\(text.stdout)")
        let json = try await VigilExecutable.run(["status", "--json"], in: s.work, environment: environment)
        #expect(json.status == 0, "\(json.stderr)")
        let hosts = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let plugin = try #require((hosts.first?["plugins"] as? [[String: Any]])?.first)
        #expect(
            plugin["since"] as? String == (since == "0" ? "1970-01-01T00:00:00.000Z" : "9999-12-31T23:59:59.000Z"))
    }

    @Test(
        "a well-formed status file another user owns, or others may write, is refused by vigil status with the fix",
        arguments: ["owner", "mode"])
    func statusFilesOthersControl(variant: String) async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        // The same file, safe, shows a running host (statusSinceAtTheEdge); the old check showed these too.
        let environment = try Self.plantStatus(since: "0", in: s)
        let file = s.dir.url("run") + "/vigil/host-\(getpid()).json"
        if variant == "owner" {
            #expect(chown(file, getuid() == 65534 ? 65533 : 65534, getgid()) == 0, "changing an owner needs root")
        } else {
            #expect(chmod(file, 0o666) == 0)
        }
        let expected = variant == "owner" ? "is owned by uid" : "is writable by group or others (mode 666)"
        for json in [false, true] {
            let r = try await VigilExecutable.run(
                ["status"] + (json ? ["--json"] : []), in: s.work, environment: environment)
            #expect(r.status == 1, "\(variant) json=\(json): \(r.status) \(r.stdout) \(r.stderr)")
            #expect(r.stderr.contains("warning: the status file \(file) \(expected)"), "\(r.stderr)")
            #expect(!r.stdout.contains("planted"), "\(r.stdout)")
            if json { #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "\(r.stdout)") }
        }
    }

    /// A control socket that answers every connection with `answer` (a stand-in for a hostile or
    /// broken host: python3 serving a Unix socket).
    final class FakeControlSocket {
        let path: String
        let child: ChildProcess

        init(directory: TestDirectory, answer: String) throws {
            path = directory.url("control.sock")
            let script = """
                import os, socket, sys
                s = socket.socket(socket.AF_UNIX)
                s.bind(sys.argv[1]); s.listen(8)
                open(sys.argv[1] + ".ready", "w").close()
                while True:
                    c, _ = s.accept()
                    c.recv(4096)
                    c.sendall(sys.argv[2].encode() + b"\\n")
                    c.close()
                """
            child = try ChildProcess(
                "/usr/bin/python3", ["-c", script, path, answer], environment: ProcessInfo.processInfo.environment,
                stdout: "/dev/null", stderr: directory.url("fake.err"))
        }

        func ready() async -> Bool {
            await RuntimeFixtures.waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: path + ".ready") }
        }
    }

    @Test(
        "a sleep timer that no integer holds, from the control socket, is shown, never a trap",
        arguments: ["1e300", "-1e300", "9.3e18"])
    func soundscapeSleepTimerOutOfRange(remaining: String) async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        let answer = """
            {"ok": true, "state": {"soundscape": "rain", "title": "Rain", "volume": 1e300, "playback": "Playing", \
            "interrupted": false, "asleep": false, "sleepTimerRemaining": \(remaining)}}
            """
        let fake = try FakeControlSocket(directory: s.dir, answer: answer)
        defer { fake.child.terminate(grace: 1) }
        #expect(await fake.ready())
        let text = try await s.vigil("soundscape", "--socket", fake.path)
        #expect(text.status == 0, "\(text.status) \(text.stderr)")
        #expect(text.stdout.contains("Rain (rain): playing"), "\(text.stdout)")
        #expect(text.stdout.contains("sleep timer "), "\(text.stdout)")
        let json = try await s.vigil("soundscape", "status", "--json", "--socket", fake.path)
        #expect(json.status == 0, "\(json.stderr)")
        #expect(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any] != nil)
    }

    // MARK: - Keys in places others control

    /// `nobody`'s uid: another user than the one running the tests (root here).
    static let otherUser: uid_t = 65534

    @Test("keygen refuses a directory another user owns or others can write, with key-unsafe and exit 77")
    func keygenRefusesAnUnsafeDirectory() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try s.dir.makeDirectory("work/theirs")
        chmod(s.dir.url("work/theirs"), 0o777)
        chown(s.dir.url("work/theirs"), Self.otherUser, Self.otherUser)
        let theirs = try await s.vigil("plugin", "keygen", "--name", "demo", "--dir", "theirs")
        #expect(theirs.status == 77, "\(theirs.stderr)")
        #expect(theirs.stderr.contains("owned by uid \(Self.otherUser)"), "\(theirs.stderr)")
        #expect(theirs.stderr.contains("--dir"), "\(theirs.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.dir.url("work/theirs/demo.key")))

        // Variant: a directory of ours that group and others can write.
        try s.dir.makeDirectory("work/open")
        chmod(s.dir.url("work/open"), 0o775)
        let open = try await s.vigil("plugin", "keygen", "--name", "demo", "--dir", "open")
        #expect(open.status == 77, "\(open.stderr)")
        #expect(open.stderr.contains("chmod go-w"), "\(open.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.dir.url("work/open/demo.key")))

        // A link to such a directory is judged by where it leads.
        symlink(s.dir.url("work/open"), s.dir.url("work/link"))
        #expect(try await s.vigil("plugin", "keygen", "--name", "demo", "--dir", "link").status == 77)

        // Ours, or sticky like /tmp: allowed.
        try s.dir.makeDirectory("work/sticky")
        chmod(s.dir.url("work/sticky"), 0o1777)
        let sticky = try await s.vigil("plugin", "keygen", "--name", "demo", "--dir", "sticky")
        #expect(sticky.status == 0, "\(sticky.stderr)")
    }

    @Test("sign refuses a key another user owns or others can write, or in such a directory, with exit 77")
    func signRefusesAnUnsafeKey() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        let plugin = try await s.makePlugin("demo")
        let key = s.dir.url("work/keys/demo.key")

        chown(key, Self.otherUser, Self.otherUser)
        let owned = try await s.vigil("plugin", "sign", plugin, "--key", "keys/demo.key")
        #expect(owned.status == 77, "\(owned.stderr)")
        #expect(owned.stderr.contains("owned by uid \(Self.otherUser)"), "\(owned.stderr)")
        #expect(owned.stderr.contains("vigil plugin keygen"), "\(owned.stderr)")
        chown(key, getuid(), getgid())

        // Variant: writable by group.
        chmod(key, 0o620)
        let writable = try await s.vigil("plugin", "sign", plugin, "--key", "keys/demo.key")
        #expect(writable.status == 77, "\(writable.stderr)")
        #expect(writable.stderr.contains("chmod go-w"), "\(writable.stderr)")

        // Variant: the key's directory belongs to another user.
        chmod(key, 0o600)
        chown(s.dir.url("work/keys"), Self.otherUser, Self.otherUser)
        let directory = try await s.vigil("plugin", "sign", plugin, "--key", "keys/demo.key")
        #expect(directory.status == 77, "\(directory.stderr)")
        #expect(directory.stderr.contains("the directory of the secret key"), "\(directory.stderr)")
        chown(s.dir.url("work/keys"), getuid(), getgid())

        // Readable by others only: signed, with the warning as before.
        chmod(key, 0o644)
        let readable = try await s.vigil("plugin", "sign", plugin, "--key", "keys/demo.key")
        #expect(readable.status == 0, "\(readable.stderr)")
        #expect(readable.stderr.contains("readable by other users"), "\(readable.stderr)")
    }
}
