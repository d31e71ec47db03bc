import Logging
import VigilCore
import VigilPlugin
import VigilSupervisorEngine

extension PluginState {
    /// True when nothing but a change to `vigil.toml`, a manifest or the trust makes the plugin
    /// run: `failed` because it was refused (signature, trust, rollback, manifest, its shared
    /// library), names an entry this host lacks or has a setting it refuses, or `blocked` by a
    /// declaration the host lacks. Not a plugin waiting for its environment (a sound server, a
    /// session bus: it starts once that appears), nor one whose start failed at run time (out
    /// of descriptors, a worker that could not be spawned): trying again may work.
    var needsConfigurationChange: Bool {
        switch self {
        case .failed(let failure):
            switch failure.code {
            case .refused, .sharedLibrary, .plugin(.invalidSetting), .plugin(.unknownEntry): true
            case .plugin(.startFailed), .plugin(.resumeFailed): false
            }
        case .blocked(let unmet): unmet.contains { $0.requirement.isDeclaration }
        default: false
        }
    }
}

extension HostStatus {
    /// The refusal when no activated plugin can run (each one was refused — signature, trust,
    /// manifest, entry, settings — or is blocked by a missing declaration), with every plugin's
    /// reason; `nil` when one runs, starts or waits for its
    /// environment, or when no plugin is activated (a host for `[announce]` only).
    public var noPluginCanRun: VigilError? {
        guard !plugins.isEmpty, plugins.allSatisfy({ $0.state.needsConfigurationChange }) else { return nil }
        let reasons = plugins.map { "\($0.name) \($0.state.description)" }.joined(separator: "; ")
        return VigilError(
            code: .noPluginCanRun,
            message: "no activated plugin can run, so \(hostName) keeps nothing alive (\(reasons)) — fix what each "
                + "plugin's reason says (`vigil check` lists every problem) and start the host again")
    }

    /// One line for systemd's `STATUS=` (and a supervisor's logs): how many plugins run, and why
    /// each of the others does not; `nil` when every plugin runs (the supervisor plugin's
    /// `STATUS=`, its workers' summary, is then left as it is).
    public var partialSummary: String? {
        let down = plugins.filter { !$0.state.isActive }
        guard !down.isEmpty else { return nil }
        let running = plugins.count - down.count
        let reasons = down.map { "\($0.name) \(Self.shortened($0.state.description))" }
        return "\(hostName): \(running) of \(plugins.count) plugin\(plugins.count == 1 ? "" : "s") running; "
            + reasons.joined(separator: "; ")
    }

    /// `text` cut to 200 characters: a STATUS= line is one line of `systemctl status`.
    private static func shortened(_ text: String) -> String {
        text.count > 200 ? String(text.prefix(199)) + "…" : text
    }
}

extension VigilError {
    /// The exit status a process should end with after this error, from `sysexits.h` (the table
    /// of docs/exit-codes.md): 78 (EX_CONFIG) for a configuration that cannot work, 75
    /// (EX_TEMPFAIL) when another host runs the same `vigil.toml`, 73 (EX_CANTCREAT) when the
    /// runtime directory cannot be used, 74 (EX_IOERR) when a status file cannot be read, 65
    /// (EX_DATAERR) for a reload refused (the new `vigil.toml` does not check, or the host was not
    /// made from one; the host runs on), 69 (EX_UNAVAILABLE) for a reload whose new `[metrics]
    /// listen` could not be bound (the host runs on, serving the previous one).
    public var exitStatus: Int32 {
        switch code {
        case .configuration, .noPluginCanRun: 78
        case .configInUse: 75
        case .runtimeDirectory: 73
        case .statusUnreadable: 74
        case .reloadRefused, .reloadNeedsRestart, .reloadUnsupported: 65
        case .metricsListenFailed: 69
        }
    }
}

extension VigilHost {
    /// Tells the service manager (systemd's `NOTIFY_SOCKET`, when set) how the start went, once it
    /// settled on `status`: when no plugin can run, `STATUS=` with why (the caller then ends the
    /// process, so `Type=notify` never waits for a `READY=1` that cannot come); otherwise
    /// `READY=1` — the supervisor plugin said it already once its workers started, but a host
    /// without it (or whose supervisor failed) would leave systemd waiting — and, when only some
    /// plugins run, `STATUS=` saying which do not and why. The partly-up warning is logged once
    /// per summary until the host is stopped: a library host's `keepAlive()` and its `run()` both
    /// report the same start. Returns the refusal, if any.
    @discardableResult
    package func reportStart(_ status: HostStatus) -> VigilError? {
        let notifier = SystemdNotifier(environment: options.environment.variables)
        if let refusal = status.noPluginCanRun {
            logger.critical("\(refusal.message)")
            notifier?.send(["STATUS=" + Self.statusText(refusal.message)])
            return refusal
        }
        defer { reportedSummary = status.partialSummary }
        if let summary = status.partialSummary {
            if summary != reportedSummary { logger.warning("\(summary)") }
            notifier?.send(["READY=1", "STATUS=" + Self.statusText(summary)])
        } else {
            notifier?.send(["READY=1"])
        }
        return nil
    }

    /// `text` as one `STATUS=` value: at most 1000 characters, each control character (a newline
    /// would end the assignment) and bidirectional override `?` — `systemctl status` shows it on
    /// a terminal, and it quotes plugins' and workers' words.
    private nonisolated static func statusText(_ text: String) -> String {
        Sanitizer.display(String(text.prefix(1000)))
    }
}
