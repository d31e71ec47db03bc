public import VigilPlugin

/// The `[supervisor]` table of vigil.toml (over the manifest's defaults), validated: the one reader
/// of the supervisor's settings, used by the plugin (to run the workers) and by the checks (to
/// check the workers' commands before anything runs).
public struct SupervisorSettings: Sendable, Equatable {
    /// Timing and limits for every worker.
    public var configuration: SupervisorConfiguration
    /// The workers, in the order of `workers`.
    public var workers: [WorkerSpec]
    /// Whether to show the desktop notification (key `notification`, default true).
    public var notification: Bool

    static let keys: Set<String> = [
        "backoff_initial_ms", "backoff_max_ms", "stable_after_s", "start_limit_burst", "start_limit_interval_s",
        "stop_grace_s", "notification", "workers",
    ]
    static let workerKeys: Set<String> = [
        "name", "command", "args", "env", "working_directory", "restart", "type", "watchdog_sec", "oom_score_adj",
        "failure_action",
    ]

    /// Reads and validates `settings`.
    ///
    /// - Throws: ``PluginError`` (`invalidSetting`) naming the key, with its path inside `workers`.
    public init(_ settings: PluginSettings) throws {
        try settings.refuseUnknownKeys(known: Self.keys)
        let initial = try settings.integer("backoff_initial_ms", default: 100, in: 0...3_600_000)
        let cap = try settings.integer("backoff_max_ms", default: 30_000, in: 0...86_400_000)
        guard cap >= initial else {
            throw settings.invalid(
                "backoff_max_ms",
                "\(cap) is below backoff_initial_ms (\(initial)); the cap must be at least the first delay")
        }
        configuration = SupervisorConfiguration(
            backoffInitial: .milliseconds(initial),
            backoffMax: .milliseconds(cap),
            stableAfter: .milliseconds(
                Int64(try settings.number("stable_after_s", default: 10, in: 0...86_400) * 1000)),
            startLimitBurst: try settings.integer("start_limit_burst", default: 5, in: 0...1_000_000),
            startLimitInterval: .milliseconds(
                Int64(try settings.number("start_limit_interval_s", default: 10, in: 0...86_400) * 1000)),
            stopGrace: .milliseconds(Int64(try settings.number("stop_grace_s", default: 5, in: 0...3600) * 1000)))
        notification = try settings.bool("notification", default: true)

        var workers: [WorkerSpec] = []
        for (index, value) in (try settings.array("workers") ?? []).enumerated() {
            workers.append(try Self.worker(value, at: "workers[\(index)]", in: settings))
        }
        if let problem = WorkerSpec.problem(in: workers) { throw settings.invalid("workers", problem) }
        self.workers = workers
    }

    /// Each entry of `workers` that reads as a worker on its own, with its index: for checks
    /// that report per worker (the commands), where an entry that does not read is skipped — the
    /// supervisor's own validation (``init(_:)``) reports it.
    public static func readableWorkers(in settings: PluginSettings) -> [(index: Int, worker: WorkerSpec)] {
        guard let entries = try? settings.array("workers") else { return [] }
        return entries.enumerated().compactMap { index, value in
            (try? worker(value, at: "workers[\(index)]", in: settings)).map { (index, $0) }
        }
    }

    private static func worker(_ value: SettingValue, at: String, in settings: PluginSettings) throws -> WorkerSpec {
        guard case .table(let table) = value else {
            throw settings.invalid(
                at, "expected a table like { name = \"web\", command = \"/usr/bin/web\" }, found \(value.kindName)")
        }
        // The worker's keys, read by the same reader as top-level settings; its errors name
        // `workers[i].key`.
        let fields = settings.nested(table, at: at)
        func fail(_ key: String, _ reason: String) -> PluginError { fields.invalid(key, reason) }
        try fields.refuseUnknownKeys(known: workerKeys, kind: "worker key")
        guard let name = try fields.string("name") else {
            throw fail("name", "missing; every worker needs a unique name")
        }
        guard let command = try fields.string("command"), !command.isEmpty else {
            throw fail("command", "missing; give the program to run, e.g. command = \"/usr/bin/signerd\"")
        }
        var arguments: [String] = []
        let rawArguments: [SettingValue] = try fields.array("args") ?? []
        for (i, argument) in rawArguments.enumerated() {
            guard case .string(let s) = argument else {
                throw fail("args", "element \(i) is \(argument.kindName) \(argument); arguments must be strings")
            }
            arguments.append(s)
        }
        var environment: [String: String] = [:]
        let rawEnvironment: [String: SettingValue] = try fields.table("env") ?? [:]
        for (key, entry) in rawEnvironment {
            guard case .string(let s) = entry else {
                throw fail("env.\(key)", "expected a string, found \(entry.kindName) \(entry); quote the value")
            }
            environment[key] = s
        }
        let restart = try fields.choice(
            "restart", default: "on-failure", from: WorkerSpec.RestartPolicy.allCases.map(\.rawValue))
        let readiness = try fields.choice(
            "type", default: "simple", from: WorkerSpec.ReadinessType.allCases.map(\.rawValue))
        let failureAction = try fields.choice(
            "failure_action", default: "none", from: WorkerSpec.FailureAction.allCases.map(\.rawValue))
        let watchdog = try fields.number("watchdog_sec")
        if let watchdog, !(watchdog > 0 && watchdog <= 86_400) {
            throw fail("watchdog_sec", "\(watchdog) is out of range; use more than 0 and at most 86400 seconds")
        }
        let oom = try fields.integer("oom_score_adj", in: -1000...1000)
        let directory = try fields.string("working_directory")
        if let directory, !directory.hasPrefix("/") {
            throw fail("working_directory", "\"\(directory)\" is not an absolute path")
        }
        return WorkerSpec(
            name: name, command: command, arguments: arguments, environment: environment,
            workingDirectory: directory, restart: WorkerSpec.RestartPolicy(rawValue: restart)!,
            readiness: WorkerSpec.ReadinessType(rawValue: readiness)!, watchdogSeconds: watchdog,
            oomScoreAdjust: oom, failureAction: WorkerSpec.FailureAction(rawValue: failureAction)!)
    }
}
