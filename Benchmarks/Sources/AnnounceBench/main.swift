// Plays N short prompts through an Announcer and prints call-to-first-sample latency, duck and
// restore times (median and p90), for bench/announce.sh.
//
//   AnnounceBench SERVER STATE_DIR PROMPTS KEEPALIVE(yes|no) GAP_MS
import Foundation
import Logging
import VigilAnnounce
import VigilAudio

let arguments = CommandLine.arguments
guard arguments.count == 6, let prompts = Int(arguments[3]), let gap = UInt64(arguments[5]) else {
    FileHandle.standardError.write(Data("usage: AnnounceBench SERVER STATE_DIR PROMPTS yes|no GAP_MS\n".utf8))
    exit(64)
}
let server = arguments[1]
let logger = Logger(label: "announce-bench") { _ in SwiftLogNoOpLogHandler() }

var keepAlive: PlaybackStream?
if arguments[4] == "yes" {
    let stream = PlaybackStream(
        configuration: PlaybackConfiguration(
            device: "pulse", pulseServer: server, applicationName: "announce-bench (Vigil keep-alive)"),
        source: ZeroSource(), logger: logger)
    try await stream.start()
    keepAlive = stream
}

let announcer = Announcer(
    settings: AnnounceSettings(pulseServer: server), stateDirectory: arguments[2], logger: logger)
// A short chime-like prompt: 300 ms of a quiet 660 Hz tone.
let prompt = PromptAudio.tone(frequency: 660, seconds: 0.3, amplitude: 0.2)
var firstSample: [Double] = []
var duck: [Double] = []
var restore: [Double] = []
var ducked = 0
for _ in 0..<prompts {
    try await Task.sleep(nanoseconds: gap * 1_000_000)
    let report = try await announcer.announce(.play(prompt))
    firstSample.append(report.firstSampleMilliseconds)
    duck.append(report.duckMilliseconds)
    restore.append(report.restoreMilliseconds)
    ducked = report.ducked.count
}
await keepAlive?.stop()
await announcer.close()

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}
func row(_ name: String, _ values: [Double]) -> String {
    String(
        format: "%@ median %.1f ms p90 %.1f ms max %.1f ms", name, percentile(values, 0.5), percentile(values, 0.9),
        values.max() ?? 0)
}
print(row("first-sample", firstSample))
print(row("duck", duck) + " (streams ducked: \(ducked))")
print(row("restore", restore))
