import Foundation
import Logging
import Synchronization
import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSoundscape

let quiet = Logger(label: "vigil.test") { _ in SwiftLogNoOpLogHandler() }

/// The manifest's settings defaults (kept in step with manifests/soundscape/plugin.json by a test).
let manifestDefaults: [String: SettingValue] = [
    "soundscape": .string("ocean-waves"), "preset": .string("med"), "volume": .integer(-1),
    "sleep_timer_min": .integer(0),
    "mpris": .bool(true), "control_socket": .bool(true), "device": .string(""), "pulse_server": .string(""),
    "buffer_ms": .integer(1000), "health_check_s": .integer(30), "retry_initial_ms": .integer(100),
    "retry_max_ms": .integer(2000), "retry_budget": .integer(0), "files": .table([:]), "media_role": .string("music"),
]

/// A soundscape plugin on `server`, with its state in `stateDirectory` and the session bus in `bus` (if any).
/// Where a plugin made by ``makePlugin(_:state:bus:_:events:logger:busAddress:)`` serves its
/// control socket: in the runtime directory of `server`'s environment (its `XDG_RUNTIME_DIR`).
func controlSocket(_ server: any SoundServerFixture, state stateDirectory: String) -> String {
    ControlChannel.socketPath(
        runtimeHome: HostEnvironment(variables: server.environment).runtimeHome, plugin: "soundscape",
        stateDirectory: stateDirectory)
}

func makePlugin(
    _ server: any SoundServerFixture, state stateDirectory: String, bus: DBusDaemon? = nil,
    _ overrides: [String: SettingValue] = [:], events: EventRecorder<PluginEvent> = EventRecorder<PluginEvent>(),
    logger: Logger = quiet, busAddress: String? = nil
) throws -> PluginRun {
    var values = overrides
    values["pulse_server"] = .string(server.address)
    values["retry_max_ms"] = values["retry_max_ms"] ?? .integer(500)
    var environment = server.environment
    environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress ?? bus?.address
    if bus == nil { values["mpris"] = .bool(false) }
    let run = PluginRun(reportingTo: events.record)
    let context = PluginContext(
        pluginName: "soundscape", hostName: "plugin-tests",
        settings: PluginSettings(pluginName: "soundscape", defaults: manifestDefaults, overrides: values),
        logger: logger,
        reporter: run.reporter, stateDirectory: stateDirectory,
        environment: HostEnvironment(variables: environment))
    return run.adopt(try SoundscapeKeeper(context: context))
}

/// ``makePlugin(_:state:bus:_:events:logger:)``, started; with the controller it registered.
func startPlugin(
    _ server: any SoundServerFixture, state stateDirectory: String, bus: DBusDaemon? = nil,
    _ overrides: [String: SettingValue] = [:], events: EventRecorder<PluginEvent> = EventRecorder<PluginEvent>(),
    logger: Logger = quiet
) async throws -> (PluginRun, SoundscapeController) {
    let plugin = try makePlugin(server, state: stateDirectory, bus: bus, overrides, events: events, logger: logger)
    try await plugin.start()
    return (plugin, try #require(SoundscapeController.running))
}

/// `plugin`'s details once `condition` holds for them, waiting up to `timeout` seconds; `nil` if
/// it never does (the MPRIS player is published beside the keep-alive, not before start() returns).
func details(
    of plugin: PluginRun, within timeout: Double = 10, where condition: ([String: String]) -> Bool
) async -> [String: String]? {
    let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
    while true {
        let details = await plugin.details()
        if condition(details) { return details }
        if ContinuousClock.now >= deadline { return nil }
        try? await Task.sleep(for: .milliseconds(50))
    }
}

/// Waits up to `timeout` seconds for `condition`.
func eventually(_ timeout: Double = 10, _ condition: () throws -> Bool) async rethrows -> Bool {
    try await RuntimeFixtures.waitUntil(timeout: timeout, condition)
}

/// RMS of a capture's left channel, skipping the first 0.2 s.
func rms(_ samples: [Int16]) -> Double { AudioAnalysis(interleaved: samples, trimSeconds: 0.2).rms }

/// Records the sink's state every 50 ms while `body` runs; returns every state seen.
func sinkStates(_ server: any SoundServerFixture, during body: () async throws -> Void) async rethrows -> Set<String> {
    let seen = Mutex<Set<String>>([])
    let done = Mutex(false)
    let watcher = Thread {
        while !done.withLock({ $0 }) {
            if let state = try? server.sinkState() { seen.withLock { _ = $0.insert(state) } }
            usleep(50_000)
        }
    }
    watcher.start()
    defer { done.withLock { $0 = true } }
    try await body()
    return seen.withLock { $0 }
}
