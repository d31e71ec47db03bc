import ArgumentParser
import FoundationEssentials
import Vigil
import VigilCheckCommands
import VigilCore
import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

/// `vigil reload`: asks the running host of a `vigil.toml` to read it again, through the host's
/// control socket beside its status file, and waits for the outcome.
struct Reload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Make the running host read its vigil.toml again, restarting only what changed.",
        discussion: """
            The host checks the file as at start (every manifest verified again). Plugins added start, \
            plugins removed stop, plugins whose settings or manifest changed restart (the supervisor takes \
            a change to its workers in place: only the changed workers restart), and unchanged ones \
            keep running (the keep-alive stream keeps playing). A configuration that does not check is \
            refused and the host keeps running the previous one. A change to [metrics] is applied (a new \
            listen address is bound before the old one closes). Changes to [host], [announce] or \
            acknowledge_unsafe_plugins need a restart and are refused (reload-needs-restart, naming \
            each key). The host is found in \
            $XDG_RUNTIME_DIR/vigil/ (with --config, the host of that vigil.toml; without it, the only \
            running host). Exit codes: 0 reloaded; 1 no host runs; 2 several hosts run (name one with \
            --config); 3 the host's control socket cannot be reached or its answer is not understood; \
            4 no answer within --timeout, or the host is busy (try again); 65 refused: the new \
            configuration does not check (the message says why; the previous one keeps running); \
            69 the new [metrics] listen address cannot be bound (metrics-listen-failed; the previous one \
            keeps serving); 77 the runtime directory is refused. With --json, one vigil.reload/v1 document whatever happens.
            """)

    @Option(
        name: .long,
        help: "The host to reload: the one started from this vigil.toml. Default: the only running host.",
        completion: .file(extensions: ["toml"]))
    var config: String?

    @Option(name: .long, help: "Seconds to wait for the host to finish the reload.")
    var timeout: Int = 120

    @Flag(name: .long, help: "Print one vigil.reload/v1 JSON document whatever happens.")
    var json = false

    func validate() throws {
        guard (1...3600).contains(timeout) else { throw ValidationError("--timeout must be from 1 to 3600 seconds.") }
    }

    /// Why `vigil reload` did not reload, with its exit code.
    struct Failure: Error {
        var code: String
        var message: String
        var exitCode: Int32
    }

    func run() async throws {
        var pid: Int32?
        var configPath: String?
        let outcome: Result<ReloadReport, Failure>
        switch findHost() {
        case .failure(let failure): outcome = .failure(failure)
        case .success(let host):
            pid = host.pid
            configPath = host.configPath
            outcome = await ask(socket: host.socket)
        }
        if json {
            var error: JSONValue = .null
            if case .failure(let failure) = outcome {
                error = .object([("code", .string(failure.code)), ("message", .string(failure.message))])
            }
            let report = try? outcome.get()
            func names(_ list: [String]?) -> JSONValue { list.map { .array($0.map(JSONValue.string)) } ?? .null }
            CLI.printJSON(
                .object([
                    ("schema", .string("vigil.reload/v1")), ("ok", .bool(report != nil)),
                    ("pid", pid.map { .number(String($0)) } ?? .null),
                    ("config", configPath.map(JSONValue.string) ?? .null),
                    ("added", names(report?.added)), ("removed", names(report?.removed)),
                    ("restarted", names(report?.restarted)), ("reconfigured", names(report?.reconfigured)),
                    ("kept", names(report?.kept)), ("error", error),
                ]))
            print("")
        }
        switch outcome {
        case .success(let report):
            if !json {
                func line(_ what: String, _ names: [String]) -> String {
                    "\(what): " + (names.isEmpty ? "none" : names.joined(separator: ", "))
                }
                CLI.sayLine("reloaded \(configPath ?? "the host") (pid \(pid.map(String.init) ?? "?"))")
                CLI.sayLine(line("  started", report.added))
                CLI.sayLine(line("  stopped", report.removed))
                CLI.sayLine(line("  restarted", report.restarted))
                CLI.sayLine(line("  new settings applied in place", report.reconfigured))
                CLI.sayLine(line("  kept running", report.kept))
            }
        case .failure(let failure):
            if !json {
                let lines = failure.message.split(separator: "\n", omittingEmptySubsequences: false)
                for (index, line) in lines.enumerated() {
                    CLI.printErrorLine(index == 0 ? "error: \(line)" : String(line))
                }
            }
            throw ExitCode(failure.exitCode)
        }
    }

    struct Host {
        var pid: Int32
        var configPath: String?
        var socket: String
    }

    /// The running host to reload: the one of `--config`, else the only one.
    private func findHost() -> Result<Host, Failure> {
        let directory: RuntimeDirectory?
        do {
            directory = try RuntimeDirectory.resolve(environment: CLI.environment.variables, create: false)
        } catch {
            return .failure(
                Failure(code: error.code.rawValue, message: error.message, exitCode: ExitCodes.noPermission))
        }
        var hosts: [Int32: String?] = [:]
        if let directory {
            for case .success(let status) in PublishedHosts.read(from: directory) {
                hosts.updateValue(status.configPath, forKey: status.pid)
            }
            for holder in ConfigLock.holders(in: directory) where hosts[holder.pid] == nil {
                hosts.updateValue(holder.configPath, forKey: holder.pid)
            }
        }
        if let config {
            let wanted = HostConfiguration(path: config, environment: CLI.environment).path
            hosts = hosts.filter { $0.value == wanted }
        }
        guard let directory, let host = hosts.first else {
            return .failure(
                Failure(
                    code: "not-running",
                    message: "no Vigil host is running" + (config.map { " from \($0)" } ?? "")
                        + " — start one with `vigil up`, or see `vigil status`",
                    exitCode: ExitCodes.failure))
        }
        guard hosts.count == 1 else {
            let list = hosts.map { "pid \($0.key) (\($0.value ?? "no vigil.toml"))" }.sorted()
            return .failure(
                Failure(
                    code: "several-hosts",
                    message: "\(hosts.count) Vigil hosts are running: \(list.joined(separator: ", ")) — "
                        + "name the one to reload with --config",
                    exitCode: ExitCodes.unknownState))
        }
        return .success(Host(pid: host.key, configPath: host.value, socket: directory.controlSocket(pid: host.key)))
    }

    /// Sends the reload request and waits (on a thread of its own) for the host's answer.
    private func ask(socket path: String) async -> Result<ReloadReport, Failure> {
        let seconds = Double(timeout)
        return await withCheckedContinuation { continuation in
            KernelThread.start(name: "vigil-reload") {
                continuation.resume(returning: Self.exchange(path, seconds: seconds))
            }
        }
    }

    private static func exchange(_ path: String, seconds: Double) -> Result<ReloadReport, Failure> {
        let deadline = MonotonicClock.seconds() + seconds
        let socket: OwnedDescriptor
        switch LocalSocket.connect(path, until: deadline) {
        case .connected(let connected): socket = connected
        case .nobody:
            return .failure(
                Failure(
                    code: "control-channel",
                    message: "the host's control socket \(path) does not answer — the host may be stopping, or "
                        + "be a Vigil without `vigil reload`; restart it to apply the new configuration",
                    exitCode: ExitCodes.noSoundscape))
        case .queueFull:
            return .failure(
                Failure(
                    code: "busy", message: "the host took no connection on \(path) — try again",
                    exitCode: ExitCodes.busy))
        }
        let request = Array(#"{"command":"reload"}"#.utf8) + [UInt8(ascii: "\n")]
        let line: [UInt8]
        switch LocalSocket.exchange(socket.rawValue, request, limit: 1 << 20, until: deadline) {
        case .line(let answer): line = answer
        case .timedOut:
            return .failure(
                Failure(
                    code: "timed-out",
                    message: "the host did not finish the reload within \(Int(seconds)) s; it goes on with it — "
                        + "see `vigil status`, or wait longer with --timeout",
                    exitCode: ExitCodes.busy))
        case .broken:
            return .failure(
                Failure(
                    code: "control-channel",
                    message: "the host closed its control socket \(path) without an answer (it is stopping?)",
                    exitCode: ExitCodes.noSoundscape))
        }
        guard let response = try? JSONDecoder().decode(HostControlResponse.self, from: Data(line)) else {
            return .failure(
                Failure(
                    code: "control-channel", message: "the host's answer on \(path) is not understood",
                    exitCode: ExitCodes.noSoundscape)
            )
        }
        if let report = response.reload, response.ok { return .success(report) }
        let error = response.error ?? .init(code: "control-channel", message: "the host refused without a reason")
        let exitCode: Int32 =
            switch error.code {
            case VigilError.Code.reloadRefused.rawValue, VigilError.Code.reloadNeedsRestart.rawValue,
                VigilError.Code.reloadUnsupported.rawValue:
                ExitCodes.dataError
            case VigilError.Code.metricsListenFailed.rawValue: ExitCodes.unavailable
            case "busy": ExitCodes.busy
            default: ExitCodes.noSoundscape
            }
        return .failure(Failure(code: error.code, message: error.message, exitCode: exitCode))
    }
}
