import ArgumentParser
import FoundationEssentials
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals
import Vigil
import VigilCheckCommands
import VigilCore
import VigilPlugin
import VigilSupervisorEngine

#if canImport(Glibc)
import Glibc
#endif

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
            terminal is stopped by SIGTTIN, and vigil says so (redirect its standard input instead).
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
            throw ValidationError(
                "Give the command to run after `--`, for example: vigil run -- /usr/bin/signerd --port 7000.")
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
        let identifier = VigilHost.name(configPath: options.config, environment: CLI.environment)
        var logger = Logger(label: "vigil.run", factory: { LogOutput.handler(label: $0, identifier: identifier) })
        logger.logLevel = .notice
        // A relative path (`./signerd`) names a file in the directory vigil run started in: the
        // spawner resolves relative commands only against a directory it is told (ExecutableLookup).
        let program =
            command[0].contains("/") && !command[0].hasPrefix("/")
            ? CLI.environment.workingDirectory + "/" + command[0] : command[0]
        let spec = WorkerSpec(
            name: Self.workerName(for: program), command: program, arguments: Array(command.dropFirst()),
            restart: restart.policy)
        let configuration = SupervisorConfiguration(
            backoffInitial: .milliseconds(restartDelayMs), backoffMax: .milliseconds(maxRestartDelayMs),
            startLimitBurst: startLimitBurst, startLimitInterval: .seconds(10),
            stopGrace: .milliseconds(Int64(stopGrace * 1000)))
        let events = RunCommandPlugin.Events()
        let supervisor: Supervisor
        do {
            supervisor = try Supervisor(
                workers: [spec], configuration: configuration, environment: CLI.environment.variables, logger: logger,
                onEvent: { _ in events.changed() })
        } catch let error as SupervisorError {
            printError("vigil run: \(error.message)")
            throw ExitCode.failure
        }

        // Keep-alive: the activated plugins of vigil.toml (--config, or the nearest one upward) run
        // for as long as CMD is supervised. Without a vigil.toml, CMD runs supervised on its own.
        // Either way the host publishes CMD's row for `vigil status` (its `run` plugin).
        let host = try makeHost(
            logger: logger, command: RunCommandPlugin.prepared(supervisor: supervisor, events: events))

        // The host and CMD are services of one group; CMD's end stops the group.
        let supervised = SupervisedCommand(supervisor: supervisor, host: host) { message in
            printError(message)
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: host)]
        services.append(
            .init(
                service: supervised, successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup))
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: services, logger: logger))
        do {
            try await group.run()
        } catch let error as SupervisorError {
            printError("vigil run: \(error.message)")
            // 127 as a shell says "command not found"; other set-up refusals are 1.
            throw ExitCode(error.code == .spawnFailed ? ExitCodes.commandNotFound : ExitCodes.failure)
        } catch let error as VigilError {
            // vigil.toml's plugins cannot run (78): CMD was not started.
            printError("vigil run: \(error.message)")
            throw ExitCode(error.exitStatus)
        }

        let final = supervised.outcome
        let status = final?.lastExit?.shellStatus ?? 0
        if let worker = final, worker.state == WorkerState.failed {
            printError(Self.failureMessage(worker, restart: restart))
            throw ExitCode(status != 0 ? status : 1)
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Builds the host from `--config` or the nearest vigil.toml (which takes that file's lock:
    /// exit 75 when another host runs it, 78 when it cannot work), with `command` (CMD's `run`
    /// plugin) after the file's plugins; without a vigil.toml, a host of `command` alone.
    private func makeHost(logger: Logger, command: VigilHost.PreparedPlugin) throws -> VigilHost {
        let configPath: String?
        do {
            configPath =
                try options.config
                ?? HostConfiguration.find(startingAt: CLI.environment.workingDirectory, environment: CLI.environment)
        } catch {
            printError("error: \(error)")
            throw ExitCode(ExitCodes.configuration)
        }
        var hostOptions = VigilHost.Options(environment: CLI.environment)
        do {
            guard let configPath else {
                printError("vigil run: no vigil.toml here or above; running the command without keep-alive plugins")
                // A host only for `vigil status`: its notices (sleep handling off without a system
                // bus) are about plugins it does not run.
                var quiet = logger
                quiet.logLevel = .warning
                return try VigilHost(plugins: [command], hostName: "vigil run", options: hostOptions, logger: quiet)
            }
            hostOptions.additionalPlugins = [command]
            return try VigilHost(configPath: configPath, options: hostOptions, logger: logger)
        } catch {
            printError("error: \(error)")
            throw ExitCode(error.exitStatus)
        }
    }

    /// What `vigil run` says when CMD ended for good with a failure. Under `--restart never` an
    /// exit is just that (the start limit does not apply); otherwise CMD kept failing until the
    /// start limit stopped the restarts.
    static func failureMessage(_ worker: WorkerStatus, restart: RestartOption) -> String {
        if restart == .never, let exit = worker.lastExit {
            return "vigil run: \(worker.name) \(exit); not restarted (--restart never; "
                + "--restart on-failure restarts it after a failure)"
        }
        return "vigil run: \(worker.name) failed: \(worker.reason ?? "") — it keeps exiting: run it by hand to see "
            + "why, or allow more starts with --start-limit-burst (0: no limit) or a longer --restart-delay-ms"
    }

    static func workerName(for program: String) -> String {
        let base = program.split(separator: "/").last.map(String.init) ?? "command"
        let cleaned = String(base.map { $0.isLetter || $0.isNumber || "._-".contains($0) ? $0 : "_" }.prefix(64))
        return cleaned.isEmpty ? "command" : cleaned
    }
}

/// One line of `vigil run`'s own on standard error: it names the command, its worker's exit and
/// the plugins' states, so it is escaped whole (newlines too).
private func printError(_ message: String) {
    CLI.printErrorLine(message)
}

/// `vigil run`'s command as a service: waits for the host's plugins,
/// starts CMD under the supervisor and returns once it settled. Its structured children forward
/// signals: SIGINT and SIGTERM as a stop (signal, grace, SIGKILL), SIGHUP, SIGUSR1 and SIGUSR2
/// as they are.
final class SupervisedCommand: Service, Sendable {
    let supervisor: Supervisor
    let host: VigilHost
    let report: @Sendable (String) -> Void
    private let final = Mutex<WorkerStatus?>(nil)

    init(supervisor: Supervisor, host: VigilHost, report: @escaping @Sendable (String) -> Void) {
        self.supervisor = supervisor
        self.host = host
        self.report = report
    }

    /// CMD's status once it settled.
    var outcome: WorkerStatus? { final.withLock { $0 } }

    func run() async throws {
        // Trap before anything starts, so that no signal is lost or kills vigil meanwhile.
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup, .sigusr1, .sigusr2)
        let status = await host.keepAlive()
        for plugin in status.plugins where plugin.state != .running {
            report("vigil run: [\(plugin.name)] \(plugin.state)")
        }
        // vigil.toml's plugins (not CMD's own row) all fail: a configuration that cannot work.
        let configured = status.plugins.filter { $0.name != RunCommandPlugin.name }
        let own = HostStatus(
            pid: status.pid, hostName: status.hostName, configPath: status.configPath, plugins: configured)
        if let refusal = own.noPluginCanRun { throw refusal }
        try await supervisor.start()
        let supervisor = self.supervisor
        let settled = await withTaskGroup(of: [WorkerStatus]?.self) { group in
            group.addTask {
                for await signal in signals {
                    switch signal {
                    case .sigint, .sigterm: await supervisor.stop(signal: signal.rawValue)
                    default: supervisor.signal(signal.rawValue)
                    }
                }
                return nil
            }
            group.addTask {
                await withGracefulShutdownHandler {
                    await supervisor.waitUntilSettled()
                } onGracefulShutdown: {
                    Task { await supervisor.stop() }
                }
            }
            var result: [WorkerStatus] = []
            while let next = await group.next() {
                if let next {
                    result = next
                    break
                }
            }
            group.cancelAll()
            return result
        }
        await supervisor.stop()
        final.withLock { $0 = settled.first }
    }
}
