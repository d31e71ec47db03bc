import ArgumentParser
import FoundationEssentials
import Logging
import ServiceLifecycle
import UnixSignals
import Vigil
import VigilCheckCommands
import VigilCore
import VigilMetricsExport

#if canImport(Glibc)
import Glibc
#endif

/// `vigil up`: runs the host's plugins in the foreground until SIGINT or SIGTERM.
struct Up: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract: "Load and verify vigil.toml's plugins, keep them alive, and stop them on Ctrl-C or SIGTERM.",
        discussion: """
            Shows a live status line per plugin on a terminal and plain event lines otherwise. A plugin \
            whose environment requirement is missing (no sound server, no session bus) says what it \
            waits for and is re-probed every few seconds. `vigil status` reads the running host's status.
            """)

    @OptionGroup var options: ConfigOption

    @Flag(name: .long, help: "Also log the host's and plugins' messages (info and above) to standard error.")
    var verbose = false

    @Option(name: .long, help: "Seconds between re-probes of plugins waiting for their environment (default 5).")
    var retryInterval: Double = 5

    func validate() throws {
        guard retryInterval >= 0.1, retryInterval <= 3600 else {
            throw ValidationError("--retry-interval must be between 0.1 and 3600 seconds")
        }
    }

    func run() async throws {
        // Plugin state changes are shown by the display below; logs repeat them, so they are opt-in,
        // except in the journal: there the events an operator alerts on (notice and above) are
        // entries of their own, with their MESSAGE_ID (docs/logs.md).
        let level: Logger.Level = verbose ? .info : LogOutput.toJournal ? .notice : .critical
        let identifier = VigilHost.name(configPath: options.config, environment: CLI.environment)
        LoggingSystem.bootstrap { label in
            var handler = LogOutput.handler(label: label, identifier: identifier)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "vigil")
        var hostOptions = VigilHost.Options(environment: CLI.environment)
        hostOptions.retryInterval = .milliseconds(Int(retryInterval * 1000))
        let (metrics, metricsReloads) = UpMetrics.export(options: &hostOptions)
        // A status file that cannot be written is said on the display (logs are opt-in here).
        let (statusProblems, statusProblemSink) = AsyncStream.makeStream(of: String?.self)
        hostOptions.statusFileProblem = { statusProblemSink.yield($0) }
        // A table nothing reads does not stop the host, but the operator must see it (logs are opt-in).
        hostOptions.configurationWarning = { CLI.printErrorLine("warning: \($0)") }
        // The host takes its vigil.toml's lock: a second host on the same file exits 75.
        let host: VigilHost
        do {
            host = try VigilHost(configPath: options.config, options: hostOptions, logger: logger)
        } catch {
            CLI.printErrorLine("error: \(error.message)")
            throw ExitCode(error.exitStatus)
        }
        if let banner = host.unsafePlugins.isEmpty ? nil : CoreBanner.unsafePlugins(host.unsafePlugins) {
            CLI.printError(banner)
        }
        // Output goes through its own thread: a full or closed pipe never holds up a stop.
        let output = OutputWriter()
        let display = StatusDisplay(host: host, live: isatty(1) == 1, output: output, logger: logger)
        await display.header()
        let events = host.events  // subscribe before anything starts
        let displayTask = Task { await display.follow(events) }
        // Puts the status writer's problems on the display; ends when the stream is finished below,
        // once the host stopped (or is cancelled when `run` throws).
        let statusProblemTask = Task { for await problem in statusProblems { await display.statusFile(problem) } }
        defer { statusProblemTask.cancel() }
        let startupTask = Task { await display.releaseStartupCode() }
        defer { startupTask.cancel() }

        // SIGHUP (a closed terminal) stops as gracefully as SIGTERM and Ctrl-C.
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: UpMetrics.services(
                    export: metrics, reconfiguration: metricsReloads, host: host, logger: logger) + [
                        .init(service: host)
                    ],
                gracefulShutdownSignals: [.sigterm, .sigint, .sighup],
                logger: logger))
        do {
            try await group.run()
        } catch {
            displayTask.cancel()
            output.finish(timeout: 1)
            if let failure = error as? MetricsExportError { throw UpMetrics.exit(failure) }
            // No activated plugin can run: 78 (EX_CONFIG), which the shipped units do not restart.
            let refusal = error as? VigilError
            CLI.printErrorLine("error: \(refusal?.message ?? "\(error)")")
            throw ExitCode(refusal?.exitStatus ?? 1)
        }
        statusProblemSink.finish()
        displayTask.cancel()
        _ = await displayTask.value
        await display.footer()
        output.finish(timeout: 1)
    }
}

