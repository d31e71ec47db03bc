// A minimal host for bench/silent-engine.sh and the restart-leak test: creates the silent-engine
// plugin directly with a PluginContext, starts it and keeps it running until SIGTERM or SIGINT.
//
//   SilentEngineBench [KEY=VALUE ...]     settings for the [silent-engine] table, for example
//                                         mode=sine pulse_server=unix:/tmp/x/pulse/native
//   SilentEngineBench --idle              the same host without starting the plugin: the
//                                         baseline a Swift host costs by itself
//
// Prints, one per line and flushed: `rss_before_kb=N` (1 s after launch, just before keepAlive), `rss_after_kb=N`
// (1 s after the plugin started), `ready`, then `event interrupted|resumed|resume-failed …` as
// they happen, and `stopped` on exit. Exit 1 if the plugin cannot start, 64 on a bad argument.
import Logging
import VigilPlugin
import VigilSilentEngine

#if canImport(Glibc)
import Glibc
#endif

/// Writes one line to standard output at once (no buffering: a reader waits for it).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// Writes one line to standard error.
func complain(_ line: String) {
    let bytes = Array(("SilentEngineBench: " + line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func residentKilobytes() -> Int {
    guard let file = fopen("/proc/self/status", "r") else { return -1 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("VmRSS:") {
            let fields = text.dropFirst(6).split { $0 == " " || $0 == "\t" || $0 == "\n" }
            return Int(fields.first ?? "") ?? -1
        }
    }
    return -1
}

var values: [String: SettingValue] = [:]
var idle = false
for argument in CommandLine.arguments.dropFirst() {
    if argument == "--idle" {
        idle = true
        continue
    }
    guard let eq = argument.firstIndex(of: "=") else {
        complain("expected KEY=VALUE, got \"\(argument)\"")
        exit(64)
    }
    let key = String(argument[..<eq])
    let raw = String(argument[argument.index(after: eq)...])
    if let i = Int(raw) {
        values[key] = .integer(i)
    } else if let d = Double(raw) {
        values[key] = .double(d)
    } else {
        values[key] = .string(raw)
    }
}

let logger = Logger(label: "silent-engine-bench") { _ in SwiftLogNoOpLogHandler() }
/// Told when the plugin's run() reported ready.
let (readiness, readySignal) = AsyncStream.makeStream(of: Void.self)
let context = PluginContext(
    pluginName: "silent-engine", hostName: "silent-engine-bench",
    settings: PluginSettings(pluginName: "silent-engine", values: values), logger: logger,
    reporter: PluginReporter { event in
        switch event {
        case .ready: readySignal.yield()
        case .interrupted(let reason): say("event interrupted \(reason)")
        case .resumed: say("event resumed")
        case .resumeFailed(let reason): say("event resume-failed \(reason)")
        case .detailsChanged, .denied: break
        }
    },
    stateDirectory: "/tmp", environment: .current)  // this tool's main: the process environment, read once

let plugin: any KeepAlivePlugin
do {
    plugin = try SilentEnginePlugin.implementation.make(context)
} catch {
    complain("\(error)")
    exit(64)
}

// SIGTERM/SIGINT write a byte to a pipe the main thread blocks on (no polling, no wakeups).
var signalPipe: [Int32] = [-1, -1]
guard pipe(&signalPipe) == 0 else {
    complain("cannot create a pipe")
    exit(1)
}
let signalWriteFD = signalPipe[1]
nonisolated(unsafe) var signalWriteFDForHandler: Int32 = -1
signalWriteFDForHandler = signalWriteFD
for sig in [SIGTERM, SIGINT] {
    signal(sig) { _ in
        var byte: UInt8 = 1
        _ = write(signalWriteFDForHandler, &byte, 1)
    }
}

/// Runs the plugin (unless `idle`) as a child task until it is ready, prints the figures and
/// `ready`, and cancels it when a byte arrives on `signalFD`. The work is in a function, not in top-level code: with an async top level, Swift
/// 6.3 never releases a string temporary built there (an interpolated argument), which
/// AddressSanitizer reports as leaked at exit.
@MainActor
func keepRunning(_ plugin: any KeepAlivePlugin, idle: Bool, untilReadable signalFD: Int32) async {
    // Every host has awaited something before it calls keepAlive(): the Swift runtime's executor
    // threads exist by then. Do the same, so that "before" does not count the runtime's warm-up
    // (about 1 MB: libdispatch worker threads and their stacks) as the plugin's cost.
    try? await Task.sleep(nanoseconds: 1_000_000_000)
    say("rss_before_kb=\(residentKilobytes())")
    await withTaskGroup(of: Void.self) { group in
        if !idle {
            group.addTask {
                do {
                    try await plugin.run()
                } catch {
                    complain("\(error)")
                    exit(1)
                }
            }
            for await _ in readiness { break }
        }
        try? await Task.sleep(nanoseconds: 1_000_000_000)
        say("rss_after_kb=\(residentKilobytes())")
        say("ready")
        var byte: UInt8 = 0
        while read(signalFD, &byte, 1) < 0 && errno == EINTR {}
        group.cancelAll()
    }
    say("stopped")
}

await keepRunning(plugin, idle: idle, untilReadable: signalPipe[0])
