import Foundation
import Testing
import VigilTestSupport

/// The supervisor-only example host (Examples/SupervisorHost, built here as
/// `SupervisorHostSource`): the host core and the supervisor, run as a user runs it.
@Suite("supervisor-only example host", .timeLimit(.minutes(1)))
struct SupervisorOnlyHostTests {
    /// The built example host, beside the built `vigil`.
    static var binary: String {
        (VigilExecutable.path as NSString).deletingLastPathComponent + "/SupervisorHostSource"
    }

    @Test("it links the host core and the supervisor only: no sound, speech or D-Bus library; `vigil` does")
    func linksNoAudio() async throws {
        let notForSupervisorHosts = ["libpulse", "libasound", "libsndfile", "libespeak-ng", "libsystemd"]
        let needed = try await ELFLinkage.neededLibraries(Self.binary)
        for library in notForSupervisorHosts {
            #expect(!needed.contains { $0.hasPrefix(library) }, "\(library) in \(needed)")
        }
        // libsodium is the one C library it must link: the plugins' signatures are checked.
        #expect(needed.contains { $0.hasPrefix("libsodium") }, "\(needed)")
        // The same measure finds them all in the umbrella's host, `vigil`.
        let umbrella = try await ELFLinkage.neededLibraries(VigilExecutable.path)
        for library in notForSupervisorHosts {
            #expect(umbrella.contains { $0.hasPrefix(library) }, "\(library) not in vigil's \(umbrella)")
        }
    }

    @Test("it keeps its worker alive from a signed vigil.toml, and stops it on SIGTERM")
    func runsAndStops() async throws {
        let directory = try TestDirectory("vigil-supervisor-host")
        defer { directory.remove() }
        let example = try String(
            contentsOfFile: VigilExecutable.packageRoot + "/Examples/SupervisorHost/vigil.toml", encoding: .utf8)
        // The example's configuration, with a worker that says it runs (its pid) before it waits.
        let marker = directory.url("worker.pid")
        let worker =
            #"{ name = "heartbeat", command = "/bin/sh", args = ["-c", "echo $$ > \#(marker); exec sleep 60"], restart = "on-failure" },"#
        let configuration = example.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("  { name = \"heartbeat\"") ? worker : String(line)
        }.joined(separator: "\n")
        #expect(configuration.contains(marker))
        let config = try directory.write("vigil.toml", configuration)
        let runtime = try directory.makeDirectory("runtime")
        let state = try directory.makeDirectory("state")
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtime
        environment["XDG_STATE_HOME"] = state
        environment["NOTIFY_SOCKET"] = nil
        let host = try ChildProcess(
            Self.binary, [config], environment: environment, stdout: directory.url("stdout"),
            stderr: directory.url("stderr"))
        defer {
            host.signal(SIGKILL)
            host.wait()
        }
        let started = await RuntimeFixtures.waitUntil(timeout: 15) {
            (try? TextFile.read(marker))?.isEmpty == false
        }
        let log = { (try? TextFile.read(directory.url("stderr"))) ?? "" }
        try #require(started, "the worker never ran; stderr: \(log())")
        let workerPID = try #require(pid_t((try TextFile.read(marker)).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(workerPID, 0) == 0)
        host.signal(SIGTERM)
        let status = await blockingCall { host.wait() }
        #expect(ChildProcess.exitCode(fromWaitStatus: status) == 0, "stderr: \(log())")
        let output = (try? TextFile.read(directory.url("stdout"))) ?? ""
        #expect(output.contains("supervisor: now running"), "\(output)")
        #expect(output.contains("supervisor-host: stopped"), "\(output)")
        // The host stopped its worker before it exited.
        #expect(kill(workerPID, 0) == -1 && errno == ESRCH)
    }
}