/// Prints a host's plugins: a live block of status lines on a terminal, plain event lines otherwise.
actor StatusDisplay {
    private let host: VigilHost
    private let live: Bool
    private let output: OutputWriter
    private var renderedLines = 0
    private var lastReason: [String: [String]] = [:]
    private var settled = false
    private var settledWaiters: [CheckedContinuation<Void, Never>] = []
    /// The state line last printed per plugin, in plain output (see ``plainLine(for:)``).
    private var shownState: [String: String] = [:]
    /// The faults last printed per plugin (see ``faults(_:)``).
    private var shownFaults: [String: [String: String]] = [:]

    private let logger: Logger

    init(host: VigilHost, live: Bool, output: OutputWriter, logger: Logger) {
        self.host = host
        self.live = live
        self.output = output
        self.logger = logger
    }

    func header() async {
        let status = await host.status()
        emit(
            "vigil up: host \(status.hostName), pid \(status.pid), config \(status.configPath ?? "-"); "
                + "\(status.plugins.count) plugin\(status.plugins.count == 1 ? "" : "s") — Ctrl-C or SIGTERM stops")
        if let dir = host.runtimeDirectory {
            if let reason = dir.fallbackReason { emit("note: \(reason)") }
            // Said before the first write: whether it succeeds is said when it does not.
            emit("status for `vigil status` goes to \(dir.statusFile(pid: status.pid))")
        }
        for plugin in status.plugins {
            note(plugin)
            faults(plugin)
        }
        if status.plugins.isEmpty { emit("no plugins are activated in vigil.toml (plugins = [...])") }
        render(status)
    }

    func follow(_ events: AsyncStream<HostEvent>) async {
        for await event in events {
            if Task.isCancelled { break }
            let status = await host.status()
            if !settled, StartupCode.settled(status) {
                settled = true
                settledWaiters.forEach { $0.resume() }
                settledWaiters = []
            }
            let plugin = status[plugin: event.plugin]
            if live {
                if let plugin {
                    note(plugin)
                    faults(plugin)
                }
                render(status)
            } else if case .blocked = event.kind, let plugin {
                note(plugin)
            } else {
                if let line = plainLine(for: event) { emit(line) }
                if case .failed(let failure) = event.state {
                    lastReason[event.plugin] = ["\(event.plugin): failed: " + failure.message]
                }
                if event.kind == .stopped { lastReason[event.plugin] = nil }
            }
            if !live, let plugin { faults(plugin) }
        }
    }

    /// Says that the status file cannot be written (`problem`), or that it is written again (nil).
    func statusFile(_ problem: String?) {
        let directory = host.runtimeDirectory?.path ?? "the runtime directory"
        if let problem {
            emit(
                "warning: cannot write the status file for `vigil status`: \(problem) — until it can, "
                    + "`vigil status` shows this host as running with its status unwritten; free space in "
                    + "\(directory) (the host retries by itself)")
        } else {
            emit("note: the status file for `vigil status` is written again")
        }
    }

    /// Returns once no plugin is idle or starting any more (never when no plugin is activated).
    func untilSettled() async {
        if settled { return }
        await withCheckedContinuation { settledWaiters.append($0) }
    }

    /// Once the plugins settled and the host had `StartupCode.delay` to finish what follows
    /// (status writes, the display, first health checks), drops the mappings of the start-up code.
    func releaseStartupCode() async {
        await untilSettled()
        guard (try? await Task.sleep(for: StartupCode.delay)) != nil else { return }
        if let bytes = StartupCode.release() {
            logger.info("released the mappings of \(bytes / 1024) KiB of start-up code")
        } else {
            logger.info("could not release the start-up code's mappings (madvise refused)")
        }
    }

    func footer() async {
        let status = await host.status()
        render(status)
        renderedLines = 0
        emit("vigil up: stopped")
    }

    /// Prints the full reason of a blocked or failed plugin once (status lines are truncated):
    /// a line per unmet requirement, or the failure.
    private func note(_ plugin: PluginStatus) {
        let reason: [String]
        switch plugin.state {
        case .blocked(let unmet):
            reason = unmet.map { "\(plugin.name): \(PluginStateName.phrase(for: $0)): \($0)" }
        case .failed(let failure):
            reason = ["\(plugin.name): failed: " + failure.message]
        default: reason = []
        }
        guard !reason.isEmpty else {
            lastReason[plugin.name] = nil
            return
        }
        guard lastReason[plugin.name] != reason else { return }
        lastReason[plugin.name] = reason
        reason.forEach(emit)
    }

    /// Prints each fault a running plugin names in its details (keys ending in `_error`, such as
    /// the soundscape's `preferences_error`) when it appears or changes, and says when it is gone:
    /// status lines are cut to the terminal's width and plain output shows state changes only, so
    /// a fault would otherwise pass unseen without `--verbose`.
    private func faults(_ plugin: PluginStatus) {
        let now = plugin.details.filter { $0.key.hasSuffix("_error") }
        let before = shownFaults[plugin.name] ?? [:]
        guard now != before else { return }
        for (key, value) in now.sorted(by: { $0.key < $1.key }) where before[key] != value {
            emit("\(plugin.name): \(key): \(value)")
        }
        for key in before.keys.sorted() where now[key] == nil {
            emit("\(plugin.name): \(key) cleared")
        }
        shownFaults[plugin.name] = now.isEmpty ? nil : now
    }

    /// The plain line for `event`, or nil when it only changed a plugin's details (a volume, a
    /// track, a worker's restart count) and its state reads as last printed: a state line is
    /// printed when the state changes, not on every detail.
    private func plainLine(for event: HostEvent) -> String? {
        let state = "\(event.plugin): \(event.state.description)"
        defer { shownState[event.plugin] = state }
        if case .detailsChanged = event.kind, shownState[event.plugin] == state { return nil }
        // The plugin's helper session logged the denial already (one line per denial).
        if case .denied = event.kind { return nil }
        return Self.line(for: event)
    }

    static func line(for event: HostEvent) -> String {
        switch event.kind {
        case .started: "\(event.plugin): running"
        case .stopped: "\(event.plugin): stopped"
        case .failed(let failure):
            "\(event.plugin): failed: " + failure.message
        case .blocked: "\(event.plugin): \(event.state.description)"
        case .interrupted(let reason): "\(event.plugin): interrupted: \(reason)"
        case .resumed: "\(event.plugin): resumed"
        case .resumeFailed(let reason): "\(event.plugin): gave up: \(reason)"
        case .revoked(let failure): "\(event.plugin): revoked: " + failure.message
        case .denied(let denial): "\(event.plugin): \(denial)"
        // The state with its reason (an interruption's, a failure's), never a bare "interrupted".
        case .detailsChanged: "\(event.plugin): \(event.state.description)"
        }
    }

    /// Prints a permanent line (above the live block on a terminal), escaped whole, newlines too:
    /// the host name, a plugin's failure, a worker's exit or a fault's cause can carry text from
    /// vigil.toml, workers, other programs or file names, which must not start a line of its own.
    private func emit(_ text: String) {
        var out = ""
        if live, renderedLines > 0 {
            out += Self.clearBlock(renderedLines)
            renderedLines = 0
        }
        output.write(out + Sanitizer.display(text) + "\n")
    }

    /// Moves to the first column (the terminal may have echoed `^C` after the block) and up
    /// over the live block, and clears to the end of the screen.
    private static func clearBlock(_ lines: Int) -> String {
        "\r\u{1B}[\(lines)A\u{1B}[J"
    }

    /// Redraws the live block: one line per plugin, cut to the terminal width.
    private func render(_ status: HostStatus) {
        guard live else { return }
        var out = renderedLines > 0 ? Self.clearBlock(renderedLines) : "\r\u{1B}[J"
        let width = max(Self.terminalWidth() - 1, 20)
        let nameWidth = status.plugins.map(\.name.count).max() ?? 0
        for plugin in status.plugins {
            let mark =
                switch plugin.state {
                case .running: "\u{1B}[32m●\u{1B}[0m"
                case .interrupted, .blocked, .starting, .stopping: "\u{1B}[33m●\u{1B}[0m"
                case .failed: "\u{1B}[31m●\u{1B}[0m"
                case .idle: "○"
                }
            var text =
                TextFormat.padded(plugin.name, to: nameWidth) + "  "
                + plugin.state.description
            let details = plugin.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(
                separator: " ")
            if !details.isEmpty { text += "  [\(details)]" }
            text = Sanitizer.display(text)
            if text.count > width - 2 { text = String(text.prefix(width - 3)) + "…" }
            out += "\(mark) \(text)\n"
        }
        output.write(out)
        renderedLines = status.plugins.count
    }

    private static func terminalWidth() -> Int {
        var size = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }
}
