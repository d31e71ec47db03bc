// Times one cold `keepAlive()` in this process, for bench/cold-start.sh: config load, verification
// of every activated manifest, host set-up, and keep-alive bring-up until the first audio frame is
// written to the sound server.
//
//   ColdStartBench CONFIG             one run: host_ms (VigilHost(configPath:): vigil.toml loaded,
//                                     every manifest verified), keepalive_ms (keepAlive() until it
//                                     returns), total_ms, and cpu_ms: the CPU time all of the
//                                     process's threads used meanwhile (what a loaded machine
//                                     does not inflate the way it inflates wall-clock time)
//   ColdStartBench CONFIG --phases    the same, after timing config load and each manifest's
//                                     verification on their own first (config_ms, verify_ms.NAME)
//
// "First audio frame written": keepAlive() returns once every plugin's start() has returned, and
// an audio plugin's start() returns once libpulse accepted its first write (PlaybackStream.start).
// The run is only counted when the status confirms it: every plugin `running` and each audio
// plugin's `frames_written` above zero; otherwise it prints why and exits 1.
// Times are CLOCK_MONOTONIC, in milliseconds with three decimals, one `key=value` per line.
import Logging
import Vigil
import VigilCore
import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

func now(_ clock: clockid_t = CLOCK_MONOTONIC) -> UInt64 {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func milliseconds(_ from: UInt64, _ to: UInt64) -> String {
    let micro = (to - from) / 1000
    let fraction = String(micro % 1000)
    return "\(micro / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

func fail(_ message: String, code: Int32 = 1) -> Never {
    let line = Array("ColdStartBench: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(code)
}

let arguments = CommandLine.arguments.dropFirst()
guard let configPath = arguments.first, arguments.count <= 2, arguments.count == 1 || arguments.last == "--phases"
else { fail("usage: ColdStartBench CONFIG [--phases]", code: 64) }
let logger = Logger(label: "cold-start-bench") { _ in SwiftLogNoOpLogHandler() }
// The process environment, read once here as the CLI does.
let environment = HostEnvironment.current

if arguments.last == "--phases" {
    do {
        let start = now()
        let configuration = try HostConfiguration.load(path: configPath, environment: environment)
        print("config_ms=\(milliseconds(start, now()))")
        let loader = try PluginLoader(configuration: configuration, environment: environment)
        for name in configuration.plugins {
            let begin = now()
            _ = try loader.loadOrThrow(name, record: false)
            print("verify_ms.\(name)=\(milliseconds(begin, now()))")
        }
    } catch {
        fail("\(error)")
    }
}

let start = now()
let startCPU = now(CLOCK_PROCESS_CPUTIME_ID)
let host: VigilHost
do {
    host = try VigilHost(configPath: configPath, options: VigilHost.Options(environment: environment), logger: logger)
} catch {
    fail("\(error)")
}
let created = now()
let status = await host.keepAlive()
let running = now()
let runningCPU = now(CLOCK_PROCESS_CPUTIME_ID)
print("host_ms=\(milliseconds(start, created))")
print("keepalive_ms=\(milliseconds(created, running))")
print("total_ms=\(milliseconds(start, running))")
print("cpu_ms=\(milliseconds(startCPU, runningCPU))")
for plugin in status.plugins {
    guard plugin.state == .running else { fail("\(plugin.name) is \(plugin.state), not running") }
    if let frames = plugin.details["frames_written"] {
        guard let count = Int(frames), count > 0 else { fail("\(plugin.name) has written no audio frame yet") }
        print("frames_written.\(plugin.name)=\(count)")
    }
}
await host.stop()
