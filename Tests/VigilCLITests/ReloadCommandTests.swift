import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `vigil reload` against a real `vigil up`: through the host's control socket, announced to
/// systemd with RELOADING=1 + MONOTONIC_USEC= and READY=1, refusals with their own exit code and
/// one JSON document whatever happens; and the shipped unit's `ExecReload=` command line itself.
@Suite("vigil reload", .serialized, .timeLimit(.minutes(2)))
struct ReloadCommandTests {
    typealias Project = HostCommandTests.Project

    static func worker(_ name: String) -> String {
        #"{ name = "\#(name)", command = "/bin/sleep", args = ["300"] }"#
    }

    static func json(_ text: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    /// Rewrites the project's `[supervisor]` workers (the rest of vigil.toml as the project wrote it).
    static func setWorkers(_ project: Project, _ workers: [String]) throws {
        let text = try TextFile.read(project.config)
        let start = try #require(text.range(of: "workers = ["))
        let end = try #require(text.range(of: "\n]", range: start.upperBound..<text.endIndex))
        let replaced =
            text[..<start.lowerBound] + "workers = [\n" + workers.map { "  " + $0 }.joined(separator: ",\n")
            + text[end.lowerBound...]
        try String(replaced).write(toFile: project.config, atomically: true, encoding: .utf8)
    }

    @Test("reload applies new workers, announces itself to systemd, and refuses a bad file with exit 65")
    func reloadThroughTheControlSocket() async throws {
        let project = try await SupervisorRuntimeTests.project(workers: [Self.worker("a")])
        defer { project.dir.remove() }
        let notify = try NotifySocket(path: project.dir.path + "/notify.sock")
        var environment = project.environment
        environment["NOTIFY_SOCKET"] = notify.path
        let host = try ChildProcess(
            VigilExecutable.path, ["up", "--config", project.config], environment: environment,
            stdout: project.dir.path + "/up.out", stderr: project.dir.path + "/up.err")
        defer { host.terminate(grace: 5) }
        let running = try await SupervisorRuntimeTests.supervisorStatus(project, pid: host.pid) {
            $0["state"] as? String == "running"
        }
        #expect(running != nil, "\((try? TextFile.read(project.dir.path + "/up.err")) ?? "")")
        _ = await notify.drained(quietFor: 0.3)

        try Self.setWorkers(project, [Self.worker("a"), Self.worker("b")])
        let r = try await project.vigil("reload", "--config", project.config, "--json")
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let document = try #require(Self.json(r.stdout), "\(r.stdout)")
        #expect(document["schema"] as? String == "vigil.reload/v1")
        #expect(document["ok"] as? Bool == true)
        #expect(document["pid"] as? Int == Int(host.pid))
        // Only the workers changed: the supervisor took them in place (worker a kept its process).
        #expect(document["reconfigured"] as? [String] == ["supervisor"], "\(r.stdout)")
        #expect(document["restarted"] as? [String] == [], "\(r.stdout)")
        #expect(document["error"] is NSNull)
        let workers = try await SupervisorRuntimeTests.supervisorStatus(project, pid: host.pid) {
            SupervisorRuntimeTests.details($0)["workers"] as? String == "a, b"
        }
        #expect(workers != nil, "the new worker shows in vigil status")

        // RELOADING=1 with the monotonic time, then READY=1 once the host settled.
        let messages = await notify.drained(quietFor: 0.5)
        let reloading = try #require(messages.firstIndex { $0.contains("RELOADING=1") }, "\(messages)")
        let usec = messages[reloading].split(separator: "\n").first { $0.hasPrefix("MONOTONIC_USEC=") }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowUsec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        let sent = try #require(usec.flatMap { UInt64($0.dropFirst("MONOTONIC_USEC=".count)) }, "\(messages)")
        #expect(
            sent <= nowUsec && nowUsec - sent < 60_000_000, "MONOTONIC_USEC is CLOCK_MONOTONIC: \(sent) vs \(nowUsec)")
        #expect(messages[(reloading + 1)...].contains { $0.split(separator: "\n").contains("READY=1") }, "\(messages)")

        // Refused: the old workers keep running, exit 65, one JSON document with the reason.
        let before = try await SupervisorRuntimeTests.supervisorStatus(project, pid: host.pid)
        try "plugins = [\"supervisor\"\n".write(toFile: project.config, atomically: true, encoding: .utf8)
        let refused = try await project.vigil("reload", "--config", project.config, "--json")
        #expect(refused.status == 65, "\(refused.stdout)\(refused.stderr)")
        let error = try #require(Self.json(refused.stdout)?["error"] as? [String: Any], "\(refused.stdout)")
        #expect(error["code"] as? String == "reload-refused")
        #expect((error["message"] as? String ?? "").contains("keeps running its previous configuration"))
        // Refused too, the reload is announced and over: READY=1 from the host itself (nothing restarted).
        let refusedMessages = await notify.drained(quietFor: 0.5)
        let refusedStart = try #require(
            refusedMessages.firstIndex { $0.contains("RELOADING=1") }, "\(refusedMessages)")
        #expect(
            refusedMessages[(refusedStart + 1)...].contains { $0.split(separator: "\n").contains("READY=1") },
            "\(refusedMessages)")
        let plain = try await project.vigil("reload", "--config", project.config)
        #expect(plain.status == 65)
        #expect(plain.stderr.hasPrefix("error: "), "\(plain.stderr)")
        let after = try await SupervisorRuntimeTests.supervisorStatus(project, pid: host.pid)
        #expect(after?["since"] as? Double == before?["since"] as? Double, "the supervisor was not restarted")
        #expect(after?["state"] as? String == "running")
        #expect(host.isRunning)
    }

    @Test("no host: exit 1 and one JSON document; the control socket goes with the host")
    func noHost() async throws {
        let project = try await SupervisorRuntimeTests.project(workers: [Self.worker("a")])
        defer { project.dir.remove() }
        let r = try await project.vigil("reload", "--config", project.config, "--json")
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        let document = try #require(Self.json(r.stdout), "\(r.stdout)")
        #expect(document["ok"] as? Bool == false)
        #expect((document["error"] as? [String: Any])?["code"] as? String == "not-running")

        let host = try SupervisorRuntimeTests.up(project)
        _ = try await SupervisorRuntimeTests.supervisorStatus(project, pid: host.pid) {
            $0["state"] as? String == "running"
        }
        let socket = project.runtimeDirectory + "/vigil/control-\(host.pid).sock"
        var info = stat()
        #expect(lstat(socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o777 == 0o600, "only the user may connect")
        _ = host.terminate(grace: 5)
        #expect(!FileManager.default.fileExists(atPath: socket), "removed when the host stops")
    }

    @Test("the shipped unit's ExecReload= reloads the host its ExecStart= started")
    func unitExecReload() async throws {
        let unit = try TextFile.read(VigilExecutable.packageRoot + "/Examples/systemd/vigil.service")
        func value(_ key: String) -> String? {
            unit.split(separator: "\n").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
        }
        let start = try #require(value("ExecStart"))
        let reload = try #require(value("ExecReload"))
        #expect(reload == start.replacingOccurrences(of: " up ", with: " reload "), "the same vigil.toml")

        // Run both command lines as systemd would: %E is $XDG_CONFIG_HOME, /usr/bin/vigil this build's.
        let project = try await SupervisorRuntimeTests.project(workers: [Self.worker("a")])
        defer { project.dir.remove() }
        let configHome = project.dir.path + "/config"
        try FileManager.default.createDirectory(atPath: configHome + "/vigil", withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: project.config, toPath: configHome + "/vigil/vigil.toml")
        func arguments(_ line: String) -> [String] {
            line.replacingOccurrences(of: "%E", with: configHome).split(separator: " ").dropFirst().map(String.init)
        }
        let host = try ChildProcess(
            VigilExecutable.path, arguments(start), environment: project.environment,
            stdout: project.dir.path + "/up.out", stderr: project.dir.path + "/up.err")
        defer { host.terminate(grace: 5) }
        let running = try await SupervisorRuntimeTests.supervisorStatus(project, pid: host.pid) {
            $0["state"] as? String == "running"
        }
        #expect(running != nil, "\((try? TextFile.read(project.dir.path + "/up.err")) ?? "")")
        let r = try await RuntimeFixtures.run(
            VigilExecutable.path, arguments(reload), environment: project.environment, timeout: 30)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("kept running: supervisor"), "\(r.stdout)")
    }
}
