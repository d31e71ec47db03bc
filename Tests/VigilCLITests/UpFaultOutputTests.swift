import Foundation
import Testing
import VigilTestSupport

/// `vigil up`'s normal output (no `--verbose`) names a fault a running plugin reports, with its
/// cause, and its end: the real binary, a private PulseAudio server, a state directory on a tmpfs
/// that a test fills.
@Suite("vigil up names plugin faults", .serialized, .timeLimit(.minutes(2)))
struct UpFaultOutputTests {
    @Test(
        "a soundscape preference write on a full disk is printed with its cause, and so is its recovery",
        .enabled(if: FullDisk.isAvailable, "needs root to mount a tmpfs"))
    func preferenceWriteFault() async throws {
        try await PulseAudioServer.with { server in
            let project = try HostCommandTests.Project()
            defer { project.dir.remove() }
            let disk = try FullDisk()
            defer { disk.unmount() }
            try project.dir.write(
                "vigil.toml", "plugins = [\"soundscape\"]\n\n[host]\nbackground_modes = [\"audio\"]\n")
            try await project.trust("soundscape")
            var environment = project.environment
            environment["PULSE_SERVER"] = server.address
            environment["XDG_STATE_HOME"] = disk.path
            let output = project.dir.path + "/up.out"
            let host = try ChildProcess(
                VigilExecutable.path, ["up", "--config", project.config], environment: environment, stdout: output,
                stderr: project.dir.path + "/up.err")
            defer { host.terminate(grace: 5) }
            let printed = { (try? TextFile.read(output)) ?? "" }
            let stderr = { (try? TextFile.read(project.dir.path + "/up.err")) ?? "" }
            func soundscape(_ arguments: String...) async throws -> RuntimeFixtures.Output {
                try await RuntimeFixtures.run(
                    VigilExecutable.path, ["soundscape"] + arguments, environment: environment, timeout: 60)
            }

            // Positive signal first: the soundscape plays and takes a change; nothing is reported.
            #expect(
                await RuntimeFixtures.waitUntil(timeout: 60) { printed().contains("soundscape: running") },
                "\(printed())\(stderr())")
            #expect(try await soundscape("volume", "0.4").status == 0)
            #expect(!printed().contains("preferences_error"), "\(printed())")

            try disk.fill()
            let changed = try await soundscape("volume", "0.5")
            #expect(changed.status == 0, "\(changed.stderr)")
            let fault = "soundscape: preferences_error: cannot save the soundscape preferences to \(disk.path)"
            #expect(
                await RuntimeFixtures.waitUntil(timeout: 60) {
                    printed().split(separator: "\n").contains { $0.hasPrefix(fault) && $0.contains("No space left") }
                }, "\(printed())")

            // Room again: the pending choice is saved by the retry, and the output says the fault ended.
            disk.free()
            #expect(
                await RuntimeFixtures.waitUntil(timeout: 60) {
                    printed().contains("soundscape: preferences_error cleared")
                },
                "\(printed())")
            host.signal(SIGTERM)
            #expect(await host.waitForExit(timeout: 30).map(ChildProcess.exitCode(fromWaitStatus:)) == 0)
        }
    }
}
