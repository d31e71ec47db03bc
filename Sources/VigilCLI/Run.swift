import ArgumentParser
import Dispatch
import Foundation
import Logging
import Vigil
import VigilCore
import VigilSupervisor

/// `vigil run [--config PATH] [--restart POLICY] -- CMD ARGS…`: runs CMD under Vigil's supervisor.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a command under Vigil's supervisor while the host is kept alive.",
        discussion: """
            CMD runs in its own process group and dies with vigil (even on SIGKILL). SIGINT and SIGTERM \
            are forwarded to it (then SIGKILL after the stop grace); SIGHUP, SIGUSR1 and SIGUSR2 are \
            forwarded as they are. vigil exits with CMD's exit status, or 128 + the signal that killed it. \
            CMD gets its own NOTIFY_SOCKET, so a daemon that speaks systemd's notify protocol reports \
            READY=1 and STATUS= to vigil. CMD does not own the terminal: a program that reads from the \
            terminal is stopped by SIGTTIN.
            """)

    enum RestartOption: String, ExpressibleByArgument, CaseIterable {
        case always
        case onFailure = "on-failure"
        case never

        var policy: WorkerSpec.RestartPolicy {
            switch self {
            case .always: .always
            case .onFailure: .onFailure
            case .never: .never
            }
        }
    }

    @OptionGroup var options: ConfigOption

    @Option(help: "When to restart CMD after it exits: always, on-failure or never.")
    var restart: RestartOption = .never

    @Option(help: "Delay before the first restart, in milliseconds; it doubles after each quick failure.")
    var restartDelayMs: Int = 100

    @Option(help: "Upper bound of the restart delay, in milliseconds.")
    var maxRestartDelayMs: Int = 30_000

    @Option(help: "How many starts are allowed within 10 seconds before CMD is marked failed (0: no limit).")
    var startLimitBurst: Int = 5

    @Option(help: "Seconds between the forwarded SIGTERM/SIGINT and SIGKILL.")
    var stopGrace: Double = 5

    @Argument(
        parsing: .postTerminator,
        help: ArgumentHelp("The command to run and its arguments, after `--`.", valueName: "cmd"))
    var command: [String] = []

    func validate() throws {
        guard let program = command.first, !program.isEmpty else {
            throw ValidationError("Give the command to run after `--`, for example: vigil run -- /usr/bin/signerd --port 7000.")
        }
        guard (0...3_600_000).contains(restartDelayMs) else {
            throw ValidationError("--restart-delay-ms must be from 0 to 3600000.")
        }
        guard (restartDelayMs...86_400_000).contains(maxRestartDelayMs) else {
            throw ValidationError("--max-restart-delay-ms must be at least --restart-delay-ms and at most 86400000.")
        }
        guard startLimitBurst >= 0 else { throw ValidationError("--start-limit-burst must be 0 or more.") }
        guard stopGrace >= 0 && stopGrace <= 3600 else {
            throw ValidationError("--stop-grace must be from 0 to 3600 seconds.")
        }
    }

    func run() async throws {
        var logger = Logger(label: "vigil.run", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .notice
        let program = command[0]
        let spec = WorkerSpec(
            name: Self.workerName(for: program), command: program, arguments: Array(command.dropFirst()),
            restart: restart.policy)
        let configuration = SupervisorConfiguration(
            backoffInitial: .milliseconds(restartDelayMs), backoffMax: .milliseconds(maxRestartDelayMs),
            startLimitBurst: startLimitBurst, startLimitInterval: .seconds(10),
            stopGrace: .milliseconds(Int64(stopGrace * 1000)))
        let supervisor = try Supervisor(workers: [spec], configuration: configuration, logger: logger)

        let forwarding = SignalForwarding(supervisor: supervisor)
        defer { forwarding.cancel() }

        // Keep-alive: the activated plugins of vigil.toml (--config, or the nearest one upward) run
        // for as long as CMD is supervised. Without a vigil.toml, CMD runs supervised on its own.
        let host = try await startHost(logger: logger)

        do {
            try await supervisor.start()
        } catch let error as SupervisorError {
            printError("vigil run: \(error.message)")
            await host?.stop()
            throw ExitCode(127)
        }
        let final = await supervisor.waitUntilSettled()
        await supervisor.stop()
        await host?.stop()

        let status = final.first?.lastExit?.shellStatus ?? 0
        if restart != .never, let worker = final.first, worker.state == WorkerState.failed, let reason = worker.reason {
            printError("vigil run: \(worker.name) failed: \(reason)")
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Builds the host from `--config` or the nearest vigil.toml and keeps it alive; reports every
    /// plugin that is not running. Returns nil when there is no vigil.toml and none was asked for.
    private func startHost(logger: Logger) async throws -> VigilHost? {
        let configPath: String?
        do {
            configPath = try options.config ?? HostConfiguration.find(startingAt: FileManager.default.currentDirectoryPath)
        } catch {
            printError("error: \(error)")
            throw ExitCode.failure
        }
        guard let configPath else {
            printError("vigil run: no vigil.toml here or above; running the command without keep-alive plugins")
            return nil
        }
        let host: VigilHost
        do {
            host = try VigilHost(configPath: configPath, logger: logger)
        } catch {
            printError("error: \(error)")
            throw ExitCode.failure
        }
        let status = await host.keepAlive()
        for plugin in status.plugins where plugin.state != .running {
            printError("vigil run: [\(plugin.name)] \(plugin.state)")
        }
        return host
    }

    static func workerName(for program: String) -> String {
        let base = program.split(separator: "/").last.map(String.init) ?? "command"
        let cleaned = String(base.map { $0.isLetter || $0.isNumber || "._-".contains($0) ? $0 : "_" }.prefix(64))
        return cleaned.isEmpty ? "command" : cleaned
    }

    private func printError(_ message: String) {
        CLI.printError(message)
    }
}

/// Forwards SIGINT/SIGTERM (as a stop: signal, grace, SIGKILL) and SIGHUP/SIGUSR1/SIGUSR2 (as is)
/// to the supervised command.
private final class SignalForwarding {
    private let sources: [any DispatchSourceSignal]

    init(supervisor: Supervisor) {
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                if sig == SIGINT || sig == SIGTERM {
                    Task { await supervisor.stop(signal: sig) }
                } else {
                    supervisor.signal(sig)
                }
            }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    func cancel() {
        sources.forEach { $0.cancel() }
    }
}
