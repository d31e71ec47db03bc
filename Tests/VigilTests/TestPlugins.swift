import Logging
import Synchronization
import Vigil
import VigilCore
import VigilPlugin

/// Book-keeping shared by the instances of a test plugin: how many exist, how many are started,
/// and any contract violation the host commits (overlapping start/stop, stop without start,
/// two live instances of one plugin).
final class InstanceLedger: Sendable {
    struct Counts: Equatable {
        var made = 0
        var released = 0
        var live = 0
        var maxLive = 0
        var liveByPlugin: [String: Int] = [:]
        var started = 0
        var startCalls = 0
        var stopCalls = 0
        var violations: [String] = []
    }
    private let counts = Mutex(Counts())

    var snapshot: Counts { counts.withLock { $0 } }

    func update(_ body: (inout Counts) -> Void) { counts.withLock { body(&$0) } }
}

/// A small real keep-alive plugin for the host tests: its `run()` "keeps alive" by holding a
/// started flag until cancelled, optionally sleeps while starting and stopping to widen race
/// windows, can be told to fail (throwing before `ready`), and hands its reporter to the test so
/// the test can report interruptions like a real plugin would. The ledger records contract
/// violations: a second `run()` on one instance, overlapping phases, two live instances.
final class LedgerPlugin: KeepAlivePlugin, @unchecked Sendable {
    private let ledger: InstanceLedger
    private let delay: Duration
    private let failStart: Bool
    private let lock = Mutex<(started: Bool, busy: Bool)>((false, false))
    let context: PluginContext

    init(context: PluginContext, ledger: InstanceLedger, delay: Duration, failStart: Bool) {
        self.context = context
        self.ledger = ledger
        self.delay = delay
        self.failStart = failStart
        ledger.update {
            $0.made += 1
            $0.live += 1
            $0.liveByPlugin[context.pluginName, default: 0] += 1
            $0.maxLive = max($0.maxLive, $0.liveByPlugin[context.pluginName]!)
            if $0.liveByPlugin[context.pluginName]! > 1 {
                $0.violations.append("two live instances of \(context.pluginName)")
            }
        }
    }

    deinit {
        ledger.update {
            $0.released += 1
            $0.live -= 1
            $0.liveByPlugin[context.pluginName, default: 0] -= 1
        }
    }

    func run() async throws {
        try await PluginLifetime.run(reporting: context.reporter, start: start, stop: { await self.stop() })
    }

    private func start() async throws {
        let overlapping = lock.withLock { state -> Bool in
            defer { state.busy = true }
            return state.busy || state.started
        }
        if overlapping { ledger.update { $0.violations.append("start on a busy or started instance") } }
        ledger.update { $0.startCalls += 1 }
        if delay > .zero { try? await Task.sleep(for: delay) } else { await Task.yield() }
        lock.withLock { $0.busy = false }
        if failStart {
            throw PluginError.startFailed(
                plugin: context.pluginName, reason: "the test told it to fail — nothing to fix")
        }
        lock.withLock { $0.started = true }
        ledger.update { $0.started += 1 }
    }

    private func stop() async {
        let (wasStarted, wasBusy) = lock.withLock { state -> (Bool, Bool) in
            defer { state.busy = true }
            return (state.started, state.busy)
        }
        if wasBusy { ledger.update { $0.violations.append("stop overlapping another call") } }
        ledger.update { $0.stopCalls += 1 }
        if delay > .zero { try? await Task.sleep(for: delay) } else { await Task.yield() }
        lock.withLock {
            $0.started = false
            $0.busy = false
        }
        if wasStarted { ledger.update { $0.started -= 1 } }
    }

    func details() async -> [String: String] {
        ["mode": (try? context.settings.string("mode")) ?? "none", "host": context.hostName]
    }
}

/// Where the tests reach the reporter of the plugin's current instance.
final class ReporterBox: Sendable {
    private let value = Mutex<PluginReporter?>(nil)
    func set(_ reporter: PluginReporter) { value.withLock { $0 = reporter } }
    func report(_ event: PluginEvent) { value.withLock { $0 }?.report(event) }
}

enum TestPlugins {
    static func implementation(
        entry: String = "ledger", ledger: InstanceLedger, delay: Duration = .zero, failStart: Bool = false,
        reporters: ReporterBox? = nil
    ) -> PluginImplementation {
        PluginImplementation(entry: entry) { context in
            _ = try context.settings.choice("mode", default: "zero", from: ["zero", "sine"])
            reporters?.set(context.reporter)
            return LedgerPlugin(context: context, ledger: ledger, delay: delay, failStart: failStart)
        }
    }

    static func prepared(
        _ name: String, ledger: InstanceLedger, requirements: [HostRequirement] = [], delay: Duration = .zero,
        failStart: Bool = false, settings: [String: SettingValue] = [:], reporters: ReporterBox? = nil
    ) -> VigilHost.PreparedPlugin {
        VigilHost.PreparedPlugin(
            name: name, version: "1.0.0", requirements: requirements,
            settings: PluginSettings(pluginName: name, values: settings),
            implementation: implementation(ledger: ledger, delay: delay, failStart: failStart, reporters: reporters))
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "vigil.tests", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = .critical
        return logger
    }

    static let noPublish = VigilHost.Options(
        publishStatus: false, environment: RequirementChecker.Environment(variables: [:]))
}
